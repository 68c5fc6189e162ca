import type { DeploymentRecord } from '../../state/store.js';
import { killOrphanHook } from '../../util/process-identity.js';
import type { DeployDeps } from '../context.js';

// A re-run that a dead agent left behind. Every re-run holds the deploy lock, so a record found `reconverging` by a
// process that holds the lock (a pass, the re-runs, an operator's command) was left by an agent that died mid re-run.
// What it left running is ended (by its recorded pid and start time), and the re-run counts as failed: nobody knows
// how far it got. It is never taken for a first run, never signalled, and, since the next re-run is due an interval
// after this one ended, a re-run that kills the agent is not started again at once.

const REASON = 'interrupted: the agent stopped or the machine restarted while the re-run ran';

export async function endInterruptedRerun(deps: DeployDeps, record: DeploymentRecord): Promise<DeploymentRecord> {
  const { store, ctx } = deps;
  const log = ctx.log.child({ deploymentId: record.id, deploymentName: record.name });
  if (
    record.hookPid !== undefined &&
    record.hookPidStart !== undefined &&
    (await killOrphanHook(record.hookPid, record.hookPidStart))
  )
    log.warn({ hookPid: record.hookPid }, 'hook left running by an earlier agent; its process group was killed');
  const at = store.timestamp();
  const reconverge = record.reconverge ?? { runs: 1 };
  const ended = await store.transition(record, 'reconverge-interrupted', {
    hookPid: undefined,
    hookPidStart: undefined,
    reconverge: {
      runs: reconverge.runs,
      ...(reconverge.startedAt !== undefined ? { startedAt: reconverge.startedAt } : {}),
      endedAt: at,
      last: { outcome: 'failed', startedAt: reconverge.startedAt ?? at, endedAt: at, exitCode: null, reason: REASON },
    },
  });
  log.warn({ code: 'ERR_HOOK', outcome: 'failed', reason: REASON }, 'deployment re-run interrupted');
  return ended;
}

/** Every leftover among `records` ended; the records as they are afterwards. */
export async function endInterruptedReruns(
  deps: DeployDeps,
  records: Iterable<DeploymentRecord>,
): Promise<DeploymentRecord[]> {
  const out: DeploymentRecord[] = [];
  for (const record of records)
    out.push(record.state === 'reconverging' ? await endInterruptedRerun(deps, record) : record);
  return out;
}
