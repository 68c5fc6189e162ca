import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BUILTIN_HOOK_GROUPS } from '../../src/hooks/registry.js';
import { REPO, requireBundle } from '../helpers/bundle.js';

// Runs this repository's diskimage-builder elements the way disk-image-create does, minus the chroot:
// - mergeHooks: every directory of every chosen element is merged into one hooks tree, refusing a file name two
//   elements share (DIB's generate_hooks/copy_hooks_not_overwrite);
// - runPhase: a phase's scripts run in C-locale name order, each in a fresh bash that has sourced every
//   environment.d file first (dib-run-parts), with a minimal environment (nothing leaks in from the test process).
// install.d scripts write below OS_CONFIG_AGENT_TARGET_ROOT; runPhase refuses to run them without one, because
// these tests run as root and an empty prefix would install into the real system.

export const ELEMENTS_DIR = path.join(REPO, 'elements');
/** Every built-in hook group has its element heat-config-<group>. */
export const HOOK_GROUPS: readonly string[] = BUILTIN_HOOK_GROUPS;
export const ALL_ELEMENTS = ['os-config-agent', ...HOOK_GROUPS.map((g) => `heat-config-${g}`)];

export function mergeHooks(
  elements: readonly string[],
  dest: string,
  elementDirs: readonly string[] = [ELEMENTS_DIR],
): void {
  mkdirSync(dest, { recursive: true });
  for (const element of elements) {
    const dir = elementDirs.map((d) => path.join(d, element)).find((d) => existsSync(d));
    if (!dir) throw new Error(`element ${element} not found in ${elementDirs.join(':')}`);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const from = path.join(dir, entry.name);
      if (!entry.isDirectory()) {
        cpSync(from, path.join(dest, entry.name));
        continue;
      }
      if (entry.name === 'tests' || entry.name === '__pycache__') continue;
      mkdirSync(path.join(dest, entry.name), { recursive: true });
      for (const name of readdirSync(from)) {
        const target = path.join(dest, entry.name, name);
        if (existsSync(target)) throw new Error(`duplicated hook in the elements: ${element}/${entry.name}/${name}`);
        cpSync(path.join(from, name), target, { recursive: true, verbatimSymlinks: true });
      }
    }
  }
}

export interface PhaseResult {
  ok: boolean;
  /** stdout and stderr of every script run, in order. */
  output: string;
  /** The script that failed, if one did. */
  failed?: string;
}

/**
 * What every phase gets unless a test says otherwise: the Node.js fetch goes to a closed loopback port (never the
 * real registry) and caches next to the hooks tree (never in the tester's home).
 */
function phaseEnv(hooks: string, env: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    LC_ALL: 'C',
    TMP_HOOKS_PATH: hooks,
    DIB_OS_CONFIG_AGENT_NODE_REGISTRY: 'http://127.0.0.1:9',
    DIB_IMAGE_CACHE: path.join(path.dirname(hooks), 'image-cache'),
    ...env,
  };
}

