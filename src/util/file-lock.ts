import { constants as fsConstants, promises as fs } from 'node:fs';
import path from 'node:path';
import { AgentError, errorMessage } from '../errors.js';
import { runProcess } from './process-group.js';
import { TrustCheck } from './trust.js';
import { currentIdentity, formatIdentity, isRunning, parseIdentity, type ProcessIdentity } from './process-identity.js';

// The agent's locks across processes (deployments, queued signals, os-refresh-config's phases, the daemon itself) are
// flock(2) locks on an open descriptor. The kernel drops such a lock when its holder ends, however it ends (SIGKILL,
// the OOM killer, a power cut: nothing of the lock is on disk), so no lock is ever stale and no pid is ever trusted
// to still mean its holder. Node has no flock(), so flock(1) (util-linux) takes the lock on our descriptor, handed to
// it as its fd 3: a flock belongs to the open file, which stays ours when flock(1) exits.
//
// The file is opened without following a symbolic link (O_NOFOLLOW), must be a regular file with one link owned by
// root or the agent's user, in a directory the trust rule accepts (util/trust.ts), and is only ever written through a
// descriptor opened the same way onto that same file: whoever can plant a link at the path cannot make the agent empty
// another file. It is never removed either, or a process that had opened the old file would hold a lock nobody else
// sees. The holder writes its identity (pid, start time, boot id) into the file so that a refused caller can name it;
// the lock, never that line, decides.

/** flock(1)'s exit status for "held by another" (Linux EAGAIN, as upstream os-refresh-config exits). */
const HELD_EXIT_CODE = 11;
/** flock(1) returns at once with --nonblock; this only bounds a machine too loaded to run it. */
const FLOCK_TIMEOUT_MS = 30_000;

/** Another process (or another caller in this one) holds the lock. */
export class LockHeldError extends AgentError {
  override name = 'LockHeldError';
  constructor(
    readonly file: string,
    /** The holder, when its line in the file names a process that is running. */
    readonly holder: ProcessIdentity | undefined,
  ) {
    super(
      'ERR_LOCKED',
      `${file} is locked by ${holder ? `process ${holder.pid}` : 'another process'}; try again when it has finished`,
    );
  }
}

/** The lock file cannot be used at all: its directory, a symbolic link or another kind of file there, no flock(1). */
export class LockFileError extends AgentError {
  override name = 'LockFileError';
  constructor(
    readonly file: string,
    readonly problem: string,
    options?: { cause?: unknown },
  ) {
    super('ERR_LOCKED', `cannot use the lock file ${file}: ${problem}`, options);
  }
}

export interface LockOptions {
  /** Write the holder's identity into the file (default true). os-refresh-config's lock stays empty, as upstream's. */
  readonly recordOwner?: boolean;
  /** Mode of a new lock file (default 0600). */
  readonly fileMode?: number;
  /** Mode of the directories made for it (default 0700). */
  readonly dirMode?: number;
}

export interface FileLock {
  readonly file: string;
  /** Empties the file and lets the lock go; a second call does nothing. */
  release(): Promise<void>;
}

