import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installBuiltinHooks, requireBundle } from './bundle.js';
import type { Orchestrator } from './orchestrator/orchestrator.js';

// Shared pieces of the fault-injection, secrets and soak tests: the bundled daemon started in its own process group
// under --root (so a SIGKILL of the group takes its hooks too), an instance root prepared for the simulated
// orchestrator, shell hooks that count their runs, a seeded PRNG, and readers of what the agent left on disk.

export interface Daemon {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Parsed stdout lines (JSON logs). */
  readonly lines: Array<Record<string, unknown>>;
  /** Every stdout line and every stderr chunk, as text. */
  readonly raw: string[];
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
}

export interface StartOptions {
  readonly env?: Record<string, string>;
  readonly args?: readonly string[];
  /** Extra node flags (before the bundle path). */
  readonly nodeArgs?: readonly string[];
  /** Another copy of the bundle's entry (default: the shared snapshot). */
  readonly bundle?: string;
}

let snapshot: string | undefined;

/**
 * A private copy of the bundle: the bundle is self-contained, and a rebuild of dist/ (which deletes it first) while a
 * long fault run restarts the daemon a hundred times must not break the run. Named by content, so test processes
 * share one copy per build and nothing accumulates in the temp directory.
 */
export function bundleSnapshot(): string {
  if (snapshot && existsSync(snapshot)) return snapshot;
  const data = readFileSync(requireBundle());
  // The entry names its chunks by content hash, so the entry's hash names the whole build.
  const dir = path.join(os.tmpdir(), `oca-bundle-${createHash('sha256').update(data).digest('hex').slice(0, 16)}`);
  const file = path.join(dir, 'os-config-agent.mjs');
  if (!existsSync(file)) {
    const tmp = `${dir}.${process.pid}.tmp`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    cpSync(path.join(path.dirname(requireBundle()), 'chunks'), path.join(tmp, 'chunks'), { recursive: true });
    writeFileSync(path.join(tmp, 'os-config-agent.mjs'), data);
    try {
      renameSync(tmp, dir);
    } catch {
      // Another test process made the same snapshot first.
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  snapshot = file;
  return file;
}

export function startDaemon(root: string, options: StartOptions = {}): Daemon {
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), options.bundle ?? bundleSnapshot(), 'run', '--root', root, ...(options.args ?? [])],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env, ...options.env },
    },
  );
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  let buf = '';
  child.stdout!.on('data', (c: Buffer) => {
    buf += c.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      raw.push(line);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ msg: 'unparseable', line });
      }
    }
  });
  child.stderr!.on('data', (c: Buffer) => raw.push(c.toString()));
  let exited = false;
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      exited = true;
      resolve({ code, signal });
    }),
  );
  return { child, pid: child.pid!, lines, raw, exit, alive: () => !exited };
}

/**
 * What systemd does to the unit's cgroup when the agent dies (KillMode=mixed ends with SIGKILL to every process of
 * the cgroup before a restart): the daemon is frozen (so it starts nothing more), then it and every descendant's
 * process group are SIGKILLed. Hooks run in process groups of their own, so killing the daemon's group alone would
 * leave a running hook behind as an orphan.
 */
export async function killTree(d: Daemon): Promise<void> {
  try {
    process.kill(d.pid, 'SIGSTOP');
  } catch {
    await d.exit;
    return;
  }
  // kill() returns once the signal is queued; until the daemon has stopped it may still start a hook, which the list
  // below would miss and which would run on as an orphan (and finish before the next life ran it again).
  await stopped(d.pid);
  const all = [d.pid, ...descendants(d.pid)];
  for (const pid of all) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Not a group leader, or gone.
      }
    }
  }
  await d.exit;
}

/** Resolves once `pid` is stopped (state T in /proc) or gone; bounded, so a kernel that never reports it cannot hang. */
async function stopped(pid: number): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    let state: string | undefined;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    } catch {
      return;
    }
    if (state === 'T' || state === 't' || state === 'Z' || state === 'X') return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

