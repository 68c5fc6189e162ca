import { spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Tests of the command line run the real bundle, as an instance would. `npm test` builds it first.
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BUNDLE = path.join(REPO, 'dist/os-config-agent.mjs');

export function requireBundle(): string {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "node scripts/build.mjs" (npm test builds it)`);
  return BUNDLE;
}

export interface BundleRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `file` with `args` (stdin closed) and collects its output. Bounded: a process still running after `timeoutMs`
 * is killed (code null), so a command that never exits fails its test instead of hanging it.
 */
export function runProcess(
  file: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {},
): Promise<BundleRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: options.env ?? process.env,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The file of dist/ that each command name starts, as the build lists it (dist/command-names.json). */
export function commandEntries(): Record<string, string> {
  const list = JSON.parse(readFileSync(path.join(REPO, 'dist/command-names.json'), 'utf8')) as {
    entries: Record<string, string>;
  };
  return list.entries;
}

/**
 * The built bundle laid out in `dir` as the image element and the Debian package lay it out: the entries and their
 * chunks, and a link named after each of `names` to the entry it starts.
 */
export function installBundle(dir: string, names: readonly string[]): void {
  const entries = commandEntries();
  mkdirSync(dir, { recursive: true });
  for (const entry of new Set(Object.values(entries))) cpSync(path.join(REPO, 'dist', entry), path.join(dir, entry));
  cpSync(path.join(REPO, 'dist/chunks'), path.join(dir, 'chunks'), { recursive: true });
  for (const name of names) {
    const entry = entries[name];
    if (entry === undefined) throw new Error(`${name} is not a command name of the build`);
    symlinkSync(entry, path.join(dir, name));
  }
}

/** Runs the bundle with `args` as runProcess does; `entry`: another launcher of the same build (dist/bin/<compat name>). */
export function runBundle(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; entry?: string } = {},
): Promise<BundleRun> {
  const { entry, ...rest } = options;
  return runProcess(process.execPath, [entry ?? requireBundle(), ...args], rest);
}

/** The built-in hooks the build made (dist/hooks/<group>, nothing else) installed into a hooks directory, as the elements do. */
export function installBuiltinHooks(hooksDir: string): void {
  const built = path.join(REPO, 'dist/hooks');
  if (!existsSync(path.join(built, 'script')))
    throw new Error(`${built}/script is missing: run "node scripts/build.mjs" (npm test builds it)`);
  mkdirSync(hooksDir, { recursive: true });
  for (const name of readdirSync(built)) {
    if (name === 'package.json') continue;
    cpSync(path.join(built, name), path.join(hooksDir, name));
    chmodSync(path.join(hooksDir, name), 0o755);
  }
}