/** Takes the lock now or throws LockHeldError (held) or LockFileError (unusable). */
export async function lockFile(file: string, options: LockOptions = {}): Promise<FileLock> {
  const handle = await openLockFile(file, options);
  try {
    await flockOrThrow(file, handle);
    const line = options.recordOwner === false ? '' : `${formatIdentity(currentIdentity())}\n`;
    await rewrite(file, handle, line);
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
  let released: Promise<void> | undefined;
  return {
    file,
    release() {
      released ??= rewrite(file, handle, '').then(() => handle.close());
      return released;
    },
  };
}

const queues = new Map<string, Promise<void>>();

/**
 * Runs `fn` holding the lock. Callers in this process queue for it (a flock conflicts between two descriptors of one
 * process too); another process holding it makes this throw LockHeldError at once.
 */
export async function withFileLock<T>(file: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const previous = queues.get(file) ?? Promise.resolve();
  let done!: () => void;
  const mine = new Promise<void>((resolve) => {
    done = resolve;
  });
  const tail = previous.then(() => mine);
  queues.set(file, tail);
  await previous;
  try {
    const lock = await lockFile(file, options);
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  } finally {
    done();
    if (queues.get(file) === tail) queues.delete(file);
  }
}

async function openLockFile(file: string, options: LockOptions): Promise<fs.FileHandle> {
  try {
    await fs.mkdir(path.dirname(file), { recursive: true, mode: options.dirMode ?? 0o700 });
  } catch (err) {
    throw new LockFileError(file, `its directory cannot be created (${errorMessage(err)})`, { cause: err });
  }
  // Whoever can write the directory could replace the file, and two processes would each hold a lock on their own.
  new TrustCheck().require(path.dirname(file));
  let handle: fs.FileHandle;
  try {
    // Held read-only: a descriptor open for writing for a daemon's whole life would keep its file system from being
    // remounted read-only. The holder's line is written through a descriptor of its own (rewrite()).
    const flags = fsConstants.O_RDONLY | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;
    handle = await fs.open(file, flags, options.fileMode ?? 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new LockFileError(
      file,
      code === 'ELOOP'
        ? 'it is a symbolic link, which a lock file never follows; remove the link'
        : `it cannot be opened (${errorMessage(err)}); check the path and its directory's permissions`,
      { cause: err },
    );
  }
  const problem = await unusable(handle);
  if (problem !== undefined) {
    await handle.close().catch(() => undefined);
    throw new LockFileError(file, `${problem}; remove it`);
  }
  return handle;
}

/**
 * Replaces the lock file's text with `line` through a write descriptor opened for that moment, on the same file as the
 * held one (never through a link, never another file put at the path). Written before cutting, so a reader never sees
 * an empty file while the lock is held. A failure (a full disk, a read-only file system) only leaves the holder
 * unnamed, or its line behind, which the lock, not the line, decides on.
 */
async function rewrite(file: string, held: fs.FileHandle, line: string): Promise<void> {
  const handle = await fs
    .open(file, fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK)
    .catch(() => undefined);
  if (!handle) return;
  try {
    const [now, ours] = await Promise.all([handle.stat(), held.stat()]);
    if (now.ino !== ours.ino || now.dev !== ours.dev) return;
    await handle.write(line, 0);
    await handle.truncate(Buffer.byteLength(line));
  } catch {
    // As above: the line is a courtesy.
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Why an opened file must not be used as a lock (and truncated): not a plain file of root's or the agent's. */
async function unusable(handle: fs.FileHandle): Promise<string | undefined> {
  const st = await handle.stat();
  if (!st.isFile()) return 'it is not a regular file';
  if (st.nlink > 1) return `it has ${st.nlink} hard links, so it may be another file too`;
  const me = process.getuid?.() ?? 0;
  if (st.uid !== 0 && st.uid !== me) return `it is owned by user ${st.uid}, not by root or the agent's user`;
  return undefined;
}

async function flockOrThrow(file: string, handle: fs.FileHandle): Promise<void> {
  const run = await runProcess({
    file: 'flock',
    args: ['--nonblock', '--conflict-exit-code', String(HELD_EXIT_CODE), '3'],
    passFds: [handle.fd],
    ownGroup: false,
    unobserved: true,
    timeoutMs: FLOCK_TIMEOUT_MS,
  });
  if (run.exitCode === 0) return;
  if (run.exitCode === HELD_EXIT_CODE) throw new LockHeldError(file, await holderOf(handle));
  if (run.spawnError)
    throw new LockFileError(file, `flock(1) cannot be run (${run.spawnError.message}); install util-linux`);
  throw new LockFileError(
    file,
    `flock(1) failed (${run.timedOut ? 'timed out' : `exit status ${run.exitCode ?? run.signal}`}): ${run.stderr.trim()}`,
  );
}

/** The holder named in the file, when that process is running. */
async function holderOf(handle: fs.FileHandle): Promise<ProcessIdentity | undefined> {
  const buf = Buffer.alloc(256);
  const { bytesRead } = await handle.read(buf, 0, buf.length, 0).catch(() => ({ bytesRead: 0 }));
  const holder = parseIdentity(buf.subarray(0, bytesRead).toString('utf8'));
  return holder && isRunning(holder) ? holder : undefined;
}
