import { lockWished } from '../../state/lock-wish.js';
import { reconvergeDueAt } from '../../state/reconverge-record.js';
import { deployLockFile } from '../../state/store.js';
import type { DeployDeps } from '../context.js';
import { findCandidates } from './candidates.js';
import { endInterruptedReruns } from './interrupted.js';
import { rerunOne } from './rerun.js';

// One pass of re-runs, under the deploy lock (the caller's): re-runs a dead agent left are ended first, then every
// finished deployment whose interval has passed is re-run, the longest overdue first, one at a time. The pass gives
// way as soon as something goes first: `stop` (a shutdown, a cycle with new data) or another process waiting for the
// lock (an operator's command). It says when the next re-run is due, so the daemon sleeps until then and no longer.

export interface ReconvergeReport {
  /** Re-runs that ended with an outcome. */
  readonly ran: number;
  /** Epoch ms of the next re-run due; undefined when none is (nothing to re-run). */
  readonly nextDueAt?: number;
  /** It stopped to let other work go first; the re-runs still due wait for the caller's next pass. */
  readonly yielded: boolean;
}

export async function reconvergePass(deps: DeployDeps, stop: AbortSignal): Promise<ReconvergeReport> {
  const { store, ctx } = deps;
  const now = ctx.now ?? Date.now;
  const lockFile = deployLockFile(ctx.config);
  await store.init();
  const found = await findCandidates(store, ctx.config, ctx.log, now());
  await endInterruptedReruns(deps, found.leftovers);
  let ran = 0;
  let yielded = false;
  const next: number[] = [];
  for (const [i, c] of found.candidates.entries()) {
    if (c.dueAt > now()) {
      next.push(...found.candidates.slice(i).map((x) => x.dueAt));
      break;
    }
    if (stop.aborted || (await lockWished(lockFile))) {
      yielded = true;
      next.push(...found.candidates.slice(i).map((x) => x.dueAt));
      break;
    }
    const done = await rerunOne(deps, c, stop);
    if (done.end === 'finished') ran++;
    else yielded = true;
    next.push(reconvergeDueAt(done.record, c.intervalSeconds, now()));
  }
  const nextDueAt = next.length > 0 ? Math.min(...next) : undefined;
  return { ran, yielded, ...(nextDueAt !== undefined ? { nextDueAt } : {}) };
}
