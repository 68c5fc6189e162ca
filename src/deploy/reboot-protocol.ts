import type { Deployment } from '../heat/deployment.js';
import { failureBody } from '../heat/signal-body.js';
import type { DeploymentRecord } from '../state/store.js';
import type { JsonObject } from '../util/json-merge.js';
import { deploymentLog, hookEnv, type DeployDeps } from './context.js';
import { step, type Step } from './effects.js';
import { finish } from './finish.js';
import { BOOT_ID_FILE, MAX_REBOOTS, readBootId, REBOOT_EXIT_CODE, runRebootCommand } from './reboot.js';

// The reboot a deployment asks for (reboot.ts has the convention and the command): the record says awaiting-reboot,
// with the boot id, durably, before the reboot command runs; then the pass stops, as the machine is going down. A
// reboot that cannot happen is a failure signal carrying the hook's output.

/**
 * The hook (or the config script it ran) exited 194: a reboot, unless reboots are off, the deployment has asked too
 * often or the boot id cannot be read.
 */
export async function requestReboot(
  deps: DeployDeps,
  d: Deployment,
  record: DeploymentRecord,
  body: JsonObject,
  exitCode: number | null,
): Promise<Step> {
  const { ctx, store } = deps;
  const reboots = record.reboots ?? 0;
  const bootId = await readBootId(ctx.paths);
  const refusal = rebootRefusal(deps, reboots, bootId);
  if (refusal !== undefined) {
    deploymentLog(ctx, d).error({ code: 'ERR_HOOK', reboots }, 'reboot refused; failure signalled');
    const stdout = typeof body.deploy_stdout === 'string' ? body.deploy_stdout : '';
    const stderr = typeof body.deploy_stderr === 'string' ? body.deploy_stderr : '';
    return finish(deps, d, record, 'hook-finished', {
      body: { ...body, ...failureBody(refusal, REBOOT_EXIT_CODE, stdout, stderr) },
      exitCode,
      agentError: refusal,
    });
  }
  const awaiting = await store.transition(
    record,
    'reboot-requested',
    {
      exitCode,
      endedAt: store.timestamp(),
      ...(bootId !== undefined ? { bootId } : {}),
      reboots: reboots + 1,
      rebootRequestedAt: store.timestamp(),
      rebootCommandRanAt: undefined,
      hookStarts: 0,
      hookPid: undefined,
      hookPidStart: undefined,
    },
    { reboots: reboots + 1 },
  );
  return rebootNow(deps, d, awaiting);
}

/** Why a reboot asked for cannot happen; undefined when it can. */
function rebootRefusal(deps: DeployDeps, reboots: number, bootId: string | undefined): string | undefined {
  const asked = `the hook asked for a reboot (status ${REBOOT_EXIT_CODE})`;
  if (deps.ctx.config.deploy.reboot_command.trim() === '')
    return `${asked} but reboots are off ([deploy] reboot_command is empty); set reboot_command, or reboot the machine from the hook's own script`;
  if (reboots >= MAX_REBOOTS)
    return `${asked} again after ${reboots} reboots; it is not rebooted again (a hook that exits ${REBOOT_EXIT_CODE} every time would reboot the machine forever)`;
  if (bootId === undefined)
    return `${asked} but ${BOOT_ID_FILE} cannot be read, so the end of the reboot could not be told; not rebooting`;
  return undefined;
}

/** Runs [deploy] reboot_command for an awaiting-reboot record; a command that fails is a failure signal. */
export async function rebootNow(deps: DeployDeps, d: Deployment, record: DeploymentRecord): Promise<Step> {
  const { ctx, store } = deps;
  const dlog = deploymentLog(ctx, d);
  const command = ctx.config.deploy.reboot_command.trim();
  const outcome =
    command === ''
      ? {
          ok: false as const,
          reason: 'reboots were turned off ([deploy] reboot_command is empty) before the reboot happened',
        }
      : await runRebootCommand(command, hookEnv(ctx), dlog);
  if (!outcome.ok) {
    const message = `the hook asked for a reboot (status ${REBOOT_EXIT_CODE}), but ${outcome.reason}`;
    dlog.error({ code: 'ERR_HOOK', reason: outcome.reason }, 'reboot failed; failure signalled');
    return finish(deps, d, record, 'reboot-failed', {
      body: failureBody(message, REBOOT_EXIT_CODE),
      exitCode: record.exitCode ?? null,
      agentError: message,
    });
  }
  const noted = await store.note(record, { rebootCommandRanAt: store.timestamp() });
  return step(noted, { kind: 'awaiting-reboot' });
}
