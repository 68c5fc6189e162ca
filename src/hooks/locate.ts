import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import type { PathMapper } from '../util/rooted-path.js';
import { hookNameForGroup } from '../heat/component.js';
import { executableStatus } from '../util/executable.js';
import { describeUntrusted, TRUST_FIX, TrustCheck } from '../util/trust.js';

// Hook lookup as heat-config does it: the sanitised group name in each hook directory, in order; the first entry
// that exists wins (a dangling link does not exist, as for os.path.exists). Upstream then tries to run whatever it
// found; here a found file that cannot be run is reported, so the failure can be signalled at once: not a regular
// file, no execute permission (util/executable.ts), or refused by the trust rule (util/trust.ts: the hook, its
// directory or a directory above them owned by another user or writable by others; a hook run as root from there
// would be anyone's code).

export interface FoundHook {
  readonly path: string;
  readonly runnable: boolean;
  /** Why it cannot run, for the failure signal. */
  readonly problem?: string;
  /** What the operator can do about it. */
  readonly fix?: string;
  /** The error code of a hook refused by the trust rule. */
  readonly code?: 'ERR_UNTRUSTED_PATH';
}

export interface HookLookup {
  /** Sanitised group name. */
  readonly name: string;
  /** Directories searched, in order. */
  readonly searched: readonly string[];
  readonly found?: FoundHook;
}

/** $HEAT_CONFIG_HOOKS (mapped under --root) first, as upstream, then [deploy] hooks_dir in order. */
export function hookDirs(config: AgentConfig, paths: PathMapper, env: NodeJS.ProcessEnv = process.env): string[] {
  const dirs: string[] = [];
  const fromEnv = env.HEAT_CONFIG_HOOKS;
  if (fromEnv) dirs.push(paths.map(fromEnv));
  for (const dir of config.deploy.hooks_dir) if (!dirs.includes(dir)) dirs.push(dir);
  return dirs;
}

export async function findHook(group: string, dirs: readonly string[]): Promise<HookLookup> {
  const name = hookNameForGroup(group);
  if (name === '') return { name, searched: dirs };
  const trust = new TrustCheck();
  for (const dir of dirs) {
    const file = path.join(dir, name);
    const status = await executableStatus(file);
    if (status.kind === 'absent') continue;
    const verdict = trust.judge(file);
    if (verdict.kind === 'untrusted') {
      const problem = `is not trusted: ${describeUntrusted(file, verdict.at, verdict.problem)}`;
      const found = { path: file, runnable: false, problem, fix: TRUST_FIX, code: 'ERR_UNTRUSTED_PATH' } as const;
      return { name, searched: dirs, found };
    }
    switch (status.kind) {
      case 'executable':
        return { name, searched: dirs, found: { path: file, runnable: true } };
      case 'not-a-file':
        return { name, searched: dirs, found: { path: file, runnable: false, problem: 'is not a regular file' } };
      case 'not-executable': {
        const mode = status.mode.toString(8).padStart(4, '0');
        return {
          name,
          searched: dirs,
          found: { path: file, runnable: false, problem: `is not executable (mode ${mode})` },
        };
      }
    }
  }
  return { name, searched: dirs };
}
