import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseDeployment } from '../../src/heat/deployment.js';
import { loadBuiltinHook } from '../../src/hooks/registry.js';
import { runInProcess } from '../../src/hooks/host/in-process.js';
import { REPO } from '../helpers/bundle.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { captureLog } from '../helpers/log-capture.js';

// Runs the built-in hooks both ways the agent does: as the executables the build makes (dist/hooks/<group>: one
// deployment JSON on stdin, stdout parsed as the result JSON) and inside the agent (runInProcess). Either way with a
// fixed environment (nothing leaks in from the test process).

export const HOOKS_DIR = path.join(REPO, 'dist/hooks');
export const FAKE_TOOLS = path.join(REPO, 'test/fixtures/fake-tools');
/** A PATH that finds this test's node (the hooks' #! line) and the system tools, but no fake. */
export const SYSTEM_PATH = `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`;

export type HookResult = Record<string, unknown>;

export interface HookRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  result: HookResult;
  pid: number;
}

export interface RunOptions {
  env?: Record<string, string>;
  /** Called once the hook has started (to signal it, for instance). */
  started?: (pid: number) => void;
  timeoutMs?: number;
}

/** Runs dist/hooks/<file> (or an absolute path) with `stdin` (JSON-encoded unless it is a string). */
export function runHook(file: string, stdin: unknown, options: RunOptions = {}): Promise<HookRun> {
  const hook = path.isAbsolute(file) ? file : path.join(HOOKS_DIR, file);
  return new Promise((resolve, reject) => {
    const child = spawn(hook, [], { env: options.env ?? {}, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      let result: HookResult = {};
      try {
        result = JSON.parse(stdout) as HookResult;
      } catch {
        // Left empty: the test's assertions on the result then fail, showing stdout.
      }
      resolve({ code, signal, stdout, stderr: Buffer.concat(err).toString('utf8'), result, pid: child.pid ?? 0 });
    });
    if (child.pid !== undefined) options.started?.(child.pid);
    child.stdin.end(typeof stdin === 'string' ? stdin : JSON.stringify(stdin));
  });
}

/**
 * Runs the built-in hook of `group` inside this process, as the agent's dispatcher does, and answers as the
 * executable would have: its result as stdout, its log lines as stderr, exit status 0 (1 when it crashed).
 */
export async function runHookInProcess(group: string, stdin: unknown, options: RunOptions = {}): Promise<HookRun> {
  const hook = await loadBuiltinHook(group);
  if (!hook) throw new Error(`no built-in hook for group ${group}`);
  const parsed = parseDeployment(typeof stdin === 'string' ? JSON.parse(stdin) : stdin);
  if (!parsed.ok) throw new Error(`not a deployment the agent would run: ${parsed.reason}`);
  const res = await runInProcess({
    hook,
    deployment: parsed.deployment,
    env: options.env ?? {},
    log: captureLog().log,
    timeoutMs: options.timeoutMs ?? 60_000,
    ...(options.started ? { onSpawn: options.started } : {}),
  });
  let result: HookResult = {};
  try {
    result = JSON.parse(res.stdout) as HookResult;
  } catch {
    // Left empty, as for the executable.
  }
  return {
    code: res.exitCode,
    signal: res.signal as NodeJS.Signals | null,
    stdout: res.stdout,
    stderr: res.stderr,
    result,
    pid: 0,
  };
}

export type HookRunFn = (group: string, stdin: unknown, options?: RunOptions) => Promise<HookRun>;

/** The two ways a built-in hook runs; a test of hook behaviour runs in each. */
export const HOOK_MODES: ReadonlyArray<{ readonly name: string; readonly run: HookRunFn }> = [
  { name: 'executable', run: runHook },
  { name: 'in-process', run: runHookInProcess },
];

/** Working and outputs directories (not created: the hook must create them) plus a HOME, all under a test dir. */
export function hookDirs(t: TapTest, group: string): { dir: string; working: string; outputs: string; home: string } {
  const dir = t.testdir();
  const home = path.join(dir, 'home');
  mkdirSync(home);
  return {
    dir,
    working: path.join(dir, 'lib', `heat-config-${group}`),
    outputs: path.join(dir, 'run', `heat-config-${group}`),
    home,
  };
}

/** Secret inputs every test deployment carries: their values must never reach a hook's log. */
export const SECRET_INPUTS = [
  { name: 'deploy_password', value: 'pw-0123456789' },
  { name: 'deploy_signal_id', value: 'http://127.0.0.1:1/v1/signal/arn?Signature=sig-abcdef' },
  { name: 'db_secret', value: 'dbsecret-987' },
  { name: 'api_token', value: { token: 'tok-555' } },
];

/** The deploy_* inputs Heat adds to every deployment (no credentials). */
export const DEPLOY_INPUTS = [
  { name: 'deploy_server_id', value: 'server-1' },
  { name: 'deploy_action', value: 'CREATE' },
  { name: 'deploy_stack_id', value: 'stack/0001' },
  { name: 'deploy_resource_name', value: 'deployment' },
  { name: 'deploy_signal_transport', value: 'CFN_SIGNAL' },
  { name: 'deploy_signal_verb', value: 'POST' },
];

/** Asserts that no secret input value (nor its JSON form) appears in the text. */
export function assertNoSecrets(t: TapTest, text: string, what: string): void {
  for (const { name, value } of SECRET_INPUTS) {
    const shown = typeof value === 'string' ? value : JSON.stringify(value);
    t.notOk(text.includes(shown), `${what} does not show ${name}`);
  }
  t.notOk(text.includes('tok-555'), `${what} does not show the token inside a structured secret`);
}

export interface ToolRecord {
  tool: string;
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  files: Record<string, { content?: string; mode?: string; error?: string }>;
}

/** The invocations a recording fake tool made (test/fixtures/fake-tools/record.mjs). */
export function readRecords(file: string): ToolRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ToolRecord);
}

/** Permission bits of a path, as an octal string. */
export function modeOf(p: string): string {
  return (statSync(p).mode & 0o777).toString(8);
}
