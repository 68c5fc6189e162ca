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

/** The built-in hooks the build made (dist/hooks/<group>, nothing else) installed into a hooks directory, as the elements do. */
export function installBuiltinHooks(hooksDir: string): void {
  const built = path.join(REPO, 'dist/hooks');
  if (!existsSync(path.join(built, 'script'))) throw new Error(`${built}/script is missing: run "node scripts/build.mjs" (npm test builds it)`);
  mkdirSync(hooksDir, { recursive: true });
  for (const name of readdirSync(built)) {
    if (name === 'package.json') continue;
    cpSync(path.join(built, name), path.join(hooksDir, name));
    chmodSync(path.join(hooksDir, name), 0o755);
  }
}
