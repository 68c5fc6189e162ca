import fsSync, { promises as fs } from 'node:fs';
import path from 'node:path';

export interface AtomicWriteOptions {
  /** Permission bits of the new file (default 0600: most of what the agent writes holds credentials). */
  mode?: number;
  uid?: number;
  gid?: number;
  /** Create missing parent directories with this mode (default: do not create). */
  mkdirMode?: number;
  /**
   * fsync the directory after the rename (default true). A caller writing many files into few directories passes
   * false and calls syncDirectory() once per directory after the last rename.
   */
  syncDirectory?: boolean;
}

/**
 * Files up to this size (characters of a string, bytes of a buffer) are written with direct calls. Made through
 * libuv's thread pool, the ten calls of one write cost ~0.45 ms of CPU in round trips, against ~0.04 ms made
 * directly, and the agent's state files (a deployment's record, its deployed and notify files) are a few hundred bytes
 * each, written several times per deployment (docs/performance.md). The event loop then waits for the fsync itself
 * (~0.5 ms on a virtual disk), as the caller does anyway. Larger files (a big document's cache, a support bundle) keep
 * the loop free while their data reaches the disk.
 */
export const DIRECT_WRITE_MAX_SIZE = 64 * 1024;

/**
 * What a file is written from: its whole content, or a stream of it (a decompressed archive member: the content need
 * not fit in memory).
 */
export type FileContent = string | Uint8Array | AsyncIterable<Uint8Array>;

// Temp file in the same directory, write, fsync, chmod/chown, rename, fsync the directory: a reader sees the old
// file or the new one, never a torn one, and a power cut after return keeps the new one. The temp file is removed
// if any step fails (a stream that errors included), so a full disk leaves no debris.
export async function writeFileAtomic(
  target: string,
  data: FileContent,
  options: AtomicWriteOptions = {},
): Promise<void> {
  if (isSmall(data)) {
    writeSmallFileAtomic(target, data, options);
    return;
  }
  const staged = await stageFileAtomic(target, data, options);
  await staged.commit();
}

function isSmall(data: FileContent): data is string | Uint8Array {
  if (typeof data === 'string') return data.length <= DIRECT_WRITE_MAX_SIZE;
  return data instanceof Uint8Array && data.byteLength <= DIRECT_WRITE_MAX_SIZE;
}

/** writeFileAtomic's steps made directly, for a small file. Called through `fsSync.` so fault tests can intercept. */
function writeSmallFileAtomic(target: string, data: string | Uint8Array, options: AtomicWriteOptions): void {
  const dir = path.dirname(target);
  if (options.mkdirMode !== undefined) fsSync.mkdirSync(dir, { recursive: true, mode: options.mkdirMode });
  const tmp = tempPathFor(target);
  const mode = options.mode ?? 0o600;
  let fd: number | undefined;
  try {
    fd = fsSync.openSync(tmp, 'wx', mode);
    fsSync.writeFileSync(fd, data);
    fsSync.fsyncSync(fd);
    // As in stageFileAtomic: chown before chmod, which then sets the setuid/setgid bits chown cleared.
    if (options.uid !== undefined || options.gid !== undefined) {
      fsSync.fchownSync(fd, options.uid ?? -1, options.gid ?? -1);
    }
    fsSync.fchmodSync(fd, mode);
    fsSync.closeSync(fd);
    fd = undefined;
    fsSync.renameSync(tmp, target);
  } catch (err) {
    if (fd !== undefined) closeQuietly(fd);
    try {
      fsSync.rmSync(tmp, { force: true });
    } catch {
      // The error that matters is the write's.
    }
    throw err;
  }
  if (options.syncDirectory !== false) fsyncPathNow(dir);
}

/** A written temp file waiting to replace its target. */
export interface StagedFile {
  readonly target: string;
  /** Renames the temp file over the target (then fsyncs the directory unless told not to); removes it on failure. */
  commit(): Promise<void>;
  /** Removes the temp file; the target is left as it was. */
  discard(): Promise<void>;
}

/**
 * The first half of writeFileAtomic: the temp file is written, synced and given its mode, but not yet renamed. A
 * caller replacing several files stages them all, then commits them all, so a failure while writing any (a full disk,
 * a directory it may not write) leaves every target as it was.
 */
