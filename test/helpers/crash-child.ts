import { spawn } from 'node:child_process';
import path from 'node:path';
import { build } from 'esbuild';
import { REPO } from './bundle.js';

// The child processes of the SIGKILL trials (test/deploy/crash-resume, grouped-writes-crash, test/signals/
// signal-crash): a test module bundled once, then run again and again, killed at a chosen write and restarted.

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
}

/** Bundles `source` (a path in the repository) into `dir`; its dependencies stay in node_modules, where they resolve. */
export async function bundleChild(source: string, dir: string): Promise<string> {
  const bundle = path.join(dir, `${path.basename(source, '.ts')}.mjs`);
  await build({
    entryPoints: [path.join(REPO, source)],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'error',
  });
  return bundle;
}

/** Runs a bundled child to its end (SIGKILLed after 60 s, so a hung child cannot hang the test). */
export function runChild(
  bundle: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ChildResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bundle, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}
