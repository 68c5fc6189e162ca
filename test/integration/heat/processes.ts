import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import net from 'node:net';

// Processes the real-Heat harness starts: each in its own process group with its output in a log file, so that
// stopping it (or the test process dying) takes down exactly what the harness started and nothing else.

export interface Service {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logFile: string;
  /** Resolves with the exit code (or the signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** Process-group signal, then SIGKILL after `graceMs`; resolves when the leader has exited. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();

/** How long a stop waits for the process to go after its SIGKILL before giving up on it. */
const STOP_BOUND_MS = 10_000;

/** `promise`'s value, or `onTimeout` once `ms` have passed (the timer keeps nothing alive). */
export function within<T, U>(promise: Promise<T>, ms: number, onTimeout: U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<U>((resolve) => {
    timer = setTimeout(resolve, ms, onTimeout);
    timer.unref();
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Stop `child` and its process group: `first()` (the polite signal), SIGKILL of the group after `graceMs`, then SIGKILL
 * of whatever the leader left in its group. The wait is bounded: a process stuck in the kernel ignores even SIGKILL for
 * a while, and a teardown must not hang on it. Resolves with `exited`'s value, or a sentence saying the leader stayed.
 */
export async function stopGroup<T>(
  child: ChildProcess,
  exited: Promise<T>,
  first: () => void,
  graceMs: number,
): Promise<T | string> {
  if (child.exitCode !== null || child.signalCode !== null) {
    // The leader is gone; anything it left in its group goes too.
    killGroup(child, 'SIGKILL');
    return exited;
  }
  first();
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
  const bound = graceMs + STOP_BOUND_MS;
  const result = await within(exited, bound, `still running ${bound} ms after the first signal`);
  clearTimeout(timer);
  // Children of the leader that ignored the first signal.
  killGroup(child, 'SIGKILL');
  return result;
}

/** Synchronous last resort: SIGKILL every group still running (process exit; SIGALRM is how tap ends a test file at its timeout). */
function killAllSync(): void {
  for (const child of live) killGroup(child, 'SIGKILL');
  live.clear();
}

/** Kill `child`'s process group if this process ends while it runs; returns the function that forgets it. */
export function guardGroup(child: ChildProcess): () => void {
  installExitGuards();
  live.add(child);
  return () => live.delete(child);
}

let guardsInstalled = false;
function installExitGuards(): void {
  if (guardsInstalled) return;
  guardsInstalled = true;
  process.on('exit', killAllSync);
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGALRM'] as const) {
    const onSignal = () => {
      killAllSync();
      process.off(sig, onSignal);
      // Keep the default outcome (death by this signal) unless someone else handles it.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is gone already
  }
}

export interface StartOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly logFile: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly uid?: number;
  readonly gid?: number;
}

export function startService(opts: StartOptions): Service {
  const log = createWriteStream(opts.logFile, { flags: 'a' });
  const spawnOptions: SpawnOptions = {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: opts.env ?? process.env,
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
    ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
  };
  const child = spawn(opts.command, [...opts.args], spawnOptions);
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const exited = new Promise<number | string>((resolve) => {
    child.once('error', (err) => resolve(`spawn error: ${err.message}`));
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const forget = guardGroup(child);
  const service: Service = {
    name: opts.name,
    child,
    logFile: opts.logFile,
    exited,
    async stop(signal = 'SIGTERM', graceMs = 10_000) {
      await stopGroup(child, exited, () => killGroup(child, signal), graceMs);
      forget();
      log.end();
    },
  };
  return service;
}

/** Runs a command to completion (output to the log file); throws with the log's tail when it fails. */
export async function runStep(opts: StartOptions & { timeoutMs: number }): Promise<void> {
  const s = startService(opts);
  const timer = setTimeout(() => killGroup(s.child, 'SIGKILL'), opts.timeoutMs);
  const result = await s.exited;
  clearTimeout(timer);
  await s.stop('SIGKILL');
  if (result !== 0) throw new Error(`${opts.name} failed (${result}); see ${opts.logFile}:\n${tail(opts.logFile)}`);
}

export function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `probe` until it returns true; fails early when `service` exits, and at `timeoutMs`. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  service?: Service,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | string | undefined;
  void service?.exited.then((r) => (exited = r));
  for (;;) {
    if (exited !== undefined && service)
      throw new Error(
        `${service.name} exited (${exited}) before ${what}; see ${service.logFile}:\n${tail(service.logFile)}`,
      );
    try {
      if (await probe()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${service ? `; see ${service.logFile}:\n${tail(service.logFile)}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** True when something answers HTTP at `url` (any status). */
export async function answersHttp(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  await res.arrayBuffer();
  return true;
}