function phaseScripts(hooks: string, phase: string, env: Record<string, string>): string[] {
  const dir = path.join(hooks, `${phase}.d`);
  if (!existsSync(dir)) return [];
  if (phase !== 'extra-data' && !env.OS_CONFIG_AGENT_TARGET_ROOT)
    throw new Error(`refusing to run ${phase}.d without OS_CONFIG_AGENT_TARGET_ROOT`);
  return readdirSync(dir)
    .filter((n) => statSync(path.join(dir, n)).isFile())
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

const RUN_SCRIPT = 'set -eu; for f in "$TMP_HOOKS_PATH"/environment.d/*; do [ -f "$f" ] && . "$f"; done; exec "$0"';

export function runPhase(hooks: string, phase: string, env: Record<string, string>): PhaseResult {
  let output = '';
  for (const name of phaseScripts(hooks, phase, env)) {
    const r = spawnSync('bash', ['-c', RUN_SCRIPT, path.join(hooks, `${phase}.d`, name)], {
      env: phaseEnv(hooks, env),
      encoding: 'utf8',
      timeout: 60_000,
    });
    output += `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (r.status !== 0) return { ok: false, output, failed: name };
  }
  return { ok: true, output };
}

/** runPhase without blocking the event loop, for phases that talk to a server in the test process. */
export async function runPhaseAsync(hooks: string, phase: string, env: Record<string, string>): Promise<PhaseResult> {
  let output = '';
  for (const name of phaseScripts(hooks, phase, env)) {
    const child = spawn('bash', ['-c', RUN_SCRIPT, path.join(hooks, `${phase}.d`, name)], {
      env: phaseEnv(hooks, env),
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (status !== 0) return { ok: false, output, failed: name };
  }
  return { ok: true, output };
}

/**
 * An os-config-agent source as the element expects one: the build (dist/, its hooks made unexecutable as a copy
 * without modes would have them) and the unit from this repository.
 */
export function makeSource(dir: string, options: { omitHooks?: readonly string[] } = {}): string {
  mkdirSync(path.join(dir, 'dist'), { recursive: true });
  const dist = path.dirname(requireBundle());
  for (const name of readdirSync(dist)) {
    if (name !== 'hooks' && !name.endsWith('.deb'))
      cpSync(path.join(dist, name), path.join(dir, 'dist', name), { recursive: true });
  }
  cpSync(path.join(REPO, 'systemd'), path.join(dir, 'systemd'), { recursive: true });
  // The built hooks (dist/hooks/<group>), with the modes a copy without them would have.
  mkdirSync(path.join(dir, 'dist/hooks'), { recursive: true });
  for (const group of HOOK_GROUPS) {
    if (options.omitHooks?.includes(group)) continue;
    const target = path.join(dir, 'dist/hooks', group);
    cpSync(path.join(path.dirname(requireBundle()), 'hooks', group), target);
    chmodSync(target, 0o644);
  }
  cpSync(path.join(path.dirname(requireBundle()), 'hooks/package.json'), path.join(dir, 'dist/hooks/package.json'));
  return dir;
}

/** A Node.js release tarball stand-in: node-v<version>-linux-x64/bin/node runs this test's own Node.js. */
export function makeNodeTarball(dir: string, version = '20.0.0'): string {
  const top = `node-v${version}-linux-x64`;
  const work = path.join(dir, 'node-work');
  mkdirSync(path.join(work, top, 'bin'), { recursive: true });
  writeFileSync(path.join(work, top, 'bin/node'), `#!/bin/sh\nexec '${process.execPath}' "$@"\n`, { mode: 0o755 });
  writeFileSync(path.join(work, top, 'LICENSE'), 'Node.js licence text stand-in\n');
  mkdirSync(path.join(work, top, 'include/node'), { recursive: true });
  writeFileSync(path.join(work, top, 'include/node/node.h'), '/* headers are not installed */\n');
  const tarball = path.join(dir, `${top}.tar.xz`);
  const r = spawnSync('tar', ['-cJf', tarball, '-C', work, top], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar failed: ${r.stderr}`);
  return tarball;
}

export interface Installed {
  root: string;
  hooks: string;
  output: string;
}

/** extra-data.d then install.d of `elements` into `root`; throws with the output when a phase fails. */
export function installElements(
  dir: string,
  elements: readonly string[],
  env: Record<string, string>,
  elementDirs?: readonly string[],
): Installed {
  const root = path.join(dir, 'root');
  const hooks = path.join(dir, 'hooks');
  mkdirSync(root, { recursive: true });
  mergeHooks(elements, hooks, elementDirs);
  const fullEnv = { DIB_INIT_SYSTEM: 'systemd', OS_CONFIG_AGENT_TARGET_ROOT: root, ...env };
  let output = '';
  for (const phase of ['extra-data', 'install']) {
    const r = runPhase(hooks, phase, fullEnv);
    output += r.output;
    if (!r.ok) throw new Error(`${phase}.d/${r.failed} failed:\n${r.output}`);
  }
  return { root, hooks, output };
}
