import { UNGROUPED, type Deployment } from '../heat/deployment.js';
import { failureBody } from '../heat/signal-body.js';
import { signalTargetFor } from '../heat/signal-target.js';
import { findHook, hookDirs } from '../hooks/locate.js';
import type { DeploymentRecord, RecordMover } from '../state/store.js';
import { selectComponent } from '../heat/component.js';
import type { JsonObject } from '../util/json-merge.js';
import type { DeployDeps } from './context.js';
import { failuresOf, step, type DeployFailure, type Effect, type Step } from './effects.js';
import { attemptStored, resultWrites, type ResultWrites } from './finish.js';
import { listDeployments } from './listed-deployments.js';

// The os-apply-config group's deployments (and those without a group): no hook runs them, the apply step renders
// their data. Heat waits for their signal like any other's, and upstream never sent one (the stack timed out), so it
// is sent when the cycle that applied the data ends, with the cycle's outcome.

/** Groups whose config os-collect-config already hands to the apply step: without a hook they are not an error. */
export const APPLY_GROUPS: ReadonlySet<string> = new Set(['os-apply-config', UNGROUPED]);

/** How a configuration cycle (collect, apply, the phases, the deployments) ended. */
export type CycleOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export interface SettleReport {
  /** os-apply-config deployments whose signal was queued (and attempted). */
  readonly signalled: readonly string[];
  readonly failed: readonly DeployFailure[];
}

/**
 * An os-apply-config deployment waits for the end of its cycle; one that asks for no signal is only recorded. The
 * move is the store's, or a batch's (applyWithoutRun).
 */
export async function awaitCycle(
  deps: DeployDeps,
  d: Deployment,
  record: DeploymentRecord,
  mover: RecordMover = deps.store,
): Promise<Step> {
  const choice = signalTargetFor(d);
  if (choice.ok && choice.target.transport === 'NO_SIGNAL') {
    const reason = `group ${d.group} has no hook: its config is applied as os-apply-config metadata, and it asks for no signal`;
    return step(await mover.transition(record, 'nothing-to-run', {}, { reason }), { kind: 'skipped', id: d.id });
  }
  const reason = `group ${d.group} has no hook: its config is applied as os-apply-config metadata; signalled when this cycle ends`;
  return step(await mover.transition(record, 'applied-by-cycle', {}, { reason }));
}

/**
 * A deployment the pass would record and hand to the cycle without running anything (awaitCycle: new or pending, of
 * an apply group without a hook, with a config for its action and usable options), its moves made in `batch`; else
 * undefined, and the pass runs it as any other. Nothing outside the records happens between those moves, so they are
 * made durable together. `hooks`: whether each group has a hook, looked up once per pass.
 */
export async function applyWithoutRun(
  deps: DeployDeps,
  dep: Deployment,
  existing: DeploymentRecord | undefined,
  batch: RecordMover,
  hooks: Map<string, boolean>,
): Promise<Step | undefined> {
  if (!APPLY_GROUPS.has(dep.group)) return undefined;
  if (existing !== undefined ? existing.state !== 'pending' : await deps.store.hasDeployed(dep.id)) return undefined;
  const selected = selectComponent(dep);
  if (!selected.ok || 'problem' in selected.deployment.reconverge) return undefined;
  let hasHook = hooks.get(dep.group);
  if (hasHook === undefined) {
    const { config, paths, env } = deps.ctx;
    hasHook = (await findHook(dep.group, hookDirs(config, paths, env ?? process.env))).found !== undefined;
    hooks.set(dep.group, hasHook);
  }
  if (hasHook) return undefined;
  const fields = { id: dep.id, name: dep.name, group: dep.group, action: dep.action };
  const record = existing ?? (await batch.create(fields, 'seen'));
  return awaitCycle(deps, selected.deployment, record, batch);
}

/**
 * The end of a configuration cycle: every os-apply-config deployment of the cycle's metadata that waits for it is
 * signalled, success when the cycle succeeded; when it failed, with the cycle's error (also those the deployment
 * step never reached: the apply step failed first). Their notify files are written together, then their records
 * (`done`) together, then each pending signal is attempted.
 */
export async function settleApplied(deps: DeployDeps, outcome: CycleOutcome): Promise<SettleReport> {
  const { store, ctx } = deps;
  await store.init();
  const { list } = listDeployments(ctx);
  // Quiet: the pass of this cycle has already reported (and held) the records that cannot be used.
  const listed = await store.listAll('quiet');
  const records = new Map(listed.records.map((r) => [r.id, r]));
  const unusable = new Set(listed.unusable.map((e) => e.deploymentId));
  const waiting: { dep: Deployment; record: DeploymentRecord; writes: ResultWrites }[] = [];
  for (const dep of list) {
    if (!APPLY_GROUPS.has(dep.group) || unusable.has(dep.id)) continue;
    const record = await waitingRecord(deps, dep, records.get(dep.id), outcome);
    if (record === undefined) continue;
    const writes = resultWrites(deps, dep, {
      body: settleBody(dep, outcome),
      exitCode: null,
      ...(outcome.ok ? {} : { agentError: `configuration cycle failed: ${outcome.reason}` }),
    });
    waiting.push({ dep, record, writes });
  }
  // The notify files are on disk before any record says done (docs/state-machine.md: the order of the writes).
  await store.writeNotifies(waiting.map((w) => ({ id: w.dep.id, body: w.writes.body })));
  const batch = store.batch();
  const done = [];
  for (const w of waiting)
    done.push(await batch.transition(w.record, 'cycle-ended', w.writes.patch, w.writes.logFields));
  await batch.commit();
  const effects: Effect[] = [];
  for (const [i, record] of done.entries())
    effects.push(...(await attemptStored(deps, record, waiting[i]?.writes.effects ?? [])).effects);
  const signalled = waiting.map((w) => w.dep.id);
  if (signalled.length > 0)
    ctx.log.info(
      { deployments: signalled.length, cycleSucceeded: outcome.ok },
      'os-apply-config deployments signalled',
    );
  return { signalled, failed: failuresOf(effects, 'failed') };
}

/**
 * The record of a deployment that waits for the end of this cycle, or undefined when it does not: after a
 * successful cycle the applied ones; after a failed one also those still pending or not yet recorded, unless they
 * ask for no signal or a hook of the operator's own runs them in a later cycle.
 */
async function waitingRecord(
  deps: DeployDeps,
  dep: Deployment,
  record: DeploymentRecord | undefined,
  outcome: CycleOutcome,
): Promise<DeploymentRecord | undefined> {
  if (outcome.ok) return record?.state === 'applied' ? record : undefined;
  if (record !== undefined && record.state !== 'applied' && record.state !== 'pending') return undefined;
  const choice = signalTargetFor(dep);
  if (choice.ok && choice.target.transport === 'NO_SIGNAL') return undefined;
  const { config, paths, env } = deps.ctx;
  if ((await findHook(dep.group, hookDirs(config, paths, env ?? process.env))).found) return undefined;
  if (record !== undefined) return record;
  if (await deps.store.hasDeployed(dep.id)) return undefined;
  return deps.store.create({ id: dep.id, name: dep.name, group: dep.group, action: dep.action }, 'seen');
}

function settleBody(dep: Deployment, outcome: CycleOutcome): JsonObject {
  return outcome.ok
    ? {
        deploy_stdout: `os-apply-config applied the data of deployment ${dep.name} and the configuration cycle completed`,
        deploy_stderr: '',
        deploy_status_code: 0,
      }
    : failureBody(
        `the configuration cycle that applies the data of deployment ${dep.name} failed: ${outcome.reason}`,
        1,
      );
}