function descendants(pid: number): number[] {
  const out: number[] = [];
  for (const child of childPids(pid)) out.push(child, ...descendants(child));
  return out;
}

/** SIGTERM, then SIGKILL of the group if it does not stop within `ms`. Returns the exit. */
export async function stopDaemon(
  d: Daemon,
  ms = 10_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (!d.alive()) return d.exit;
  d.child.kill('SIGTERM');
  const timer = setTimeout(() => void killTree(d), ms);
  const result = await d.exit;
  clearTimeout(timer);
  return result;
}

export async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface RootOptions {
  /** Extra INI text appended to /etc/os-collect-config.conf (sections [agent], [deploy], [cfn]...). */
  readonly config?: string;
  /** INI text for /etc/os-collect-config.conf.d/test.conf: kept when the agent rewrites its main file from Heat. */
  readonly confd?: string;
  /** Shell hooks to install: group name -> body (after the shebang). */
  readonly hooks?: Record<string, string>;
  /** Polling intervals (seconds). */
  readonly minPoll?: number;
  readonly poll?: number;
}

/** A cold instance root: heat_local data from the orchestrator, the bundled hooks plus test hooks, one template. */
export function prepareRoot(dir: string, o: Orchestrator, options: RootOptions = {}): string {
  const root = path.join(dir, 'root');
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/os-collect-config.conf'),
    '[DEFAULT]\ncollectors = heat_local\ncollectors = local\n' +
      `min_polling_interval = ${options.minPoll ?? 0.1}\npolling_interval = ${options.poll ?? 0.3}\n` +
      '[agent]\npoll_jitter = 0\nwatch = false\n' +
      (options.config ?? ''),
    { mode: 0o600 },
  );
  if (options.confd) {
    mkdirSync(path.join(root, 'etc/os-collect-config.conf.d'), { recursive: true });
    writeFileSync(path.join(root, 'etc/os-collect-config.conf.d/test.conf'), options.confd, { mode: 0o600 });
  }
  const cfnInit = path.join(root, 'var/lib/heat-cfntools/cfn-init-data');
  mkdirSync(path.dirname(cfnInit), { recursive: true, mode: 0o700 });
  writeFileSync(cfnInit, JSON.stringify(o.metadata()), { mode: 0o600 });
  installBuiltinHooks(path.join(root, 'var/lib/heat-config/hooks'));
  for (const [name, body] of Object.entries(options.hooks ?? {})) writeHook(root, name, body);
  const templates = path.join(root, 'usr/libexec/os-apply-config/templates/etc/app');
  mkdirSync(templates, { recursive: true });
  writeFileSync(path.join(templates, 'app.conf'), 'port = {{app.port}}\n');
  return root;
}

export function writeHook(root: string, group: string, body: string): string {
  const file = path.join(root, 'var/lib/heat-config/hooks', group);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/**
 * A config for the built-in script hook that counts like countingHook: the deployment id is the last part of
 * $heat_outputs_path. Run by the agent's own script hook, which the daemon runs in-process.
 */
export function countingScript(sleepSeconds = 0): string {
  return [
    '#!/bin/sh',
    'id=$(basename "$heat_outputs_path")',
    'echo "start $id" >> "$COUNTER_FILE"',
    sleepSeconds > 0 ? `sleep ${sleepSeconds}` : ':',
    'echo "end $id" >> "$COUNTER_FILE"',
    'echo "ran $id"',
  ].join('\n');
}

/**
 * Shell for a counting hook: appends "start <id>" and, after `sleepSeconds`, "end <id>" to $COUNTER_FILE. The agent
 * sends compact JSON with "id" first, so sed finds it.
 */
export function countingHook(sleepSeconds = 0): string {
  return [
    'input=$(cat)',
    'id=$(printf \'%s\' "$input" | sed -n \'s/^{"id": "\\([^"]*\\)".*/\\1/p\')',
    'echo "start $id" >> "$COUNTER_FILE"',
    sleepSeconds > 0 ? `sleep ${sleepSeconds}` : ':',
    'echo "end $id" >> "$COUNTER_FILE"',
    'printf \'{"deploy_stdout": "ran %s", "deploy_stderr": "", "deploy_status_code": 0}\' "$id"',
  ].join('\n');
}

/** The counter file as events, in order. */
export function counterEvents(file: string): Array<{ event: 'start' | 'end'; id: string }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [event, id] = l.split(' ');
      return { event: event as 'start' | 'end', id: id ?? '' };
    });
}

