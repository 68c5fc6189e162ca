// The one place a hook process is started (the only execa import, loaded on first use so that commands which run no
// hook do not pay for it at start-up). The hook gets no arguments (never a shell string), the deployment JSON on
// stdin and an explicit environment. It runs in its own process group, so a timeout or shutdown kills everything it
// started, not just the hook. Output is captured without ever killing the hook for talking too much (execa's
// maxBuffer would): past the cap only the tail is kept, which is what a signal keeps anyway. Once the hook exits,
// processes it left in the background get a short grace to close its output pipes, then are no longer waited for
// (upstream waited for them forever).

export const HOOK_OUTPUT_CAP_BYTES = 16 * 1024 * 1024;
const DEFAULT_KILL_GRACE_MS = 5000;
const DEFAULT_EXIT_GRACE_MS = 1000;

export interface RunHookOptions {
  readonly file: string;
  /** Written to the hook's stdin (the deployment as JSON). */
  readonly input: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Milliseconds before the process group is terminated (0: no limit). */
  readonly timeoutMs: number;
  /** Bytes of stdout and of stderr kept (the tail past this). */
  readonly maxBufferBytes?: number;
  /** Milliseconds between SIGTERM and SIGKILL of the process group. */
  readonly killGraceMs?: number;
  /** Milliseconds to wait, after the hook exits, for leftover processes to close its output. */
  readonly exitGraceMs?: number;
  /** Aborted on shutdown: the process group is terminated and the result marked aborted. */
  readonly signal?: AbortSignal;
  /** Called once the hook process exists, with its pid (which is also its process-group id). */
  readonly onSpawn?: (pid: number) => void;
}

export interface HookResult {
  /** Exit status, or null when the hook was killed by a signal or never started. */
  readonly exitCode: number | null;
  /** Name of the signal that killed the hook (SIGKILL, SIGSEGV, ...). */
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  /** The hook could not be started at all (ENOENT, EACCES, ENOEXEC). */
  readonly spawnError?: { readonly code: string; readonly message: string };
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly durationMs: number;
}

export type HookRunner = (options: RunHookOptions) => Promise<HookResult>;

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

export const runHook: HookRunner = async (options) => {
  const started = Date.now();
  const cap = options.maxBufferBytes ?? HOOK_OUTPUT_CAP_BYTES;
  const out = new TailBuffer(cap);
  const err = new TailBuffer(cap);
  let timedOut = false;
  let aborted = false;
  const timers: NodeJS.Timeout[] = [];

  const { execa } = await import('execa');
  const subprocess = execa(options.file, [], {
    input: options.input,
    env: options.env ?? process.env,
    extendEnv: false,
    buffer: false,
    reject: false,
    detached: true,
    stdout: 'pipe',
    stderr: 'pipe',
  });
  if (subprocess.pid !== undefined) options.onSpawn?.(subprocess.pid);
  subprocess.stdout?.on('data', (c: Buffer) => out.push(c));
  subprocess.stderr?.on('data', (c: Buffer) => err.push(c));

  const killGroup = (sig: NodeJS.Signals) => {
    if (subprocess.pid === undefined) return;
    try {
      process.kill(-subprocess.pid, sig);
    } catch {
      // The group is already gone.
    }
  };
  const terminate = () => {
    killGroup('SIGTERM');
    timers.push(setTimeout(() => killGroup('SIGKILL'), options.killGraceMs ?? DEFAULT_KILL_GRACE_MS));
  };
  if (options.timeoutMs > 0) {
    timers.push(
      setTimeout(() => {
        timedOut = true;
        terminate();
      }, options.timeoutMs),
    );
  }
  const onAbort = () => {
    aborted = true;
    terminate();
  };
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  subprocess.once('exit', () => {
    timers.push(
      setTimeout(() => {
        subprocess.stdout?.destroy();
        subprocess.stderr?.destroy();
      }, options.exitGraceMs ?? DEFAULT_EXIT_GRACE_MS),
    );
  });

  try {
    const result = await subprocess;
    // Whatever survived a timeout or shutdown in the hook's group goes now.
    if (timedOut || aborted) killGroup('SIGKILL');
    const exitCode = typeof result.exitCode === 'number' ? result.exitCode : null;
    const signal = result.signal ?? null;
    const spawnCode = exitCode === null && signal === null ? (result as { code?: unknown }).code : undefined;
    return {
      exitCode,
      signal,
      timedOut,
      aborted,
      ...(spawnCode !== undefined || (exitCode === null && signal === null)
        ? { spawnError: { code: typeof spawnCode === 'string' ? spawnCode : 'ESPAWN', message: result.originalMessage ?? result.shortMessage ?? 'the hook could not be started' } }
        : {}),
      stdout: out.text(),
      stderr: err.text(),
      stdoutTruncated: out.truncated,
      stderrTruncated: err.truncated,
      durationMs: Date.now() - started,
    };
  } finally {
    for (const t of timers) clearTimeout(t);
    options.signal?.removeEventListener('abort', onAbort);
  }
};
