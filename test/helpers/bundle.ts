import { spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
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