/** Mulberry32: a small seeded PRNG, so a failing trial sequence can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every regular file under dir (symlinks not followed). */
export function walkFiles(dir: string): string[] {
  const out: string[] = [];
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    if (st.isDirectory()) out.push(...walkFiles(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

/**
 * Files under dir meant to hold JSON (*.json, *.json.last, *.json.orig; not in-flight dot temp files) that don't parse.
 * `inFlight` also leaves out the backup's staging copies (`<backup_cachedir>.tmp-<pid>/`): one killed mid-copy holds
 * files cut short until the next life's backup removes it (metadata-cache.ts), so only a check after a kill passes it.
 */
export function invalidJsonFiles(dir: string, options: { inFlight?: boolean } = {}): string[] {
  const bad: string[] = [];
  for (const f of walkFiles(dir)) {
    const base = path.basename(f);
    if (base.startsWith('.') || !/\.json(\.last|\.orig)?$/.test(base)) continue;
    if (options.inFlight && inBackupStaging(dir, f)) continue;
    try {
      JSON.parse(readFileSync(f, 'utf8'));
    } catch {
      bad.push(f);
    }
  }
  return bad;
}

function inBackupStaging(dir: string, file: string): boolean {
  return path
    .relative(dir, file)
    .split(path.sep)
    .some((part) => /\.tmp-\d+$/.test(part));
}

export interface RecordView {
  id: string;
  state: string;
  hookStarts: number;
  signal: { state: string; attempts: number };
}

/** The deployment state records on disk, by id. */
export function readRecords(root: string): Map<string, RecordView> {
  const dir = path.join(root, 'var/lib/os-config-agent/deployments');
  const out = new Map<string, RecordView>();
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.json') || name.startsWith('.')) continue;
    const r = JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as RecordView;
    out.set(r.id, r);
  }
  return out;
}

export const CACHE_DIR = 'var/lib/os-collect-config';

/** The deployments ids of a cached metadata file, or undefined when it is absent. */
export function cachedDeploymentIds(root: string, file: string): string[] | undefined {
  const p = path.join(root, CACHE_DIR, file);
  if (!existsSync(p)) return undefined;
  const doc = JSON.parse(readFileSync(p, 'utf8')) as { deployments?: Array<{ id: string }> };
  return (doc.deployments ?? []).map((d) => d.id);
}

/** Live direct children of a process (scans /proc: /proc/<pid>/task/<tid>/children is not always built in). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // Fields after the command (which may hold spaces) start after the last ')'.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[1]) === pid) out.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** A /proc/<pid>/status field in kB (VmRSS, VmHWM). */
export function statusKb(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether process `pid` is gone within `ms` (looked at every 20 ms): a killed group's background child, say. */
export async function pidGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

/** A log line's level as a number (the agent logs pino's labels; numbers are accepted too). */
export function levelOf(line: Record<string, unknown>): number {
  return typeof line.level === 'number' ? line.level : (LEVELS[String(line.level)] ?? 0);
}

/** Log lines at error level or above. */
export function errorLines(d: Daemon): Array<Record<string, unknown>> {
  return d.lines.filter((l) => levelOf(l) >= 50);
}
