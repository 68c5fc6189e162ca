import type { LoadedConfig } from '../../config/load.js';
import type { HttpClient } from '../../http/types.js';
import type { Logger } from '../../log/logger.js';
import { withDeployLock } from '../../state/deploy-lock.js';
import { DeployLockedError } from '../../state/errors.js';
import { deployLockFile } from '../../state/store.js';
import { depsFor } from '../context.js';
import { reconvergePass } from './pass.js';

// The daemon's re-runs of finished deployments on their reconverge intervals ([deploy] reconverge_interval, a
// deployment's options.reconverge_interval): background work beside the poll loop, which needs no poll of Heat (a
// re-run has the inputs its deployment last had) and sleeps until the next re-run is due.

/** After giving way, how long before trying again (the work that went first takes the lock meanwhile). */
export const YIELD_RETRY_MS = 2000;

export interface ReconvergeStepResult {
  /** Epoch ms when the next pass is due; undefined: only when woken. */
  readonly nextDueAt?: number;
  /** Another process holds the deploy lock: try again later. */
  readonly busy?: boolean;
}

/**
 * One pass under the deploy lock; `signal` aborts on shutdown and when a cycle with new data goes first. A pass of
 * another process (the lock is held) is waited out; local state failures throw.
 */
export async function reconvergeDue(
  loaded: LoadedConfig,
  log: Logger,
  http: HttpClient,
  signal: AbortSignal,
): Promise<ReconvergeStepResult> {
  const { config, paths } = loaded;
  const deps = depsFor({ config, paths, log, http, signal, deployments: undefined });
  try {
    const report = await withDeployLock(deployLockFile(config), () => reconvergePass(deps, signal));
    if (report.yielded) return { nextDueAt: Date.now() + YIELD_RETRY_MS };
    return report.nextDueAt !== undefined ? { nextDueAt: report.nextDueAt } : {};
  } catch (err) {
    if (!(err instanceof DeployLockedError)) throw err;
    log.debug({ holder: err.holderPid }, 're-runs skipped: another process is running deployments');
    return { busy: true };
  }
}
