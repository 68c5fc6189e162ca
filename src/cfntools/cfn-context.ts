import type { HookContext } from '../hooks/contract.js';
import type { HookLog } from '../hooks/kit/hook-log.js';
import { runProcess } from '../util/process-group.js';

// What the interpreter and cfn-hup's service watch are given to run tools: the environment, the log, a stop signal,
// and how a tool starts (through the agent's one process starter). A command's tools stay in its process group, so
// an interrupt reaches them as it reaches heat-cfntools' children; the daemon's are bounded by a timeout.

export function toolContext(
  env: NodeJS.ProcessEnv,
  log: HookLog,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): HookContext {
  return {
    env,
    log,
    signal: options.signal ?? new AbortController().signal,
    spawn: (run) =>
      runProcess({
        ...run,
        ownGroup: options.timeoutMs !== undefined,
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      }),
  };
}
