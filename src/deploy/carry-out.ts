import { selectComponent } from '../heat/component.js';
import type { Deployment } from '../heat/deployment.js';
import { failureBody } from '../heat/signal-body.js';
import type { Decision } from '../state/decide.js';
import type { DeploymentRecord } from '../state/store.js';
import { killOrphanHook } from '../util/process-identity.js';
import { deploymentLog, type DeployDeps } from './context.js';
import { step, type Step } from './effects.js';
import { finish } from './finish.js';
import { rebootNow } from './reboot-protocol.js';
import { runOne } from './run-one.js';

// Carrying out what decide() (src/state/decide.ts) answered for one deployment, with the writes in the order of
// HOOK_RUN_WRITES (machine.ts). Each answer maps to the event the record takes.

export async function carryOut(
  deps: DeployDeps,
  dep: Deployment,
  existing: DeploymentRecord | undefined,
  decision: Decision,
): Promise<Step<DeploymentRecord | undefined>> {
  const { store } = deps;
  const fields = { id: dep.id, name: dep.name, group: dep.group, action: dep.action };
  if (decision.action === 'adopt') {
    const adopted = await store.create(
      fields,
      'adopted',
      { adopted: true },
      { reason: 'deployed/<id>.json exists: deployed by an earlier agent; not run again' },
    );
    return step(adopted);
  }
  if (decision.action === 'run' && decision.create)
    return runOne(deps, dep, await store.create(fields, 'seen'), 'hook-started');
  // decide() answers adopt or run (create) when there is no record; every other answer is about a record that exists.
  if (existing === undefined) return step(undefined);
  return carryOutFor(deps, dep, existing, decision);
}

async function carryOutFor(
  deps: DeployDeps,
  dep: Deployment,
  record: DeploymentRecord,
  decision: Decision,
): Promise<Step> {
  const dlog = () => deploymentLog(deps.ctx, dep);
  switch (decision.action) {
    case 'run':
      return runOne(deps, dep, record, 'hook-started');
    case 'restore': {
      const back = await deps.store.transition(
        record,
        'listed-again',
        // Back to pending (its effects were undone): a new run, counted from its first start.
        {
          removedAt: undefined,
          stateBeforeRemoval: undefined,
          ...(decision.to === 'pending' ? { hookStarts: 0 } : {}),
        },
        { reason: 'listed again' },
      );
      return carryOutFor(deps, dep, back, decision.then);
    }
    case 'resume-interrupted':
    case 'fail-interrupted':
      return interrupted(deps, dep, record, decision);
    // A deployment that asked for a reboot. In a new boot it runs again, with OS_CONFIG_AGENT_REBOOTED=1, and that
    // run is the one signalled. Still in the boot that asked: the reboot command runs if it never did; otherwise
    // the machine is going down, and the pass stops here.
    case 'run-after-reboot':
      dlog().info({ reboots: record.reboots ?? 0 }, 'machine rebooted as the deployment asked; running it again');
      return runOne(deps, dep, record, 'rerun-after-reboot');
    case 'reboot-now': {
      const selected = selectComponent(dep);
      return rebootNow(deps, selected.ok ? selected.deployment : dep, record);
    }
    case 'wait-for-reboot':
      return step(record, { kind: 'awaiting-reboot' });
    // hold: the pass holds a record that cannot be used before it gets here; adopt: only without a record.
    case 'hold':
    case 'adopt':
    case 'keep':
      return step(record);
  }
}

/** A hook the record says was running: end what it left running, then run it once more or signal a failure. */
async function interrupted(
  deps: DeployDeps,
  dep: Deployment,
  record: DeploymentRecord,
  decision: Extract<Decision, { action: 'resume-interrupted' | 'fail-interrupted' }>,
): Promise<Step> {
  const dlog = deploymentLog(deps.ctx, dep);
  if (
    decision.killOrphan &&
    record.hookPid !== undefined &&
    record.hookPidStart !== undefined &&
    (await killOrphanHook(record.hookPid, record.hookPidStart))
  ) {
    dlog.warn({ hookPid: record.hookPid }, 'hook left running by an earlier agent; its process group was killed');
  }
  if (decision.action === 'resume-interrupted') {
    dlog.warn({ hookStarts: record.hookStarts }, 'hook was interrupted; running it again');
    return runOne(deps, dep, record, 'hook-restarted');
  }
  const message = `the hook was interrupted ${record.hookStarts} times (the agent stopped or the machine restarted while it ran) and is not started again; trigger the deployment again from Heat to retry`;
  dlog.error({ code: 'ERR_HOOK', hookStarts: record.hookStarts }, 'hook interrupted too often; failure signalled');
  return finish(deps, dep, record, 'interrupted-too-often', {
    body: failureBody(message, 1),
    exitCode: null,
    agentError: message,
  });
}
