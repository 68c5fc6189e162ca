import { spawn, type ChildProcess } from 'node:child_process';
import { startBornNeutral } from './oom-score.js';
import { scopeCommand } from './systemd-scope.js';
import { TailBuffer } from './tail-buffer.js';

// The one place the agent's collectors and deployments start a process: a hook executable, the tool a built-in hook
// drives (bash, puppet, ansible-playbook, chef-client, salt-call, git, hostname), a system tool a collector needs
// (blkid, mount, bsdtar, mcopy), a phase script, environment.d's bash, an executable template, the `command`
// pipeline's shell, getent, sync. A shell only where the caller names one: a file and an argument list. Node's own
// child_process, so that a built-in hook bundled as a single file carries nothing more. Lint refuses child_process
// anywhere else in src/.
//
// A process the agent starts runs in its own process group (`detached`), so a timeout or a shutdown kills everything
// it started, not just itself; SIGTERM first, SIGKILL after a grace period (or at once, where the caller's upstream
// did so). Output is captured without killing the process for talking too much: past the cap only the tail is kept,
// which is what a signal keeps anyway (a caller whose output is worthless cut short, a file's body, asks for a kill at
// the cap). Once the process exits, processes it left in the background get a short grace to close its output pipes
// and are then no longer waited for (upstream waited for them forever). Each child is born with a neutral
// oom_score_adj (oom-score.ts), and every start and end is told to the daemon's watchdog (unless `unobserved`).

export const OUTPUT_CAP_BYTES = 16 * 1024 * 1024;
const DEFAULT_KILL_GRACE_MS = 5000;
const DEFAULT_EXIT_GRACE_MS = 1000;

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

/**
 * Where stdout or stderr goes: 'capture' (default), kept in the result; 'inherit', the agent's own; 'ignore',
 * /dev/null; or a descriptor of the agent (2: a phase script's output on the agent's stderr).
 */
export type OutputTarget = 'capture' | 'inherit' | 'ignore' | number;

export interface ProcessOptions {
  readonly file: string;
  readonly args?: readonly string[];
  readonly cwd?: string;
  /** The whole environment (nothing of the agent's is added). */
  readonly env?: NodeJS.ProcessEnv;
  /** Written to stdin; stdin is closed at once when absent. */
  readonly input?: string;
  /** Without `input`: 'inherit' gives the process the agent's stdin (a phase script's, as dib-run-parts did). */
  readonly stdin?: 'inherit';
  readonly stdout?: OutputTarget;
  readonly stderr?: OutputTarget;
  /** Milliseconds before the process is terminated (0: no limit). */
  readonly timeoutMs?: number;
  /** Bytes of stdout and of stderr kept (the tail past this). */
  readonly maxBufferBytes?: number;
  /**
   * What captured output past maxBufferBytes does: 'keep-tail' (default) keeps the tail and lets the process run;
   * 'kill' kills its group at once and marks the result `overflowed` (for output that is worthless cut short: a
   * file's body).
   */
  readonly overflow?: 'keep-tail' | 'kill';
  /** What the timeout sends: SIGTERM, then SIGKILL after killGraceMs (default); or SIGKILL at once. */
  readonly timeoutSignal?: 'SIGTERM' | 'SIGKILL';
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
  /** Run as this user and group (ids; the supplementary groups are dropped): cfn-hup's `runas`. */
  readonly uid?: number;
  readonly gid?: number;
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
  /** Killed because its captured output passed maxBufferBytes (overflow 'kill'). */
  readonly overflowed: boolean;
  /** The process could not be started at all (ENOENT, EACCES, ENOEXEC). */
  readonly spawnError?: { readonly code: string; readonly message: string };
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly durationMs: number;
}

export function runProcess(options: ProcessOptions): Promise<ProcessResult> {
  return new Promise<ProcessResult>((resolve) => new ProcessRun(options, resolve).start());
}

type SpawnFailure = { code: string; message: string };

/** One run of one process, from its start to its result. */
class ProcessRun {
  // Monotonic: a step of the wall clock must not make a run look long or negative.
  private readonly startedAt = performance.now();
  private readonly ownGroup: boolean;
  private readonly out: TailBuffer;
  private readonly err: TailBuffer;
  private readonly timers: NodeJS.Timeout[] = [];
  private timedOut = false;
  private aborted = false;
  private overflowed = false;
  private child: ChildProcess | undefined;
  private readonly onAbort = () => {
    this.aborted = true;
    this.terminate();
  };

  constructor(
    private readonly options: ProcessOptions,
    private readonly resolve: (result: ProcessResult) => void,
  ) {
    this.ownGroup = options.ownGroup ?? true;
    const cap = options.maxBufferBytes ?? OUTPUT_CAP_BYTES;
    this.out = new TailBuffer(cap);
    this.err = new TailBuffer(cap);
  }

