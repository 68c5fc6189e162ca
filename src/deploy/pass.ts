import type { Deployment } from '../heat/deployment.js';
import { flushDue, type FlushReport } from '../signals/outbox.js';
import { decide, decideAbsent, needsBootId } from '../state/decide.js';
import type { DeploymentRecordError } from '../state/errors.js';
import { pruneState } from '../state/prune.js';
import type { DeploymentRecord } from '../state/store.js';
import { applyWithoutRun } from './apply-group.js';
import { carryOut } from './carry-out.js';
import type { DeployDeps } from './context.js';
import { failuresOf, has, idsOf, step, stopsPass, type DeployFailure, type Effect, type Step } from './effects.js';
import { listDeployments } from './listed-deployments.js';
import { readBootId } from './reboot.js';
import { endInterruptedReruns } from './reconverge/interrupted.js';
import { markRemoved } from './removal.js';

// One pass over Heat's deployments, in Heat's order (heat-config's 55-heat-config, made durable):
//   1. every deployment not seen before gets a record (pending); one that deployed/<id>.json already marks as done
//      by an earlier agent is adopted and never run;
//   2. pending (or interrupted) deployments run their hook, one at a time, and their signal is attempted at once;
//   3. deployments gone from the metadata are recorded as removed (removal.ts);
//   4. other due signals are attempted once; old removed records are pruned.
// A deployment awaiting the reboot it asked for ends the pass while the machine is still in the boot that asked: the
// deployments after it wait for the reboot, in Heat's order. A failing, missing or hanging hook is a failure signal,
// not an error of the pass; only local state failures (and the lock) throw. A deployment whose record cannot be used
// is held (left as it is, reported) and the others go on. What to do with each deployment is decided by decide.ts
// from what is on disk; carry-out.ts carries it out.

export interface DeployReport {
  /** Valid deployments in the metadata. */
  readonly total: number;
  readonly invalid: number;
  /** Ids whose hook ran in this pass. */
  readonly ran: readonly string[];
  /** Deployments that completed in this pass with a failure (as Heat will judge the signal). */
  readonly failed: readonly DeployFailure[];
  /** Deployments of the metadata whose record cannot be used (DeploymentRecordError): not run until cleared. */
  readonly held: readonly DeployFailure[];
  readonly skipped: readonly string[];
  readonly removed: readonly string[];
  readonly pruned: readonly string[];
  readonly signals: FlushReport;
  /** Stopped early by a shutdown. */
  readonly interrupted: boolean;
  /** A deployment asked for a reboot and the reboot command ran (or the machine is still going down): the pass stopped. */
  readonly awaitingReboot?: boolean;
}

/** The records of the state directory, by id: those that can be used, and the errors of those that cannot. */
interface Known {
  readonly records: Map<string, DeploymentRecord>;
  readonly unusable: ReadonlyMap<string, DeploymentRecordError>;
}

export async function runPass(deps: DeployDeps): Promise<DeployReport> {
  const { ctx, store } = deps;
  await store.init();
  const { list, invalid } = listDeployments(ctx);
  const listed = await store.listAll('hold');
  // A record still reconverging under this pass's lock was left by a dead agent: that re-run ends first.
  const records = await endInterruptedReruns(deps, listed.records);
  const known: Known = {
    records: new Map(records.map((r) => [r.id, r])),
    unusable: new Map(listed.unusable.map((e) => [e.deploymentId, e])),
  };
  const current = new Set(list.map((d) => d.id));
  const effects = await deployListed(deps, list, known);
  // A pass stopped for the reboot still removes, flushes and prunes; one stopped by a shutdown does none of it.
  if (!has(effects, 'interrupted') && ctx.deployments !== undefined)
    effects.push(...(await removeGone(deps, current, known)));
  let pruned: string[] = [];
  let signals: FlushReport = { attempted: 0, sent: 0, failed: 0, pending: 0 };
  if (!has(effects, 'interrupted')) {
    signals = await flushDue(deps.outbox, new Set(idsOf(effects, 'signal-attempted')));
    if (ctx.deployments !== undefined) {
      pruned = await pruneState({
        store,
        records: [...known.records.values()],
        unusable: new Set(known.unusable.keys()),
        current,
        pruneAfterDays: ctx.config.deploy.prune_after,
        now: (ctx.now ?? Date.now)(),
        log: ctx.log,
      });
    }
  }
  return report(deps, { total: list.length, invalid, effects, pruned, signals });
}

/**
 * Steps 1 and 2: each listed deployment in turn, until a shutdown or a reboot stops the pass. The moves of those
 * that only wait for the cycle (applyWithoutRun) are gathered and made durable together, before the next deployment
 * that runs anything and at the end.
 */
