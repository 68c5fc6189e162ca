import type { Logger } from '../log/logger.js';
import { isDirectory } from '../util/path-kind.js';
import type { PathMapper } from '../util/rooted-path.js';

// Where the phase directories live, as os-refresh-config decides it: $OS_REFRESH_CONFIG_BASE_DIR if set, else the
// deprecated /opt/stack/os-config-refresh when only that one exists, else /usr/libexec/os-refresh-config. The agent's
// `[refresh] base_dir` option, when set, comes first. Every candidate is an instance path, mapped under --root.

export const DEFAULT_BASE_DIR = '/usr/libexec/os-refresh-config';
export const OLD_BASE_DIR = '/opt/stack/os-config-refresh';
export const BASE_DIR_ENV = 'OS_REFRESH_CONFIG_BASE_DIR';

export interface ResolveBaseDirOptions {
  /** `[refresh] base_dir` (already mapped by the config loader), if set. */
  readonly configured?: string | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly paths: PathMapper;
  readonly log?: Logger;
}

export async function resolveBaseDir(options: ResolveBaseDirOptions): Promise<string> {
  if (options.configured) return options.configured;
  const fromEnv = options.env[BASE_DIR_ENV];
  // Upstream uses an empty value verbatim (phase dirs relative to the working directory); here it means unset.
  if (fromEnv !== undefined && fromEnv !== '') return options.paths.map(fromEnv);
  const current = options.paths.map(DEFAULT_BASE_DIR);
  const old = options.paths.map(OLD_BASE_DIR);
  if (isDirectory(old) && !isDirectory(current)) {
    options.log?.warn({ baseDir: old, recommended: current }, 'deprecated base directory in use');
    return old;
  }
  return current;
}
