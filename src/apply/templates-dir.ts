import type { Logger } from '../log/logger.js';
import { isDirectory } from '../util/path-kind.js';
import type { PathMapper } from '../util/rooted-path.js';

// The template root when none is configured, resolved as os-apply-config does: $OS_CONFIG_APPLIER_TEMPLATES; else an
// old /opt/stack location only if it is a directory and the current default is not; else the current default. The
// checks and the result go through the path mapper, so --root relocates them.

export const DEFAULT_TEMPLATES_DIR = '/usr/libexec/os-apply-config/templates';
const OLD_TEMPLATES_DIRS = ['/opt/stack/os-apply-config/templates', '/opt/stack/os-config-applier/templates'] as const;

export interface TemplatesDirChoice {
  /** Mapped path of the template root. */
  dir: string;
  /** Set when a deprecated location was chosen (callers log it). */
  deprecated: boolean;
}

export async function resolveTemplatesDir(
  configured: string | undefined,
  paths: PathMapper,
  env: NodeJS.ProcessEnv,
): Promise<TemplatesDirChoice> {
  if (configured) return { dir: configured, deprecated: false };
  const fromEnv = env.OS_CONFIG_APPLIER_TEMPLATES;
  if (fromEnv !== undefined) return { dir: paths.map(fromEnv), deprecated: false };
  const old = isDirectory(paths.map(OLD_TEMPLATES_DIRS[0])) ? OLD_TEMPLATES_DIRS[0] : OLD_TEMPLATES_DIRS[1];
  if (isDirectory(paths.map(old)) && !isDirectory(paths.map(DEFAULT_TEMPLATES_DIR)))
    return { dir: paths.map(old), deprecated: true };
  return { dir: paths.map(DEFAULT_TEMPLATES_DIR), deprecated: false };
}

/** The template root, with the one warning every apply path gives when it is a deprecated location. */
export async function chooseTemplatesDir(
  configured: string | undefined,
  paths: PathMapper,
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<string> {
  const choice = await resolveTemplatesDir(configured, paths, env);
  if (choice.deprecated) log.warn({ templates: paths.unmap(choice.dir) }, 'deprecated template directory in use');
  return choice.dir;
}
