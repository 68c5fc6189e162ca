import type { Logger } from '../../log/logger.js';
import type { Deployment } from '../../heat/deployment.js';
import { runProcess } from '../../util/process-group.js';
import type { HookResult } from './external.js';
import { HookFailure, type BuiltinHook, type HookContext } from '../contract.js';
import { hookDeployment } from '../hook-deployment.js';
import { HookLog, type HookLogLevel } from '../kit/hook-log.js';
import { executeHook } from './execute-hook.js';
import { pythonJsonDumps } from '../../util/python-json.js';

// A built-in hook run inside the agent: no process per deployment. The tool it drives still runs as a child in a
// process group of its own, with the deployment's timeout, the output cap and the pid recorded for orphan handling,
// exactly as a hook executable would be. The answer is what the executable would have printed, so the dispatcher
// judges and signals both alike.

export interface InProcessOptions {
  readonly hook: BuiltinHook;
  readonly deployment: Deployment;
  readonly env: NodeJS.ProcessEnv;
  readonly log: Logger;
  /** Milliseconds before the deployment's processes are terminated (0: no limit). */
  readonly timeoutMs: number;
  readonly killGraceMs?: number;
  /** Aborted on shutdown. */
  readonly signal?: AbortSignal;
  /** Called whenever a tool starts, with its pid (also its process-group id). */
  readonly onSpawn?: (pid: number) => void;
  /** Unit properties of the transient systemd scope each tool runs in ([deploy] hook_* limits). */
  readonly scopeProperties?: readonly string[];
}

const DEFAULT_KILL_GRACE_MS = 5000;
/** After a stop, how long the hook may take to return once its tool is gone. */
const SETTLE_MS = 1000;

const LEVELS: Readonly<Record<HookLogLevel, 'debug' | 'warn' | 'error'>> = {
  INFO: 'debug',
  WARNING: 'warn',
  ERROR: 'error',
};

export async function runInProcess(o: InProcessOptions): Promise<HookResult> {
  const started = Date.now();
  const stop = new AbortController();
  let timedOut = false;
  let aborted = false;
  const killGraceMs = o.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const timer =
    o.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          stop.abort();
        }, o.timeoutMs)
      : undefined;
  const onAbort = () => {
    aborted = true;
    stop.abort();
  };
  if (o.signal?.aborted) onAbort();
  else o.signal?.addEventListener('abort', onAbort, { once: true });

  const log = hookLogOf(o);
  const ctx = hookContextOf(o, log, stop.signal, killGraceMs);
  try {
    const execution = executeHook(o.hook, () => hookDeployment(o.deployment), ctx);
    // A stopped hook normally returns as soon as its tool is killed; one that does not is no longer waited for.
    const stopped = new Promise<undefined>((resolve) => {
      const settle = () => setTimeout(() => resolve(undefined), killGraceMs + SETTLE_MS).unref();
      if (stop.signal.aborted) settle();
      else stop.signal.addEventListener('abort', settle, { once: true });
    });
    const done = await Promise.race([execution, stopped]);
    const base = {
      timedOut,
      aborted,
      overflowed: false,
      stderr: log.text(),
      stdoutTruncated: false,
      stderrTruncated: false,
      durationMs: Date.now() - started,
    };
    if (timedOut || aborted || done === undefined) return { ...base, exitCode: null, signal: 'SIGTERM', stdout: '' };
    return { ...base, exitCode: done.crashed ? 1 : 0, signal: null, stdout: pythonJsonDumps(done.outcome) };
  } finally {
    if (timer) clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  }
}

/** The hook's lines: the agent's log (its INFO lines are detail, so debug), and kept as the executable's stderr. */
function hookLogOf(o: InProcessOptions): HookLog {
  const hookLog = o.log.child({ group: o.hook.group });
  return new HookLog(`heat-config-${o.hook.group}`, (level, message, fields) =>
    hookLog[LEVELS[level]]({ detail: fields }, message),
  );
}

/** What the hook sees: its environment and log, and the tools it starts in process groups stopped with the run. */
function hookContextOf(o: InProcessOptions, log: HookLog, stop: AbortSignal, killGraceMs: number): HookContext {
  return {
    env: o.env,
    log,
    signal: stop,
    spawn(run) {
      if (stop.aborted) throw new HookFailure('the deployment was stopped before its tool started');
      return runProcess({
        ...run,
        ownGroup: true,
        signal: run.signal ? AbortSignal.any([stop, run.signal]) : stop,
        killGraceMs,
        ...(o.onSpawn ? { onSpawn: o.onSpawn } : {}),
        ...(o.scopeProperties ? { scopeProperties: o.scopeProperties } : {}),
      });
    },
  };
}

/** The signal stopping a tool: the run's own, the caller's, or either. */
function stopBy(...signals: Array<AbortSignal | undefined>): { signal?: AbortSignal } {
  const set = signals.filter((s): s is AbortSignal => s !== undefined);
  if (set.length === 0) return {};
  return { signal: set.length === 1 ? set[0]! : AbortSignal.any(set) };
}

/** Per process of a removal: a daemon that hangs must not hold the pass for ever. */
const REMOVAL_TIMEOUT_MS = 120_000;

export interface RemovalOptions {
  readonly hook: BuiltinHook;
  readonly id: string;
  readonly env: NodeJS.ProcessEnv;
  readonly log: Logger;
  readonly signal?: AbortSignal;
  /** Milliseconds before each tool the removal starts is terminated. */
  readonly timeoutMs?: number;
  readonly killGraceMs?: number;
}

/**
 * Runs the hook's `removed` for a deployment that left the metadata (nothing when the hook has none), inside the
 * agent, its lines in the agent's log. Its tools run as a deployment's do, each bounded by a timeout.
 */
export async function runRemovalInProcess(o: RemovalOptions): Promise<void> {
  const { removed } = o.hook;
  if (!removed) return;
  const hookLog = o.log.child({ group: o.hook.group, deploymentId: o.id });
  const log = new HookLog(`heat-config-${o.hook.group}`, (level, message, fields) =>
    hookLog[LEVELS[level]]({ detail: fields }, message),
  );
  const timeoutMs = o.timeoutMs ?? REMOVAL_TIMEOUT_MS;
  const killGraceMs = o.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const ctx: HookContext = {
    env: o.env,
    log,
    signal: o.signal ?? new AbortController().signal,
    spawn: (run) => runProcess({ ...run, ownGroup: true, timeoutMs, killGraceMs, ...stopBy(o.signal, run.signal) }),
  };
  await removed.call(o.hook, o.id, ctx);
}
