import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import type { PathMapper } from '../util/rooted-path.js';
import { hookNameForGroup } from '../heat/component.js';
import { executableStatus } from '../util/executable.js';

// Hook lookup as heat-config does it: the sanitised group name in each hook directory, in order; the first entry
// that exists wins (a dangling link does not exist, as for os.path.exists). Upstream then tries to run whatever it
// found; here a found file that cannot be run (not a regular file, no execute permission: util/executable.ts) is
// reported, so the failure can be signalled at once.

export interface FoundHook {
  readonly path: string;
  readonly runnable: boolean;
  /** Why it cannot run, for the failure signal. */
  readonly problem?: string;
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
  for (const dir of dirs) {
    const file = path.join(dir, name);
    const status = await executableStatus(file);
    switch (status.kind) {
      case 'absent':
        continue;
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
