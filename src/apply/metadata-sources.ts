import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import type { Logger } from '../log/logger.js';
import { jsonDepth, MAX_JSON_DEPTH } from '../util/json-depth.js';
import { deepMerge, isJsonObject, type JsonObject } from '../util/json-merge.js';
import type { PathMapper } from '../util/rooted-path.js';
import { MetadataError } from './apply-errors.js';
import { parsePythonJson } from '../util/python-json-parse.js';

// Which metadata files os-apply-config reads, and how it merges them: the fallback files first (lowest priority),
// then -m files, or else $OS_CONFIG_FILES, or else the JSON list in os_config_files.json; later files win, objects
// merge recursively, everything else replaces. Missing files and empty or non-object documents are skipped.

export const FALLBACK_METADATA: readonly string[] = Object.freeze([
  '/var/cache/heat-cfntools/last_metadata',
  '/var/lib/heat-cfntools/cfn-init-data',
  '/var/lib/cloud/data/cfn-init-data',
]);
export const DEFAULT_OS_CONFIG_FILES = '/var/lib/os-collect-config/os_config_files.json';
export const OLD_OS_CONFIG_FILES = '/var/run/os-collect-config/os_config_files.json';
/** Largest metadata file read (far above anything Heat produces; guards memory). */
export const MAX_METADATA_BYTES = 64 * 1024 * 1024;

export interface MetadataSelection {
  /** Explicit -m files (an empty list counts as not given, as upstream). */
  metadata?: readonly string[] | undefined;
  /** The process environment ($OS_CONFIG_FILES). */
  env: NodeJS.ProcessEnv;
  /** --os-config-files value, or undefined for the default ($OS_CONFIG_FILES_PATH or DEFAULT_OS_CONFIG_FILES). */
  osConfigFiles?: string | undefined;
  paths: PathMapper;
  log: Logger;
}

/** The metadata files chosen by -m / $OS_CONFIG_FILES / os_config_files.json (without the fallback files). */
export async function selectMetadataFiles(sel: MetadataSelection): Promise<string[]> {
  if (sel.metadata && sel.metadata.length > 0) return [...sel.metadata];
  const fromEnv = sel.env.OS_CONFIG_FILES;
  if (fromEnv !== undefined) return fromEnv.split(':');
  const defaultPath = sel.env.OS_CONFIG_FILES_PATH ?? DEFAULT_OS_CONFIG_FILES;
  const listFile = sel.osConfigFiles ?? defaultPath;
  const list = readFileList(sel.paths.map(listFile), listFile);
  if (list.length === 0 && listFile === DEFAULT_OS_CONFIG_FILES) {
    sel.log.warn({ file: OLD_OS_CONFIG_FILES }, 'DEPRECATED: falling back to the old os_config_files.json location');
    return readFileList(sel.paths.map(OLD_OS_CONFIG_FILES), OLD_OS_CONFIG_FILES);
  }
  return list;
}

function readFileList(mapped: string, shown: string): string[] {
  let text: string;
  try {
    text = readFileSync(mapped, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new MetadataError(
      `Could not open ${shown} for reading (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      { cause: err },
    );
  }
  let value: unknown;
  try {
    value = parsePythonJson(text);
  } catch (err) {
    throw new MetadataError(`Could not parse ${shown}: ${(err as Error).message}`, { cause: err });
  }
  if (!Array.isArray(value)) throw new MetadataError(`No list defined in json file: ${shown}`);
  if (!value.every((v) => typeof v === 'string')) throw new MetadataError(`${shown} must be a JSON list of file names`);
  return value as string[];
}

/**
 * Read and deep-merge metadata files in order (later wins). Empty names and missing files are skipped; an unreadable
 * file or invalid JSON is an error; a document that is not an object, or is an empty object, is ignored.
 */
export async function loadMetadata(files: readonly string[]): Promise<Record<string, unknown>> {
  let merged: JsonObject = {};
  for (const file of files) {
    if (file === '') continue;
    const value = readMetadataFile(file);
    if (isJsonObject(value) && Object.keys(value).length > 0) merged = deepMerge(merged, value);
  }
  return merged;
}

// Synchronous, as upstream reads them: the files are read one after another anyway, and a short-lived os-apply-config
// then never starts libuv's thread pool (see config/load.ts). A pipe (-m <(...)) is read as it comes, as before.
function readMetadataFile(file: string): unknown {
  let text: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const st = fstatSync(fd);
      if (st.size > MAX_METADATA_BYTES)
        throw new MetadataError(`metadata file ${file} is ${st.size} bytes, over the ${MAX_METADATA_BYTES}-byte limit`);
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if (err instanceof MetadataError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new MetadataError(`Could not open ${file} for reading (${code ?? String(err)}); check its permissions`, {
      cause: err,
    });
  }
  let value: unknown;
  try {
    value = parsePythonJson(text);
  } catch (err) {
    throw new MetadataError(`Could not parse metadata file: ${file} (${(err as Error).message})`, { cause: err });
  }
  if (jsonDepth(value) > MAX_JSON_DEPTH)
    throw new MetadataError(`metadata file ${file} is nested more than ${MAX_JSON_DEPTH} levels deep`);
  return value;
}