async function deployListed(deps: DeployDeps, list: readonly Deployment[], known: Known): Promise<Effect[]> {
  const effects: Effect[] = [];
  const batch = deps.store.batch();
  const hooks = new Map<string, boolean>();
  for (const dep of list) {
    if (deps.ctx.signal.aborted) {
      effects.push({ kind: 'interrupted' });
      break;
    }
    const existing = known.records.get(dep.id);
    const unusable = known.unusable.get(dep.id);
    const applied = unusable === undefined ? await applyWithoutRun(deps, dep, existing, batch, hooks) : undefined;
    if (applied === undefined) await batch.commit();
    const done = applied ?? (await deployOne(deps, dep, existing, unusable));
    if (done.record !== undefined) known.records.set(dep.id, done.record);
    effects.push(...done.effects);
    if (stopsPass(done.effects)) break;
  }
  await batch.commit();
  return effects;
}

/** The facts on disk, the decision, and the decision carried out. */
async function deployOne(
  deps: DeployDeps,
  dep: Deployment,
  existing: DeploymentRecord | undefined,
  unusable: DeploymentRecordError | undefined,
): Promise<Step<DeploymentRecord | undefined>> {
  const decision = decide({
    record: unusable !== undefined ? 'unusable' : existing,
    deployedFileExists: existing === undefined && unusable === undefined && (await deps.store.hasDeployed(dep.id)),
    bootId: existing !== undefined && needsBootId(existing) ? await readBootId(deps.ctx.paths) : undefined,
  });
  if (decision.action === 'hold') {
    const reason = unusable?.message ?? 'its record cannot be used';
    return step(undefined, { kind: 'held', failure: { id: dep.id, name: dep.name, reason } });
  }
  try {
    return await carryOut(deps, dep, existing, decision);
  } catch (err) {
    const full = diskFullError(err);
    if (full) await noteDiskFull(deps, dep.id, full);
    throw err;
  }
}

/** The ENOSPC under a failed write (a state file's DeploymentStateError carries it as its cause). */
function diskFullError(err: unknown): NodeJS.ErrnoException | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++)
    if ((e as NodeJS.ErrnoException).code === 'ENOSPC') return e;
  return undefined;
}

/**
 * A full disk stopped the run between its writes: the record still says running, so the cause goes on it (a short
 * write that may fit where the result did not) and status reports it rather than a run that is not there. When even
 * that fails, the log line is the record of it.
 */
async function noteDiskFull(deps: DeployDeps, id: string, err: NodeJS.ErrnoException): Promise<void> {
  const lastError = `no space left on device (${err.path !== undefined ? deps.ctx.paths.unmap(err.path) : 'a state file'}); the deployment stopped and resumes when space is freed`;
  deps.ctx.log.error(
    { deploymentId: id, code: 'ERR_DEPLOYMENT_STATE', errno: 'ENOSPC', file: err.path },
    'deployment stopped: disk full',
  );
  try {
    const record = await deps.store.read(id);
    if (record?.state === 'running') await deps.store.note(record, { lastError });
  } catch {
    // Still full: the log line above says it.
  }
}

/** Step 3: the records of deployments the metadata no longer lists are marked removed, until a shutdown. */
async function removeGone(deps: DeployDeps, current: ReadonlySet<string>, known: Known): Promise<Effect[]> {
  const effects: Effect[] = [];
  for (const record of known.records.values()) {
    if (current.has(record.id) || decideAbsent(record) === 'keep') continue;
    const removed = deps.ctx.signal.aborted ? undefined : await markRemoved(deps, record);
    if (removed === undefined) {
      effects.push({ kind: 'interrupted' });
      break;
    }
    known.records.set(record.id, removed);
    effects.push({ kind: 'removed', id: record.id });
  }
  return effects;
}

interface PassOutcome {
  readonly total: number;
  readonly invalid: number;
  readonly effects: readonly Effect[];
  readonly pruned: string[];
  readonly signals: FlushReport;
}

/** The pass's report, counted from its effects, and its log line. */
function report(deps: DeployDeps, outcome: PassOutcome): DeployReport {
  const { effects, signals } = outcome;
  const awaitingReboot = has(effects, 'awaiting-reboot');
  const done: DeployReport = {
    total: outcome.total,
    invalid: outcome.invalid,
    ran: idsOf(effects, 'ran'),
    failed: failuresOf(effects, 'failed'),
    held: failuresOf(effects, 'held'),
    skipped: idsOf(effects, 'skipped'),
    removed: idsOf(effects, 'removed'),
    pruned: outcome.pruned,
    signals,
    interrupted: has(effects, 'interrupted'),
    ...(awaitingReboot ? { awaitingReboot: true } : {}),
  };
  deps.ctx.log.info(
    {
      deployments: done.total,
      ran: done.ran.length,
      failed: done.failed.length,
      held: done.held.length,
      removed: done.removed.length,
      pruned: done.pruned.length,
      signalsPending: signals.pending,
      interrupted: done.interrupted,
      awaitingReboot,
    },
    'deployments processed',
  );
  return done;
}
