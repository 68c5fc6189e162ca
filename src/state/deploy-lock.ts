import { LockFileError, LockHeldError, withFileLock } from '../util/file-lock.js';
import { DeployLockedError, DeploymentStateError } from './errors.js';

// One runner of deployments per state directory: the daemon's deploy step, its outbox flushes and a `deploy` command
// started by hand must never run the same hook or send the same signal at once. Callers in one process queue; another
// process holding the lock is refused (util/file-lock.ts: a flock the kernel drops when its holder ends, so a lock
// left by a killed process never blocks anyone). Here the lock's failures become the state directory's errors.

export async function withDeployLock<T>(file: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await withFileLock(file, fn);
  } catch (err) {
    if (err instanceof LockHeldError) {
      const by = err.holder ? `process ${err.holder.pid}` : 'another process';
      throw new DeployLockedError(
        `deployments are being run by ${by} (lock file ${file}); try again when it has finished`,
        err.holder?.pid,
      );
    }
    if (err instanceof LockFileError)
      throw new DeploymentStateError(`${err.message}; no deployment runs until it can be used`, { cause: err });
    throw err;
  }
}
