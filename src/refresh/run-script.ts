import { spawn, type StdioOptions } from 'node:child_process';
import { startBornNeutral } from '../util/oom-score.js';

// Starts one phase script as dib-run-parts does (exec of DIR/name, no arguments, inherited stdin) but with its output
// on the agent's stderr, and in its own process group so a timeout or shutdown kills everything it started, not just
// the script (upstream's SIGALRM walked the process tree instead).

const DEFAULT_KILL_GRACE_MS = 5000;

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
  /** Shutdown: SIGTERM to the group, SIGKILL after killGraceMs. */
  readonly signal?: AbortSignal;
  readonly killGraceMs?: number;
  /** Where the script's stdout and stderr go (default: the agent's stderr). */
  readonly output?: number | 'ignore';
}

export async function runScript(options: RunScriptOptions): Promise<ScriptResult> {
  const started = process.hrtime.bigint();
  const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
  const output = options.output ?? 2;
  const stdio: StdioOptions = ['inherit', output, output];
  // Born with the neutral oom_score_adj, not the agent's -500 (docs/systemd.md).
  const child = startBornNeutral(() => spawn(options.file, [], { env: { ...options.env }, stdio, detached: true }));
  let timedOut = false;
  let aborted = false;
  const timers: NodeJS.Timeout[] = [];
  const killGroup = (sig: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      // The group is gone already.
    }
  };
  if (options.deadline !== undefined) {
    timers.push(
      setTimeout(
        () => {
          timedOut = true;
          killGroup('SIGKILL');
        },
        Math.max(0, options.deadline - performance.now()),
      ),
    );
  }
  const onAbort = () => {
    aborted = true;
    killGroup('SIGTERM');
    timers.push(setTimeout(() => killGroup('SIGKILL'), options.killGraceMs ?? DEFAULT_KILL_GRACE_MS));
  };
  try {
    return await new Promise<ScriptResult>((resolve) => {
      child.once('error', (err: NodeJS.ErrnoException) => {
        resolve({
          exitCode: null,
          signal: null,
          timedOut,
          aborted,
          spawnError: err.code ?? err.message,
          seconds: seconds(),
        });
      });
      child.once('exit', (exitCode, signal) => {
        // Leftovers of a killed script's group go too.
        if (timedOut || aborted) killGroup('SIGKILL');
        resolve({ exitCode, signal, timedOut, aborted, seconds: seconds() });
      });
      if (options.signal?.aborted) onAbort();
      else options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  } finally {
    for (const t of timers) clearTimeout(t);
    options.signal?.removeEventListener('abort', onAbort);
  }
}
