import { LockFileError, LockHeldError, lockFile } from '../util/file-lock.js';
import { RefreshLockedError, RefreshLockError } from './refresh-errors.js';

// The os-refresh-config lock: an exclusive, non-blocking flock() on the lock file, held for the whole run, so that an
// upstream os-refresh-config and this agent exclude each other (util/file-lock.ts; the kernel drops it when the
// holder dies). The file keeps upstream's format: empty after locking and after release (upstream's pid line never
// reached the disk), mode 0644 when created. Unlike upstream, a symbolic link at the path is refused rather than
// followed and the file it points to truncated, and a missing parent directory is created (under --root it often
// does not exist yet).

export interface RefreshLock {
  readonly file: string;
  release(): Promise<void>;
}

export async function acquireRefreshLock(file: string): Promise<RefreshLock> {
  try {
    return await lockFile(file, { recordOwner: false, fileMode: 0o644, dirMode: 0o755 });
  } catch (err) {
    if (err instanceof LockHeldError) throw new RefreshLockedError(file);
    if (err instanceof LockFileError)
      throw new RefreshLockError(`${err.message}; check the --lockfile path`, { cause: err });
    throw err;
  }
}
