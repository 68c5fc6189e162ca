import { pythonJsonDumps } from '../util/python-json.js';
import { parsePythonJson } from '../util/python-json-parse.js';
import { lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { syncDirectory, writeFileAtomic } from '../util/atomic-write.js';
import { readCappedFile } from '../util/read-json-file.js';
import type { PathMapper } from '../util/rooted-path.js';
import { isSafeFileName } from '../util/safe-name.js';
import { CfnMetadataError } from './cfn-errors.js';
import { cfnPath } from './cfn-paths.js';

// heat-cfntools' copies of the metadata: /var/cache/heat-cfntools/last_metadata (the last read, whatever the resource)
// and last_metadata_<resource> (per resource). cfn-init reads them when it has no credentials (then the boot data,
// cfn-init-data), writes both after every read, and cfn-hup compares the next read with them. Files 0600 in a 0700
// directory: metadata can hold credentials.

const MAX_METADATA_BYTES = 16 * 1024 * 1024;

export interface LocalMetadata {
  /** The file's text, not yet parsed. */
  readonly text: string;
  /** The file as the instance names it. */
  readonly file: string;
}

/** last_metadata_<resource> (with a resource), then last_metadata, then cfn-init-data: the first that can be read. */
export async function readLocalMetadata(paths: PathMapper, resource?: string): Promise<LocalMetadata | undefined> {
  for (const file of localCopies(paths, resource)) {
    const text = await readSmall(file);
    if (text !== undefined) return { text, file: paths.unmap(file) };
  }
  return undefined;
}

/**
 * The metadata last saved for the resource (its own copy, else the shared one), parsed; undefined when there is none
 * or it is not JSON (a change is then judged against nothing).
 */
export async function readBaseline(paths: PathMapper, resource: string): Promise<unknown> {
  for (const file of localCopies(paths, resource).slice(0, 2)) {
    const text = await readSmall(file);
    if (text === undefined) continue;
    try {
      return parsePythonJson(text);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Saves the metadata as last_metadata and, for a resource, last_metadata_<resource> too. A copy that already holds
 * exactly this text, as a 0600 file, is left as it is: a cfn-hup check that found no change writes nothing.
 */
export async function saveMetadata(paths: PathMapper, metadata: unknown, resource?: string): Promise<void> {
  const shared = cfnPath(paths, 'lastMetadata');
  await mkdir(path.dirname(shared), { recursive: true, mode: 0o700 });
  // As heat-cfntools writes it (json.dumps): exact numbers, NaN and Infinity kept.
  const text = pythonJsonDumps(metadata);
  let written = false;
  for (const file of [shared, ...(resource !== undefined ? [ownCopy(paths, resource)] : [])]) {
    if (await holds(file, text)) continue;
    await writeFileAtomic(file, text, { mode: 0o600, syncDirectory: false });
    written = true;
  }
  // Both copies are in one directory: one fsync of it keeps both renames.
  if (written) await syncDirectory(path.dirname(shared));
}

/** `file` is a 0600 regular file whose content is `text`. */
async function holds(file: string, text: string): Promise<boolean> {
  const found = await lstat(file).catch(() => undefined);
  if (!found?.isFile() || (found.mode & 0o777) !== 0o600 || found.size !== Buffer.byteLength(text)) return false;
  return (await readSmall(file)) === text;
}

function localCopies(paths: PathMapper, resource: string | undefined): string[] {
  const shared = cfnPath(paths, 'lastMetadata');
  return [...(resource !== undefined ? [ownCopy(paths, resource)] : []), shared, cfnPath(paths, 'initData')];
}

function ownCopy(paths: PathMapper, resource: string): string {
  const name = `last_metadata_${resource}`;
  if (!isSafeFileName(name))
    throw new CfnMetadataError(`the resource name ${JSON.stringify(resource)} cannot be part of a file name`);
  return path.join(path.dirname(cfnPath(paths, 'lastMetadata')), name);
}

/** A regular file's text up to the cap; anything else (missing, a FIFO, a device, too large) is no copy. */
async function readSmall(file: string): Promise<string | undefined> {
  const read = await readCappedFile(file, MAX_METADATA_BYTES);
  return read.ok ? read.bytes.toString('utf8') : undefined;
}
