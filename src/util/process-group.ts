import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { scopeCommand } from './systemd-scope.js';

// The one place the agent's collectors and deployments start a process: a hook executable, the tool a built-in hook
// drives (bash, puppet, ansible-playbook, chef-client, salt-call, git, hostname), a system tool a collector needs
// (blkid, mount, bsdtar, mcopy). Never through a shell: a file and an argument list. Node's own child_process, so that
// a built-in hook bundled as a single file carries nothing more.
//
// A process the agent starts runs in its own process group (`detached`), so a timeout or a shutdown kills everything
// it started, not just itself; SIGTERM first, SIGKILL after a grace period. Output is captured without ever killing
// the process for talking too much: past the cap only the tail is kept, which is what a signal keeps anyway. Once
// the process exits, processes it left in the background get a short grace to close its output pipes and are then
// no longer waited for (upstream waited for them forever).
//
// The agent's unit gives it a negative oom_score_adj so that the kernel kills a runaway deployment before the agent.
// Children inherit that value at fork, and Node offers no hook between fork and exec, so the agent raises its own
// value to CHILD_OOM_SCORE_ADJ for the instant of the (synchronous) spawn and lowers it back at once: the child is
// born with the neutral value, and so is everything it starts, however early. Lowering back needs no privilege down
// to the lowest value systemd gave the process (the kernel's oom_score_adj_min); where the first try shows it cannot
// (a process that lowered its value without that floor), the agent keeps its own value and writes the child's
// /proc/<pid>/oom_score_adj right after the spawn instead, which leaves a process the tool forks in its first
// instant at the agent's value (docs/systemd.md).

export const OUTPUT_CAP_BYTES = 16 * 1024 * 1024;
const DEFAULT_KILL_GRACE_MS = 5000;
const DEFAULT_EXIT_GRACE_MS = 1000;
/** The kernel's neutral value: a deployment's processes are judged like any other process. */
export const CHILD_OOM_SCORE_ADJ = 0;

/** Told about every process started here: the daemon's watchdog treats a start or an end as progress. */
export interface ProcessObserver {
  started(pid: number, timeoutMs: number): void;
  ended(pid: number): void;
}

const observers = new Set<ProcessObserver>();

/** Registers an observer of process starts and ends; returns the function that removes it. */
export function observeProcesses(observer: ProcessObserver): () => void {
  observers.add(observer);
  return () => observers.delete(observer);
}

let ownOomScoreAdj: number | undefined;
/** Whether the agent can lower its value back after raising it for a spawn; undefined until first needed. */
let canLowerBack: boolean | undefined;

/** This process's oom_score_adj, read once (0 where /proc cannot tell). */
function readOwnOomScoreAdj(): number {
  if (ownOomScoreAdj === undefined) {
    try {
      ownOomScoreAdj = Number.parseInt(readFileSync('/proc/self/oom_score_adj', 'utf8'), 10) || 0;
    } catch {
      ownOomScoreAdj = 0;
    }
  }
  return ownOomScoreAdj;
}

