import { constants as fsConstants, promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import type { PathMapper } from '../util/rooted-path.js';
import { hookNameForGroup } from '../heat/component.js';

// Hook lookup as heat-config does it: the sanitised group name in each hook directory, in order; the first entry
// that exists wins. Upstream then tries to run whatever it found; here a found file that cannot be run (not a
// regular file, no execute permission) is reported, so the failure can be signalled at once.

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
    let st;
    try {
      // stat follows symlinks: a dangling link does not exist, as for os.path.exists.
      st = await fs.stat(file);
    } catch {
      continue;
    }
    if (!st.isFile())
      return { name, searched: dirs, found: { path: file, runnable: false, problem: 'is not a regular file' } };
    try {
      await fs.access(file, fsConstants.X_OK);
    } catch {
      return {
        name,
        searched: dirs,
        found: {
          path: file,
          runnable: false,
          problem: `is not executable (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')})`,
        },
      };
    }
    return { name, searched: dirs, found: { path: file, runnable: true } };
  }
  return { name, searched: dirs };
}
