import { errorMessage } from '../errors.js';
import type { Deployment } from '../heat/deployment.js';
import { bodyFromHookResult } from '../heat/signal-body.js';
import type { BuiltinHook } from '../hooks/contract.js';
import type { HookResult } from '../hooks/host/external.js';
import { runInProcess } from '../hooks/host/in-process.js';
import type { Logger } from '../log/logger.js';
import { hookScopeProperties } from '../hooks/host/scope.js';
import { readHookStamp } from '../hooks/host/stamp.js';
import { BUILTIN_HOOK_GROUPS, loadBuiltinHook } from '../hooks/registry.js';
import type { DeploymentRecord } from '../state/store.js';
import { processStartTicks } from '../util/process-identity.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { VERSION } from '../version.js';
import { deploymentLog, hookEnv, killGrace, type DeployContext, type DeployDeps } from './context.js';
import { after, step, type Effect, type Step } from './effects.js';
import { finish } from './finish.js';
import { holdOutputSecrets } from './output-secrets.js';
import { REBOOT_EXIT_CODE, REBOOTED_ENV } from './reboot.js';
import { requestReboot } from './reboot-protocol.js';
import type { StartEvent } from './run-one.js';

// One run of a deployment's hook, in the order of HOOK_RUN_WRITES (machine.ts): deployed/<id>.json, the record
// `running` (a start counted), the hook's pid as soon as it exists, then the result (finish.ts) or the reboot it asks
// for (reboot-protocol.ts). A shutdown leaves the record running: the next start runs it again.

export interface HookToRun {
  /** The hook file found for the group, and its sanitised name. */
  readonly file: string;
  readonly name: string;
  readonly start: StartEvent;
}

export async function runHookOf(
  deps: DeployDeps,
  d: Deployment,
  record: DeploymentRecord,
  hook: HookToRun,
): Promise<Step> {
  const { config, paths } = deps.ctx;
  const dlog = deploymentLog(deps.ctx, d);
  const shown = paths.unmap(hook.file);
  const timeoutSeconds = d.hookTimeoutSeconds ?? config.deploy.hook_timeout;
  // deployed/<id>.json first: if it cannot be written (full disk), the record stays pending and no start is counted.
  await deps.store.writeDeployed(d.id, d.document);
  const running = await deps.store.transition(
    record,
    hook.start,
    {
      hook: shown,
      hookStarts: record.hookStarts + 1,
      startedAt: deps.store.timestamp(),
      hookPid: undefined,
      hookPidStart: undefined,
    },
    { hook: shown },
  );
  const ran: Effect = { kind: 'ran', id: d.id };
  // Also for a run after the reboot that was interrupted and is resumed (the record keeps its reboot count).
  const rebooted = hook.start === 'rerun-after-reboot' || (running.reboots ?? 0) > 0;
  const env = rebooted ? { ...hookEnv(deps.ctx), [REBOOTED_ENV]: '1' } : hookEnv(deps.ctx);
  const { result, inProcess } = await invokeHook(deps, d, running, { ...hook, env, timeoutSeconds });
  const body = bodyFromHookResult(result, shown, timeoutSeconds);
  holdOutputSecrets(d.id, body);
  logHookResult(dlog, shown, result, inProcess);
  if (result.aborted) {
    dlog.info('hook stopped by shutdown; it runs again at the next start');
    return step(running, ran, { kind: 'interrupted' });
  }
  if (result.timedOut)
    dlog.error(
      { code: 'ERR_HOOK', hook: shown, timeoutSeconds },
      'hook timed out; process group killed; failure signalled',
    );
  else if (result.spawnError)
    dlog.error(
      { code: 'ERR_HOOK', hook: shown, reason: result.spawnError.code },
      'hook could not be started; failure signalled',
    );
  if (!result.timedOut && !result.spawnError && Number(body.deploy_status_code) === REBOOT_EXIT_CODE)
    return after([ran], await requestReboot(deps, d, running, body, result.exitCode));
  return after([ran], await finish(deps, d, running, 'hook-finished', { body, exitCode: result.exitCode }));
}

/** The hook's end, logged: at info for a run, at debug for a re-run (whose own line says how it went). */
export function logHookResult(
  dlog: Logger,
  shown: string,
  result: HookResult,
  inProcess: boolean,
  level: 'info' | 'debug' = 'info',
): void {
  dlog[level](
    {
      hook: shown,
      inProcess,
      exitCode: result.exitCode,
      killedBy: result.signal,
      timedOut: result.timedOut,
      durationMs: result.durationMs,
      stdoutBytes: result.stdout.length,
      stderrBytes: result.stderr.length,
    },
    'hook finished',
  );
  // An in-process hook's lines are already in the log, one by one.
  if (result.stderr !== '' && !inProcess) dlog.debug({ stderrTail: result.stderr.slice(-4096) }, 'hook stderr');
}

/** A hook to start: its file and name, its environment, and its timeout. */
export interface HookInvocation {
  readonly file: string;
  readonly name: string;
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutSeconds: number;
  /** Stops the hook (shutdown, or work that goes first); the deployment context's signal when absent. */
  readonly signal?: AbortSignal;
}

/**
 * The hook run in-process when it is the agent's own build, else as a process. The pid of each process the
 * deployment starts goes into the record (running, or reconverging for a re-run) as soon as it exists, so an agent
 * that dies alone lets the next one end the orphan.
 */
export async function invokeHook(
  deps: DeployDeps,
  d: Deployment,
  running: DeploymentRecord,
  hook: HookInvocation,
): Promise<{ result: HookResult; inProcess: boolean }> {
  const { ctx } = deps;
  const dlog = deploymentLog(ctx, d);
  // Saves are chained (a built-in hook may start several tools) and awaited before the result is stored: two writes
  // of the record must not cross.
  let pidSaved: Promise<unknown> = Promise.resolve();
  const onSpawn = (pid: number) => {
    const start = processStartTicks(pid);
    if (start === undefined) return;
    pidSaved = pidSaved
      .then(() => deps.store.note(running, { hookPid: pid, hookPidStart: start }))
      .catch((err: unknown) => dlog.warn({ reason: errorMessage(err) }, 'could not record the hook pid'));
  };
  const builtin = await builtinHookFor(ctx, hook.file, hook.name);
  const scope = hookScopeProperties(ctx.config, dlog);
  const options = {
    env: hook.env,
    timeoutMs: hook.timeoutSeconds * 1000,
    signal: hook.signal ?? ctx.signal,
    onSpawn,
    ...killGrace(ctx),
    ...(scope ? { scopeProperties: scope } : {}),
  };
  const result = builtin
    ? await runInProcess({ hook: builtin, deployment: d, log: dlog, ...options })
    : await deps.runner({ file: hook.file, input: pythonJsonDumps(d.document), ...options });
  await pidSaved;
  return { result, inProcess: builtin !== undefined };
}

/**
 * The agent's own hook for this group, when the installed file is the agent's own build of it (hook-stamp.ts) and
 * in-process hooks are on; undefined means the file runs as a process.
 */
async function builtinHookFor(ctx: DeployContext, file: string, name: string): Promise<BuiltinHook | undefined> {
  if (!ctx.config.deploy.hooks_in_process || !BUILTIN_HOOK_GROUPS.includes(name)) return undefined;
  const stamp = readHookStamp(file);
  if (stamp?.group !== name || stamp.version !== VERSION) return undefined;
  return loadBuiltinHook(name);
}
