import { selectComponent } from '../heat/component.js';
import type { Deployment } from '../heat/deployment.js';
import { failureBody, STATUS_NO_HOOK, STATUS_NOT_EXECUTABLE } from '../heat/signal-body.js';
import { findHook, hookDirs } from '../hooks/locate.js';
import type { TransitionEvent } from '../state/machine.js';
import type { DeploymentRecord } from '../state/store.js';
import { APPLY_GROUPS, awaitCycle } from './apply-group.js';
import { deploymentLog, type DeployDeps } from './context.js';
import { step, type Step } from './effects.js';
import { finish } from './finish.js';
import { runHookOf } from './hook-run.js';

// Running one deployment: its component for the action, the hook for its group, then the hook's run (hook-run.ts).
// Without a config for the action it is skipped; an os-apply-config deployment without a hook waits for the end of
// the cycle (apply-group.ts); a missing or unrunnable hook, or an option that cannot be used, is a failure signal
// without a run.

/** The events that start a hook (machine.ts): from pending, an interrupted run, or the run after a reboot. */
export type StartEvent = Extract<TransitionEvent, 'hook-started' | 'hook-restarted' | 'rerun-after-reboot'>;

export async function runOne(
  deps: DeployDeps,
  dep: Deployment,
  record: DeploymentRecord,
  start: StartEvent,
): Promise<Step> {
  const { config, paths } = deps.ctx;
  const selected = selectComponent(dep);
  if (!selected.ok) {
    deploymentLog(deps.ctx, dep).warn({ reason: selected.reason }, 'component deployment skipped');
    const skipped = await deps.store.transition(
      record,
      'nothing-to-run',
      { lastError: selected.reason },
      { reason: selected.reason },
    );
    return step(skipped, { kind: 'skipped', id: dep.id });
  }
  const d = selected.deployment;
  // A bad option of the deployment is a failure signal naming it, before anything runs.
  if ('problem' in d.reconverge) {
    deploymentLog(deps.ctx, dep).error(
      { code: 'ERR_DEPLOYMENT_OPTION', option: 'reconverge_interval', reason: d.reconverge.problem },
      'deployment option invalid; failure signalled',
    );
    return failToRun(deps, d, record, d.reconverge.problem, 1);
  }
  const dirs = hookDirs(config, paths, deps.ctx.env ?? process.env);
  const lookup = await findHook(d.group, dirs);
  if (!lookup.found) {
    if (APPLY_GROUPS.has(d.group)) return awaitCycle(deps, d, record);
    const shownDirs = dirs.map((x) => paths.unmap(x)).join(', ');
    const message = `no hook for group "${d.group}" (looked for "${lookup.name}" in ${shownDirs}); install the hook or correct the deployment's group`;
    deploymentLog(deps.ctx, dep).error(
      { code: 'ERR_HOOK', group: d.group, hookName: lookup.name, searched: shownDirs },
      'hook missing; failure signalled',
    );
    return failToRun(deps, d, record, message, STATUS_NO_HOOK);
  }
  const shown = paths.unmap(lookup.found.path);
  if (!lookup.found.runnable) {
    const { problem = 'cannot be run', fix = 'make it an executable file', code = 'ERR_HOOK' } = lookup.found;
    const message = `hook ${shown} ${problem}; ${fix}`;
    deploymentLog(deps.ctx, dep).error({ code, hook: shown }, 'hook not runnable; failure signalled');
    return failToRun(deps, d, record, message, STATUS_NOT_EXECUTABLE);
  }
  return runHookOf(deps, d, record, { file: lookup.found.path, name: lookup.name, start });
}

/** A hook that cannot run is a failure signal; deployed/<id>.json is written first, as for a run. */
async function failToRun(
  deps: DeployDeps,
  d: Deployment,
  record: DeploymentRecord,
  message: string,
  status: number,
): Promise<Step> {
  await deps.store.writeDeployed(d.id, d.document);
  return finish(deps, d, record, 'hook-failed-to-run', {
    body: failureBody(message, status),
    exitCode: null,
    agentError: message,
  });
}
