import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Tests of the command line run the real bundle, as an instance would. `npm test` builds it first.
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BUNDLE = path.join(REPO, 'dist/os-config-agent.mjs');

export function requireBundle(): string {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "node scripts/build.mjs" (npm test builds it)`);
  return BUNDLE;
}
