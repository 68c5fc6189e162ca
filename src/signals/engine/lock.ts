import { withDeployLock } from '../../state/deploy-lock.js';
import { DeployLockedError } from '../../state/errors.js';

// Whoever holds a store's lock file may attempt its signals, so a signal is attempted by one process at a time: the
// outbox flushes under the deployment lock (the pass attempts its own signals under it), the cfn-signal queue under
// signals.lock of its own (a hook running for an hour under the deployment lock must not hold up a signal).

export type LockOutcome<T> =
  { readonly ran: true; readonly value: T } | { readonly ran: false; readonly holderPid: number | undefined };

/** Run `fn` holding `file`; when another live process holds it, nothing runs and that process's pid is returned. */
export async function whenLockFree<T>(file: string, fn: () => Promise<T>): Promise<LockOutcome<T>> {
  try {
    return { ran: true, value: await withDeployLock(file, fn) };
  } catch (err) {
    if (err instanceof DeployLockedError) return { ran: false, holderPid: err.holderPid };
    throw err;
  }
}
