import { chmodSync, mkdirSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';

// Phase-directory trees for the refresh tests: every script appends its phase and name (and optionally a variable)
// to a trace file, so tests compare the order of execution and what the scripts saw.

export function traceScript(trace: string, opts: { exit?: number; show?: string; extra?: string } = {}): string {
  const show = opts.show ? ` ${opts.show}=\${${opts.show}-unset}` : '';
  return `#!/bin/bash\necho "$(basename "$(dirname "$0")")/$(basename "$0")${show}" >> '${trace}'\n${opts.extra ?? ''}\nexit ${opts.exit ?? 0}\n`;
}

export function writeScript(file: string, body: string, mode = 0o755): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, body);
  chmodSync(file, mode);
}

export function readTrace(trace: string): string[] {
  return existsSync(trace)
    ? readFileSync(trace, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];
}
