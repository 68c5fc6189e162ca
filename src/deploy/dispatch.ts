import { DeployLockedError } from '../state/errors.js';
import { withDeployLock } from '../state/deploy-lock.js';
import { wishForLock, withdrawWish } from '../state/lock-wish.js';
import { deployLockFile, type DeploymentRecord } from '../state/store.js';
import { settleApplied, type CycleOutcome, type SettleReport } from './apply-group.js';
import { depsFor, type DeployContext } from './context.js';
import { has } from './effects.js';
import { forget, rerun } from './operator.js';
import { runPass, type DeployReport } from './pass.js';

// The deployment runner's entry points, each under the deploy lock (one pass at a time per state directory): the
// pass over Heat's deployments (pass.ts), the end of a cycle for the os-apply-config group (apply-group.ts), and the
// operator's commands (operator.ts).

export { MAX_HOOK_STARTS } from '../state/decide.js';
export type { CycleOutcome, SettleReport } from './apply-group.js';
export type { DeployContext } from './context.js';
export type { DeployFailure } from './effects.js';
export type { DeployReport } from './pass.js';

export function runDeployments(ctx: DeployContext): Promise<DeployReport> {
  return withDeployLock(deployLockFile(ctx.config), () => runPass(depsFor(ctx)));
}

/** A pass started by hand (`deploy`): it waits up to `lockWaitMs` for the daemon's pass or re-runs, as --rerun does. */
export function runDeploymentsByHand(ctx: DeployContext, lockWaitMs = OPERATOR_LOCK_WAIT_MS): Promise<DeployReport> {
  return waitForLock(ctx, lockWaitMs, () => runPass(depsFor(ctx)));
}

/**
 * Signals the os-apply-config deployments of `ctx.deployments` that wait for the end of this cycle (state `applied`);
 * when the cycle failed, with its error. Call it once the cycle's outcome is known.
 */
export function settleAppliedDeployments(ctx: DeployContext, outcome: CycleOutcome): Promise<SettleReport> {
  return withDeployLock(deployLockFile(ctx.config), () => settleApplied(depsFor(ctx), outcome));
}

/** How long --rerun and --forget wait for another process's deployment pass (the lock) before refusing. */
export const OPERATOR_LOCK_WAIT_MS = 60_000;
const LOCK_POLL_MS = 250;

export interface RerunReport {
  readonly record: DeploymentRecord;
  readonly failed: boolean;
  readonly interrupted: boolean;
  readonly awaitingReboot: boolean;
}

/** `deploy --rerun <id>` (operator.ts). Waits up to `lockWaitMs` for a pass of another process to end. */
export async function rerunDeployment(
  ctx: DeployContext,
  id: string,
  lockWaitMs = OPERATOR_LOCK_WAIT_MS,
): Promise<RerunReport> {
  return waitForLock(ctx, lockWaitMs, async () => {
    const { record, effects } = await rerun(depsFor(ctx), id);
    return {
      record,
      failed: has(effects, 'failed'),
      interrupted: has(effects, 'interrupted'),
      awaitingReboot: has(effects, 'awaiting-reboot'),
    };
  });
}

/** `deploy --forget <id>` (operator.ts). Returns the record that was deleted, if there was one. */
export function forgetDeployment(
  ctx: DeployContext,
  id: string,
  lockWaitMs = OPERATOR_LOCK_WAIT_MS,
): Promise<DeploymentRecord | undefined> {
  return waitForLock(ctx, lockWaitMs, () => forget(depsFor(ctx), id));
}

/**
 * The deploy lock, retried while another process holds it, for at most `waitMs` (then its DeployLockedError). While
 * it waits it says so (lock-wish.ts): a daemon running re-runs of finished deployments stops them and lets it in.
 */
async function waitForLock<T>(ctx: DeployContext, waitMs: number, fn: () => Promise<T>): Promise<T> {
  // On the monotonic clock: a step of the wall clock neither ends the wait early nor stretches it.
  const now = () => performance.now();
  const deadline = now() + waitMs;
  const file = deployLockFile(ctx.config);
  let logged = false;
  try {
    for (;;) {
      try {
        return await withDeployLock(file, fn);
      } catch (err) {
        if (!(err instanceof DeployLockedError) || now() >= deadline || ctx.signal.aborted) throw err;
        await wishForLock(file);
        if (!logged)
          ctx.log.info(
            { holder: err.holderPid, waitSeconds: Math.round(waitMs / 1000) },
            'waiting for the deployment pass of another process',
          );
        logged = true;
        await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
      }
    }
  } finally {
    await withdrawWish(file);
  }
}
