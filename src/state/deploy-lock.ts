import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DeployLockedError, stateError } from './errors.js';

// One runner of deployments per state directory: the daemon's deploy step, its outbox flushes and a `deploy` command
// started by hand must never run the same hook or send the same signal at once. Within a process callers queue; across
// processes a lock file holds the owner's pid, and a lock left by a dead process (SIGKILL, power cut) is taken over.

const tails = new Map<string, Promise<void>>();

export async function withDeployLock<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const previous = tails.get(file) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = previous.then(() => mine);
  tails.set(file, tail);
  await previous;
  try {
    await lockFile(file);
    try {
      return await fn();
    } finally {
      await fs.rm(file, { force: true }).catch(() => undefined);
    }
  } finally {
    release();
    if (tails.get(file) === tail) tails.delete(file);
  }
}

async function lockFile(file: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 }).catch((err: unknown) => {
    throw stateError('create the directory', path.dirname(file), err);
  });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await fs.open(file, 'wx', 0o600);
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        // Closed even when the write fails (full disk): the empty lock file left behind is taken over later.
        await handle.close();
      }
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw stateError('create the lock file', file, err);
    }
    const holder = Number.parseInt((await fs.readFile(file, 'utf8').catch(() => '')).trim(), 10);
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
      throw new DeployLockedError(
        `deployments are being run by process ${holder} (lock file ${file}); try again when it has finished`,
        holder,
      );
    }
    // Left behind by a process that no longer exists (or by this pid in an earlier life): take it over.
    await fs.rm(file, { force: true }).catch(() => undefined);
  }
  throw stateError('take over the lock file', file, new Error('it keeps reappearing'));
}

/** Whether a process with this pid exists (one of another user's counts). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
