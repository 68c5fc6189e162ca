import {
  closeSync,
  fchmodSync,
  constants as fsConstants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../../errors.js';
import type { HookDeployment } from '../contract.js';
import type { HookLog } from './hook-log.js';

// The files a hook writes for its tool (script, manifest, playbook, variables) and reads back from it (outputs). Local
// files of a few kilobytes, made and read with direct calls: through the thread pool each call costs a round trip of
// tens of microseconds, and a script deployment made a dozen of them here (docs/performance.md#per-deployment). The
// functions stay asynchronous for their callers.

/** Creates a directory (and missing parents) only its owner can enter; an existing one is left as it is. */
export async function prepareDir(dir: string): Promise<void> {
  await makeDirs(dir);
}

/**
 * mkdir -p, one level at a time (Node's recursive mkdir retries forever where the kernel answers ENOENT for a
 * directory that exists, as in /proc). Adds the directories it makes to `made`, outermost first.
 */
export async function makeDirs(dir: string, made: string[] = []): Promise<void> {
  const missing: string[] = [];
  for (let d = dir; ; d = path.dirname(d)) {
    try {
      lstatSync(d);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || path.dirname(d) === d) throw err;
      missing.unshift(d);
    }
  }
  for (const d of missing) {
    mkdirSync(d, { mode: 0o700 });
    made.push(d);
  }
}

/**
 * Writes a work file from scratch: truncated (upstream kept stale bytes after a shorter rewrite), with the given mode
 * even when the file existed, and never through a symbolic link planted in its place.
 */
export async function writeWorkFile(file: string, content: string | Uint8Array, mode: number): Promise<void> {
  const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NOFOLLOW;
  const fd = openSync(file, flags, mode);
  try {
    fchmodSync(fd, mode);
    writeFileSync(fd, content);
  } finally {
    closeSync(fd);
  }
}

/** Removes files and directories; one already gone is fine. */
export async function removeFiles(...files: string[]): Promise<void> {
  for (const file of files) rmSync(file, { force: true, recursive: true });
}

/** Removes <outputsDir>/<id>.<anything>: outputs of an earlier run of the same deployment, or of this one once read. */
export async function removeOutputs(outputsDir: string, id: string): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(outputsDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  await removeFiles(...names.filter((n) => n.startsWith(`${id}.`)).map((n) => path.join(outputsDir, n)));
}

/**
 * The declared outputs the tool wrote as <outputsPath>.<name> (whole file content); missing files are skipped. A name
 * with a "/" would read outside the outputs directory, so it is skipped too.
 */
export async function readOutputs(
  deployment: HookDeployment,
  outputsPath: string,
  log: HookLog,
): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const { name } of deployment.outputs) {
    if (name === '' || name.includes('/') || name.includes('\0')) {
      log.warn('output name cannot be a file name; not read', { output: JSON.stringify(name) });
      continue;
    }
    try {
      const value = readOutputFile(`${outputsPath}.${name}`);
      Object.defineProperty(found, name, { value, enumerable: true, writable: true, configurable: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        log.warn('output could not be read', { output: name, reason: errorMessage(err) });
    }
  }
  return found;
}

/**
 * An output is read only up to this size. Heat takes a signal of at most 1 MiB (max_json_body_size), so a larger
 * output reaches it only cut down to its end (heat/signal-body.ts); one of this size in memory would only put the
 * agent at risk.
 */
export const OUTPUT_FILE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * An output file's text. Opened without blocking and read only when it is a regular file of at most
 * OUTPUT_FILE_MAX_BYTES: a tool that left a FIFO under an output's name would otherwise hold the read, and the agent,
 * until something wrote to it, and a huge file would fill the agent's memory.
 */
export function readOutputFile(file: string): string {
  const fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`${file} is not a regular file`);
    if (st.size > OUTPUT_FILE_MAX_BYTES)
      throw new Error(`${file} is ${st.size} bytes, over the ${OUTPUT_FILE_MAX_BYTES}-byte limit of an output`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