export async function stageFileAtomic(
  target: string,
  data: FileContent,
  options: AtomicWriteOptions = {},
): Promise<StagedFile> {
  const dir = path.dirname(target);
  if (options.mkdirMode !== undefined) await fs.mkdir(dir, { recursive: true, mode: options.mkdirMode });
  const tmp = tempPathFor(target);
  const mode = options.mode ?? 0o600;
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(tmp, 'wx', mode);
    await writeAll(handle, data);
    await handle.sync();
    // chown first: it clears setuid/setgid bits, which the chmod after it then sets. open() honours the umask; chmod
    // makes the mode exact.
    if (options.uid !== undefined || options.gid !== undefined) {
      await handle.chown(options.uid ?? -1, options.gid ?? -1);
    }
    await handle.chmod(mode);
    await handle.close();
    handle = undefined;
  } catch (err) {
    if (handle) await handle.close().catch(() => undefined);
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  const discard = () => fs.rm(tmp, { force: true }).catch(() => undefined);
  return {
    target,
    async commit() {
      try {
        await fs.rename(tmp, target);
      } catch (err) {
        await discard();
        throw err;
      }
      if (options.syncDirectory !== false) await syncDirectory(dir);
    },
    discard,
  };
}

async function writeAll(handle: fs.FileHandle, data: FileContent): Promise<void> {
  if (typeof data === 'string' || data instanceof Uint8Array) return handle.writeFile(data);
  for await (const chunk of data) {
    let written = 0;
    while (written < chunk.byteLength) written += (await handle.write(chunk, written)).bytesWritten;
  }
}

/** How many temp files writeFilesAtomic writes and syncs at once: enough for the journal to commit them together. */
const STAGE_CONCURRENCY = 32;

/**
 * Several files made durable together: every temp file is written and fsynced (concurrently, so the filesystem's
 * journal commits them in few transactions), then renamed over its target in the order given, then each directory
 * is fsynced once. A failure while staging leaves every target as it was; one while renaming leaves the earlier
 * targets replaced, the later ones as they were. Either way the error is thrown and no temp file is left. Each
 * target is old or new at every instant, as with writeFileAtomic; a caller that needs one file on disk before
 * another is renamed writes them in two calls.
 */
export async function writeFilesAtomic(
  files: readonly { readonly target: string; readonly data: string | Uint8Array }[],
  options: Omit<AtomicWriteOptions, 'syncDirectory'> = {},
): Promise<void> {
  const staged: StagedFile[] = [];
  let failure: unknown;
  for (let i = 0; i < files.length && failure === undefined; i += STAGE_CONCURRENCY) {
    const chunk = files.slice(i, i + STAGE_CONCURRENCY);
    const results = await Promise.allSettled(
      chunk.map((f) => stageFileAtomic(f.target, f.data, { ...options, syncDirectory: false })),
    );
    for (const r of results) {
      if (r.status === 'fulfilled') staged.push(r.value);
      else failure ??= r.reason;
    }
  }
  if (failure !== undefined) {
    await Promise.all(staged.map((s) => s.discard()));
    throw failure;
  }
  const dirs = new Set<string>();
  try {
    for (const [i, s] of staged.entries()) {
      try {
        await s.commit();
      } catch (err) {
        await Promise.all(staged.slice(i + 1).map((rest) => rest.discard()));
        throw err;
      }
      dirs.add(path.dirname(s.target));
    }
  } finally {
    for (const dir of dirs) await syncDirectory(dir);
  }
}

let tempCounter = 0;
// One random part per process: with the pid and the counter it keeps names apart from a dead process's leftovers.
const tempNonce = Math.floor(Math.random() * 0x100000000).toString(16);

/**
 * A fresh temp file name beside `target`. It need not be unguessable: temp files are opened with O_EXCL, which fails
 * on any existing name or symlink instead of following it. (Not from the crypto module: loading it costs every
 * short-lived command several milliseconds.)
 */
export function tempPathFor(target: string): string {
  tempCounter = (tempCounter + 1) % 0x7fffffff;
  const slash = target.lastIndexOf('/');
  return `${target.slice(0, slash + 1)}.${target.slice(slash + 1)}.tmp-${process.pid}-${tempCounter}-${tempNonce}`;
}

/** fsync a directory, so the renames done in it survive a power cut. */
export async function syncDirectory(dir: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(dir, 'r');
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * fsync of a file or a directory made directly, not through the thread pool. A directory the filesystem refuses to
 * fsync is not an error: a rename in it is still atomic there.
 */
export function fsyncPathNow(p: string): void {
  let fd: number | undefined;
  try {
    fd = fsSync.openSync(p, 'r');
    fsSync.fsyncSync(fd);
  } catch (err) {
    if (!fsSync.statSync(p, { throwIfNoEntry: false })?.isDirectory()) throw err;
  } finally {
    if (fd !== undefined) fsSync.closeSync(fd);
  }
}

function closeQuietly(fd: number): void {
  try {
    fsSync.closeSync(fd);
  } catch {
    // Already closed, or the close failed: nothing is left to undo.
  }
}

/** Read a file, or undefined when it does not exist. Other errors propagate. */
export async function readFileIfExists(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
