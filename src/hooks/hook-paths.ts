import path from 'node:path';
import { ROOT_ENV } from '../util/rooted-path.js';

// Where a hook's files go: the upstream variable when it is set and not empty, else upstream's default, placed under
// OS_CONFIG_AGENT_ROOT (set by the agent under --root, so a test or the demo never writes to the real /var).

/** A path from the variable, else the default under OS_CONFIG_AGENT_ROOT. */
export function pathSetting(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const value = env[name];
  return value ? value : underRoot(env, fallback);
}

/** An absolute default path under OS_CONFIG_AGENT_ROOT when that is set. */
export function underRoot(env: NodeJS.ProcessEnv, file: string): string {
  const root = env[ROOT_ENV];
  return root ? path.join(root, file) : file;
}

/** The directory a hook's files must stay in: OS_CONFIG_AGENT_ROOT when set (tests, the demo), else "/". */
export function hookRoot(env: NodeJS.ProcessEnv): string {
  return env.OS_CONFIG_AGENT_ROOT || '/';
}

/** A command from the variable when set and not empty, else the upstream default. */
export function commandSetting(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const value = env[name];
  return value ? value : fallback;
}