  start(): void {
    const options = this.options;
    try {
      const command =
        options.scopeProperties && options.scopeProperties.length > 0
          ? scopeCommand(options.file, options.args ?? [], options.scopeProperties)
          : { file: options.file, args: options.args ?? [] };
      this.child = startBornNeutral(
        () =>
          spawn(command.file, command.args, {
            cwd: options.cwd,
            env: options.env ?? process.env,
            detached: this.ownGroup,
            stdio: [stdinOf(options), outputOf(options.stdout), outputOf(options.stderr), ...(options.passFds ?? [])],
            ...(options.uid !== undefined ? { uid: options.uid } : {}),
            ...(options.gid !== undefined ? { gid: options.gid } : {}),
          }),
        options.oomScoreAdj,
      );
    } catch (e) {
      // Synchronous failures: a bad argument (a NUL in the environment, a cwd that is not a string).
      const error = e as NodeJS.ErrnoException;
      this.finish(null, null, { code: error.code ?? 'ESPAWN', message: error.message });
      return;
    }
    const proc = this.child;
    // Without a pid the start failed (ENOENT, EACCES): 'error' says why. After a successful start an error is about
    // signalling the process, whose end still comes through 'close'.
    proc.once('error', (e: NodeJS.ErrnoException) => {
      if (proc.pid === undefined) this.finish(null, null, { code: e.code ?? 'ESPAWN', message: e.message });
    });
    if (proc.pid === undefined) return;
    this.watch(proc, proc.pid);
  }

  /** A started process: its output, input, limits and end. */
  private watch(proc: ChildProcess, pid: number): void {
    const options = this.options;
    options.onSpawn?.(pid);
    if (!options.unobserved) {
      for (const o of observers) o.started(pid, options.timeoutMs ?? 0);
      proc.once('close', () => {
        for (const o of observers) o.ended(pid);
      });
    }
    proc.stdout?.on('data', (c: Buffer) => this.keep(this.out, c));
    proc.stderr?.on('data', (c: Buffer) => this.keep(this.err, c));
    if (proc.stdin) {
      // A process that never reads its stdin is not a failure: EPIPE is expected then.
      proc.stdin.on('error', () => undefined);
      proc.stdin.end(options.input);
    }
    if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
      this.timers.push(
        setTimeout(() => {
          this.timedOut = true;
          if (options.timeoutSignal === 'SIGKILL') this.kill('SIGKILL');
          else this.terminate();
        }, options.timeoutMs),
      );
    }
    if (options.signal?.aborted) this.onAbort();
    else options.signal?.addEventListener('abort', this.onAbort, { once: true });
    proc.once('exit', () => {
      this.timers.push(
        setTimeout(() => {
          proc.stdout?.destroy();
          proc.stderr?.destroy();
        }, options.exitGraceMs ?? DEFAULT_EXIT_GRACE_MS),
      );
    });
    proc.once('close', (code, signal) => this.finish(code, signal));
  }

  private keep(into: TailBuffer, chunk: Buffer): void {
    into.push(chunk);
    if (into.truncated && this.options.overflow === 'kill' && !this.overflowed) {
      this.overflowed = true;
      this.kill('SIGKILL');
    }
  }

  private finish(exitCode: number | null, signal: string | null, spawnError?: SpawnFailure): void {
    for (const t of this.timers) clearTimeout(t);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    // Whatever survived a timeout or shutdown in the group goes now.
    if ((this.timedOut || this.aborted || this.overflowed) && this.ownGroup) this.kill('SIGKILL');
    this.resolve({
      exitCode,
      signal,
      timedOut: this.timedOut,
      aborted: this.aborted,
      overflowed: this.overflowed,
      ...(spawnError ? { spawnError } : {}),
      stdout: this.out.text(),
      stderr: this.err.text(),
      stdoutTruncated: this.out.truncated,
      stderrTruncated: this.err.truncated,
      durationMs: Math.round(performance.now() - this.startedAt),
    });
  }

  private kill(sig: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    try {
      if (this.ownGroup) process.kill(-pid, sig);
      else this.child?.kill(sig);
    } catch {
      // Already gone.
    }
  }

  private terminate(): void {
    this.kill('SIGTERM');
    this.timers.push(setTimeout(() => this.kill('SIGKILL'), this.options.killGraceMs ?? DEFAULT_KILL_GRACE_MS));
  }
}

function stdinOf(options: ProcessOptions): 'pipe' | 'inherit' | 'ignore' {
  if (options.input !== undefined) return 'pipe';
  return options.stdin ?? 'ignore';
}

function outputOf(target: OutputTarget = 'capture'): 'pipe' | 'inherit' | 'ignore' | number {
  return target === 'capture' ? 'pipe' : target;
}
