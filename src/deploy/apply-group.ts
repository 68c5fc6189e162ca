import { UNGROUPED, type Deployment } from '../heat/deployment.js';
import { failureBody } from '../heat/signal-body.js';
import { signalTargetFor } from '../heat/signal-target.js';
import { findHook, hookDirs } from '../hooks/locate.js';
import type { DeploymentRecord } from '../state/store.js';
import type { JsonObject } from '../util/json-merge.js';
import type { DeployDeps } from './context.js';
import { failuresOf, step, type DeployFailure, type Effect, type Step } from './effects.js';
import { finish } from './finish.js';
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

/** An os-apply-config deployment waits for the end of its cycle; one that asks for no signal is only recorded. */
export async function awaitCycle(deps: DeployDeps, d: Deployment, record: DeploymentRecord): Promise<Step> {
  const choice = signalTargetFor(d);
  if (choice.ok && choice.target.transport === 'NO_SIGNAL') {
    const reason = `group ${d.group} has no hook: its config is applied as os-apply-config metadata, and it asks for no signal`;
    return step(await deps.store.transition(record, 'nothing-to-run', {}, { reason }), { kind: 'skipped', id: d.id });
  }
  const reason = `group ${d.group} has no hook: its config is applied as os-apply-config metadata; signalled when this cycle ends`;
  return step(await deps.store.transition(record, 'applied-by-cycle', {}, { reason }));
}

/**
 * The end of a configuration cycle: every os-apply-config deployment of the cycle's metadata that waits for it is
 * signalled, success when the cycle succeeded; when it failed, with the cycle's error (also those the deployment
 * step never reached: the apply step failed first).
 */
export async function settleApplied(deps: DeployDeps, outcome: CycleOutcome): Promise<SettleReport> {
  const { store, ctx } = deps;
  await store.init();
  const { list } = listDeployments(ctx);
  // Quiet: the pass of this cycle has already reported (and held) the records that cannot be used.
  const listed = await store.listAll('quiet');
  const records = new Map(listed.records.map((r) => [r.id, r]));
  const unusable = new Set(listed.unusable.map((e) => e.deploymentId));
  const signalled: string[] = [];
  const effects: Effect[] = [];
  for (const dep of list) {
    if (!APPLY_GROUPS.has(dep.group) || unusable.has(dep.id)) continue;
    const record = await waitingRecord(deps, dep, records.get(dep.id), outcome);
    if (record === undefined) continue;
    const settled = await finish(deps, dep, record, 'cycle-ended', {
      body: settleBody(dep, outcome),
      exitCode: null,
      ...(outcome.ok ? {} : { agentError: `configuration cycle failed: ${outcome.reason}` }),
    });
    effects.push(...settled.effects);
    signalled.push(dep.id);
  }
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