function writeOomScoreAdj(pid: number | 'self', value: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/oom_score_adj`, `${value}\n`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether raising the agent's own value for a spawn is safe: tried once with one step up and back, so a process
 * that cannot lower its value again loses nothing that matters.
 */
function lowerBackWorks(own: number): boolean {
  if (canLowerBack === undefined) {
    canLowerBack = own < 1000 && writeOomScoreAdj('self', own + 1) && writeOomScoreAdj('self', own);
  }
  return canLowerBack;
}

/**
 * Runs `start` (a synchronous spawn) so that the process it starts is born with oom_score_adj `target` when the
 * agent's own is lower; returns what `start` returned and whether the child still needs raising afterwards.
 */
export function spawnWithOomScoreAdj<T>(
  start: () => T,
  target: number = CHILD_OOM_SCORE_ADJ,
  own: number = readOwnOomScoreAdj(),
): { value: T; raiseAfter: boolean } {
  if (own >= target) return { value: start(), raiseAfter: false };
  if (!lowerBackWorks(own) || !writeOomScoreAdj('self', target)) return { value: start(), raiseAfter: true };
  try {
    return { value: start(), raiseAfter: false };
  } finally {
    // Cannot fail after the probe succeeded; if it somehow did, later spawns fall back to raising after the fact.
    if (!writeOomScoreAdj('self', own)) canLowerBack = false;
  }
}

/** Raises a child's oom_score_adj to `target` when the agent's own is lower; a failure only leaves it as inherited. */
export function raiseOomScoreAdj(
  pid: number,
  target: number = CHILD_OOM_SCORE_ADJ,
  own: number = readOwnOomScoreAdj(),
): boolean {
  if (own >= target) return false;
  // The process may already be gone; it then needs no adjustment.
  return writeOomScoreAdj(pid, target);
}

export interface ProcessOptions {
  readonly file: string;
  readonly args?: readonly string[];
  readonly cwd?: string;
  /** The whole environment (nothing of the agent's is added). */
  readonly env?: NodeJS.ProcessEnv;
  /** Written to stdin; stdin is closed at once when absent. */
  readonly input?: string;
  /** Milliseconds before the process is terminated (0: no limit). */
  readonly timeoutMs?: number;
  /** Bytes of stdout and of stderr kept (the tail past this). */
  readonly maxBufferBytes?: number;
  /** Milliseconds between SIGTERM and SIGKILL. */
  readonly killGraceMs?: number;
  /** Milliseconds to wait, after the process exits, for leftover processes to close its output. */
  readonly exitGraceMs?: number;
  /** Aborted on shutdown: the process is terminated and the result marked aborted. */
  readonly signal?: AbortSignal;
  /** Called once the process exists, with its pid (with a group of its own, also the group id). */
  readonly onSpawn?: (pid: number) => void;
  /**
   * true (default): a process group of its own, killed whole. false: stays in the caller's group (a standalone hook's
   * tool, which the agent kills together with the hook), and termination signals the process alone.
   */
  readonly ownGroup?: boolean;
  /**
   * Run the process inside a transient systemd scope with these unit properties (MemoryMax=1G, CPUQuota=50%,
   * TasksMax=512) through systemd-run, which then becomes the process itself (same pid, same group). Only when
   * systemd is the init system: the caller decides (src/util/systemd-scope.ts).
   */
  readonly scopeProperties?: readonly string[];
  /** Not reported to observers: the watchdog's own feeds must not count as the loop's progress. */
  readonly unobserved?: boolean;
  /** The oom_score_adj the process starts with when the agent's own is lower (tests raise it to see it applied). */
  readonly oomScoreAdj?: number;
  /** Open descriptors of the agent the process gets as its fds 3, 4, ... (the same open files, not copies). */
  readonly passFds?: readonly number[];
}

export interface ProcessResult {
  /** Exit status, or null when the process was killed by a signal or never started. */
  readonly exitCode: number | null;
  /** Name of the signal that killed it (SIGKILL, SIGSEGV, ...). */
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  /** The process could not be started at all (ENOENT, EACCES, ENOEXEC). */
  readonly spawnError?: { readonly code: string; readonly message: string };
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly durationMs: number;
}

/** Keeps the last `cap` bytes written to it. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.cap) {
      const first = this.chunks[0]!;
      const excess = this.size - this.cap;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
      this.truncated = true;
    }
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

export function runProcess(options: ProcessOptions): Promise<ProcessResult> {
  const started = Date.now();
  const cap = options.maxBufferBytes ?? OUTPUT_CAP_BYTES;
  const ownGroup = options.ownGroup ?? true;
  const out = new TailBuffer(cap);
  const err = new TailBuffer(cap);
  let timedOut = false;
  let aborted = false;
  const timers: NodeJS.Timeout[] = [];

  return new Promise<ProcessResult>((resolve) => {
    let child: ChildProcess | undefined;
    let raiseAfter = false;
    const finish = (exitCode: number | null, signal: string | null, spawnError?: { code: string; message: string }) => {
      for (const t of timers) clearTimeout(t);
      options.signal?.removeEventListener('abort', onAbort);
      // Whatever survived a timeout or shutdown in the group goes now.
      if ((timedOut || aborted) && ownGroup) kill('SIGKILL');
      resolve({
        exitCode,
        signal,
        timedOut,
        aborted,
        ...(spawnError ? { spawnError } : {}),
        stdout: out.text(),
        stderr: err.text(),
        stdoutTruncated: out.truncated,
        stderrTruncated: err.truncated,
        durationMs: Date.now() - started,
      });
    };
    const kill = (sig: NodeJS.Signals) => {
      if (child?.pid === undefined) return;
      try {
        if (ownGroup) process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        // Already gone.
      }
    };
    const terminate = () => {
      kill('SIGTERM');
      timers.push(setTimeout(() => kill('SIGKILL'), options.killGraceMs ?? DEFAULT_KILL_GRACE_MS));
    };
    const onAbort = () => {
      aborted = true;
      terminate();
    };

    try {
      const command =
        options.scopeProperties && options.scopeProperties.length > 0
          ? scopeCommand(options.file, options.args ?? [], options.scopeProperties)
          : { file: options.file, args: options.args ?? [] };
      const spawned = spawnWithOomScoreAdj(
        () =>
          spawn(command.file, command.args, {
            cwd: options.cwd,
            env: options.env ?? process.env,
            detached: ownGroup,
            stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', ...(options.passFds ?? [])],
          }),
        options.oomScoreAdj,
      );
      child = spawned.value;
      raiseAfter = spawned.raiseAfter;
    } catch (e) {
      // Synchronous failures: a bad argument (a NUL in the environment, a cwd that is not a string).
      const error = e as NodeJS.ErrnoException;
      finish(null, null, { code: error.code ?? 'ESPAWN', message: error.message });
      return;
    }
    const proc = child;
    // Without a pid the start failed (ENOENT, EACCES): 'error' says why. After a successful start an error is about
    // signalling the process, whose end still comes through 'close'.
    proc.once('error', (e: NodeJS.ErrnoException) => {
      if (proc.pid === undefined) finish(null, null, { code: e.code ?? 'ESPAWN', message: e.message });
    });
    if (proc.pid === undefined) return;
    const pid = proc.pid;
    if (raiseAfter) raiseOomScoreAdj(pid, options.oomScoreAdj);
    options.onSpawn?.(pid);
    if (!options.unobserved) {
      for (const o of observers) o.started(pid, options.timeoutMs ?? 0);
      proc.once('close', () => {
        for (const o of observers) o.ended(pid);
      });
    }
    proc.stdout!.on('data', (c: Buffer) => out.push(c));
    proc.stderr!.on('data', (c: Buffer) => err.push(c));
    if (proc.stdin) {
      // A process that never reads its stdin is not a failure: EPIPE is expected then.
      proc.stdin.on('error', () => undefined);
      proc.stdin.end(options.input);
    }
    if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
      timers.push(
        setTimeout(() => {
          timedOut = true;
          terminate();
        }, options.timeoutMs),
      );
    }
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    proc.once('exit', () => {
      timers.push(
        setTimeout(() => {
          proc.stdout?.destroy();
          proc.stderr?.destroy();
        }, options.exitGraceMs ?? DEFAULT_EXIT_GRACE_MS),
      );
    });
    proc.once('close', (code, signal) => finish(code, signal));
  });
}
