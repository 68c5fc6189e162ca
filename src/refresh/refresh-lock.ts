import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { errorMessage } from '../errors.js';
import { LOCKED_EXIT_CODE, RefreshLockedError, RefreshLockError } from './refresh-errors.js';

// The os-refresh-config lock: an exclusive, non-blocking flock() on the lock file, held for the whole run, so that an
// upstream os-refresh-config and this agent exclude each other. Node has no flock(), so flock(1) (util-linux) takes
// it and holds it while a `cat` child waits on a pipe from us: closing the pipe releases it, and if this process
// dies the pipe closes and the lock goes with it, as the kernel drops upstream's lock. The file is truncated after
// locking and on release (upstream's pid line never reached the disk, so the file is always seen empty).

export interface RefreshLock {
  readonly file: string;
  release(): Promise<void>;
}

const READY = 'locked\n';

export async function acquireRefreshLock(file: string): Promise<RefreshLock> {
  // Unlike upstream (a traceback), a missing parent directory is created: under --root it often does not exist yet.
  try {
    await fs.mkdir(path.dirname(file), { recursive: true });
    await (await fs.open(file, 'a')).close();
  } catch (err) {
    throw new RefreshLockError(
      `cannot open the lock file ${file}: ${errorMessage(err)}; check the --lockfile path and its directory's permissions`,
      { cause: err },
    );
  }
  const holder = startFlock(file);
  if (!(await holder.ready)) {
    const code = await holder.exited;
    if (code === LOCKED_EXIT_CODE) throw new RefreshLockedError(file);
    const err = holder.spawnError();
    throw new RefreshLockError(
      err
        ? `cannot run flock(1) to lock ${file}: ${err.message}; install util-linux`
        : `flock(1) could not lock ${file} (exit status ${code ?? 'unknown'})`,
      err ? { cause: err } : undefined,
    );
  }
  await fs.truncate(file, 0).catch(() => undefined);
  let released: Promise<void> | undefined;
  return {
    file,
    release() {
      released ??= (async () => {
        await fs.truncate(file, 0).catch(() => undefined);
        holder.child.stdin.end();
        await holder.exited;
      })();
      return released;
    },
  };
}

interface FlockHolder {
  readonly child: ChildProcessByStdio<Writable, Readable, null>;
  /** Its exit status; null when it could not be started. */
  readonly exited: Promise<number | null>;
  /** True once it holds the lock; false when it ended without. */
  readonly ready: Promise<boolean>;
  spawnError(): Error | undefined;
}

/** flock(1) taking the lock on `file` and holding it while its stdin stays open. */
function startFlock(file: string): FlockHolder {
  const child = spawn(
    'flock',
    [
      '--nonblock',
      '--conflict-exit-code',
      String(LOCKED_EXIT_CODE),
      '--close',
      file,
      'sh',
      '-c',
      `printf '${READY.trim()}\\n'; exec cat >/dev/null`,
    ],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let spawnError: Error | undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', (err) => {
      spawnError = err;
      resolve(null);
    });
    child.once('close', (code) => resolve(code));
  });
  const ready = new Promise<boolean>((resolve) => {
    let seen = '';
    child.stdout.on('data', (c: Buffer) => {
      seen += c.toString('utf8');
      if (seen.includes(READY)) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  return { child, exited, ready, spawnError: () => spawnError };
}
