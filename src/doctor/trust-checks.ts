import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { hookDirs } from '../hooks/locate.js';
import { resolveBaseDir } from '../refresh/base-dir.js';
import { environmentFiles } from '../refresh/environment-d.js';
import { PHASES } from '../refresh/phase-runner.js';
import { selectRunParts } from '../refresh/run-parts-selection.js';
import { describeUntrusted, TRUST_FIX, TrustCheck } from '../util/trust.js';
import { fail, ok, type CheckResult } from './check.js';

// The trust rule (util/trust.ts) over everything the agent runs or reads as root, one check per kind of place, judged
// as the agent judges it when it uses them: a failing check here is something the agent refuses (a source made
// unavailable, a hook or a phase not run, a cycle that cannot write its state).

interface Place {
  readonly id: string;
  /** What the agent does when the rule fails there. */
  readonly refusal: string;
  readonly paths: () => Promise<readonly string[]>;
}

export async function trustChecks(loaded: LoadedConfig, env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  const c = loaded.config;
  const places: Place[] = [
    { id: 'state_dir', refusal: 'no deployment runs', paths: async () => [c.agent.state_dir] },
    { id: 'cachedir', refusal: 'no cycle is cached or committed', paths: async () => [c.DEFAULT.cachedir] },
    {
      id: 'deployed_dir',
      refusal: 'whoever can write it can mark deployments as deployed',
      paths: async () => [c.deploy.deployed_dir],
    },
    { id: 'hooks_dir', refusal: 'such a hook is not run', paths: () => withEntries(hookDirs(c, loaded.paths, env)) },
    { id: 'refresh', refusal: 'the phase is not run', paths: () => phasePaths(loaded, env) },
    { id: 'heat_local', refusal: 'the heat_local source is unavailable', paths: async () => c.heat_local.path },
    { id: 'local', refusal: 'the local source is unavailable', paths: () => withEntries(c.local.path) },
  ];
  return Promise.all(places.map((place) => placeCheck(loaded, place)));
}

async function placeCheck(loaded: LoadedConfig, place: Place): Promise<CheckResult> {
  const id = `trust.${place.id}`;
  const shown = (p: string) => loaded.paths.unmap(p);
  const trust = new TrustCheck();
  const refused: string[] = [];
  let present = 0;
  for (const p of (await place.paths()).filter((x) => x !== '')) {
    const verdict = trust.judge(p);
    if (verdict.kind === 'trusted') present++;
    if (verdict.kind === 'untrusted')
      refused.push(`${shown(p)} is not trusted: ${describeUntrusted(shown(p), shown(verdict.at), verdict.problem)}`);
  }
  if (refused.length === 0)
    return ok(id, present === 0 ? 'nothing there yet' : `${present} checked: none writable by another user`);
  const more = refused.length > 1 ? ` (and ${refused.length - 1} more)` : '';
  return fail(id, `${refused[0]}${more}; ${place.refusal}`, TRUST_FIX);
}

/** The phase directories, environment.d and the files in them the next refresh would run or source. */
async function phasePaths(loaded: LoadedConfig, env: NodeJS.ProcessEnv): Promise<string[]> {
  const base = await resolveBaseDir({ configured: loaded.config.refresh.base_dir, env, paths: loaded.paths });
  const envDir = path.join(base, 'environment.d');
  const out = [base, envDir, ...(await environmentFiles(envDir))];
  for (const phase of [...PHASES, 'error']) {
    const dir = path.join(base, `${phase}.d`);
    out.push(dir, ...(await selectRunParts(dir)).map((name) => path.join(dir, name)));
  }
  return out;
}

/** Directories and what is in them (hooks, local data files). */
async function withEntries(dirs: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const dir of dirs) {
    out.push(dir);
    const names = await readdir(dir).catch(() => []);
    for (const name of names) if (!name.startsWith('.')) out.push(path.join(dir, name));
  }
  return out;
}
