import { promises as fs } from 'node:fs';
import { DeploymentBusyError, DeploymentRecordError, UnknownDeploymentError } from '../state/errors.js';
import { RERUN_HISTORY_MAX, type DeploymentRecord, type RerunEntry, type RecordPatch } from '../state/store.js';
import { isSafeFileName } from '../util/safe-name.js';
import { deploymentLog, type DeployDeps } from './context.js';
import type { Step } from './effects.js';
import { listDeployments } from './listed-deployments.js';
import { endInterruptedRerun } from './reconverge/interrupted.js';
import { runOne } from './run-one.js';

// The operator's commands on one deployment: `deploy --rerun` runs it again whatever it had come to, `deploy
// --forget` makes the next pass see it as new. Both refuse a deployment whose hook runs now.

/** Fields of one run's outcome, cleared when a deployment is run again. */
const RUN_FIELDS = [
  'reconverge',
  'startedAt',
  'endedAt',
  'exitCode',
  'statusCode',
  'failed',
  'lastError',
  'removedAt',
  'stateBeforeRemoval',
  'adopted',
  'reboots',
  'bootId',
  'rebootRequestedAt',
  'rebootCommandRanAt',
  'hookPid',
  'hookPidStart',
] as const;

/**
 * `deploy --rerun`: a deployment of the current metadata, whatever state it had come to (except running), is put
 * back to pending (its outcome kept in rerunHistory, an undelivered signal of the earlier run dropped) and run now;
 * its new signal is attempted once, then left to the outbox.
 */
export async function rerun(deps: DeployDeps, id: string): Promise<Step> {
  const { store, ctx } = deps;
  await store.init();
  const record = await known(deps, id);
  const dep = listDeployments(ctx).list.find((d) => d.id === id);
  if (!dep) {
    throw new UnknownDeploymentError(
      record
        ? `deployment ${record.name} (${id}) is not in the current metadata (Heat no longer lists it), so it cannot be run again; trigger it again from Heat instead`
        : `no deployment ${id} is known here (no record, not in the current metadata); \`os-config-agent status\` lists the known ones`,
    );
  }
  const dlog = deploymentLog(ctx, dep);
  if (!record) {
    dlog.info('deployment not run here before; running it');
    const created = await store.create({ id: dep.id, name: dep.name, group: dep.group, action: dep.action }, 'seen');
    return runOne(deps, dep, created, 'hook-started');
  }
  const reruns = (record.reruns ?? 0) + 1;
  if (record.signal.state === 'pending')
    dlog.warn(
      { attempts: record.signal.attempts },
      'undelivered signal of the earlier run dropped: the rerun signals anew',
    );
  const cleared: RecordPatch = {
    reruns,
    rerunHistory: [...(record.rerunHistory ?? []), rerunEntry(record, store.timestamp())].slice(-RERUN_HISTORY_MAX),
    hookStarts: 0,
    signal: { state: 'none', transport: record.signal.transport, attempts: 0 },
    ...Object.fromEntries(RUN_FIELDS.map((k) => [k, undefined])),
  };
  const pending = await store.transition(record, 'rerun', cleared, { reason: 'deploy --rerun', reruns });
  return runOne(deps, dep, pending, 'hook-started');
}

/** What a deployment had come to when it is run again. */
function rerunEntry(record: DeploymentRecord, at: string): RerunEntry {
  return {
    at,
    fromState: record.state,
    ...(record.exitCode !== undefined ? { exitCode: record.exitCode } : {}),
    ...(record.statusCode !== undefined ? { statusCode: record.statusCode } : {}),
    signal: record.signal.state,
  };
}

/** `deploy --forget`: the record and the upstream files go; the next pass sees the deployment as new. */
export async function forget(deps: DeployDeps, id: string): Promise<DeploymentRecord | undefined> {
  const { store, ctx } = deps;
  await store.init();
  const record = await known(deps, id, 'forget');
  if (
    !record &&
    !(await exists(store.recordPath(id))) &&
    !(await store.hasDeployed(id)) &&
    !(await exists(store.notifyPath(id)))
  ) {
    throw new UnknownDeploymentError(
      `no deployment ${id} is known here (no record, no deployed file); \`os-config-agent status\` lists the known ones`,
    );
  }
  await store.forget(id);
  ctx.log.info(
    { deploymentId: id, deploymentName: record?.name ?? null, from: record?.state ?? null },
    'deployment forgotten: the next pass runs it as new if the metadata lists it',
  );
  return record;
}

/**
 * The record of `id` for --rerun/--forget: refused while its hook runs. A record that cannot be used is refused for
 * --rerun (its DeploymentRecordError says what to do) and is what --forget is for (`unusable`).
 */
async function known(
  deps: DeployDeps,
  id: string,
  unusable: 'refuse' | 'forget' = 'refuse',
): Promise<DeploymentRecord | undefined> {
  if (!isSafeFileName(id)) throw new UnknownDeploymentError(`${JSON.stringify(id)} is not a deployment id`);
  let record: DeploymentRecord | undefined;
  try {
    record = await deps.store.read(id);
  } catch (err) {
    if (!(err instanceof DeploymentRecordError) || unusable === 'refuse') throw err;
    deps.ctx.log.warn(
      { code: err.code, deploymentId: id, file: err.file, problem: err.problem },
      'deployment record cannot be used; forgetting it',
    );
    return undefined;
  }
  // Under the deploy lock, a record still reconverging was left by a dead agent: that re-run ends first.
  if (record?.state === 'reconverging') record = await endInterruptedRerun(deps, record);
  if (record?.state === 'running') {
    const pid = record.hookPid !== undefined ? ` (process ${record.hookPid})` : '';
    throw new DeploymentBusyError(
      `deployment ${record.name} (${id}) is running now${pid}; wait until \`os-config-agent status\` shows it finished, then try again`,
    );
  }
  return record;
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch {
    return false;
  }
}
