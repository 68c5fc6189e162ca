import { runProcess } from '../util/process-group.js';

// Starts one phase script as dib-run-parts does (exec of DIR/name, no arguments, inherited stdin) but with its output
// on the agent's stderr, and in its own process group so a timeout or shutdown kills everything it started, not just
// the script (upstream's SIGALRM walked the process tree instead). The timeout is a SIGKILL, as upstream's; shutdown
// sends SIGTERM first, so a script can clean up.

export interface ScriptResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  /** The script could not be started (ENOENT, EACCES, ENOEXEC). */
  readonly spawnError?: string;
  readonly seconds: number;
}

export interface RunScriptOptions {
  readonly file: string;
  readonly env: Readonly<Record<string, string>>;
  /** On the monotonic clock (performance.now()): the time after which the group is SIGKILLed (as upstream's timeout); undefined: no limit. */
  readonly deadline?: number;
  /** Shutdown: SIGTERM to the group, SIGKILL after killGraceMs (default 5 s). */
  readonly signal?: AbortSignal;
  readonly killGraceMs?: number;
  /** Where the script's stdout and stderr go (default: the agent's stderr). */
  readonly output?: number | 'ignore';
}

export async function runScript(options: RunScriptOptions): Promise<ScriptResult> {
  const output = options.output ?? 2;
  const result = await runProcess({
    file: options.file,
    env: { ...options.env },
    stdin: 'inherit',
    stdout: output,
    stderr: output,
    // A deadline already passed still starts the script, which the timeout then kills at once (0 would mean none).
    ...(options.deadline !== undefined
      ? { timeoutMs: Math.max(1, options.deadline - performance.now()), timeoutSignal: 'SIGKILL' as const }
      : {}),
    signal: options.signal,
    killGraceMs: options.killGraceMs,
  });
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    aborted: result.aborted,
    ...(result.spawnError !== undefined ? { spawnError: result.spawnError.code } : {}),
    seconds: result.durationMs / 1000,
  };
}
