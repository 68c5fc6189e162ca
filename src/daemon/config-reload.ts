import { registerConfigSecrets } from '../config/config-secrets.js';
import { loadConfig, type ConfigSources, type LoadedConfig } from '../config/load.js';
import { logProblems } from '../config/log-problems.js';
import type { Logger } from '../log/logger.js';

// Reading the configuration again (SIGHUP, config files changed by a pipeline, self-configuration). A file that cannot
// be read now, being replaced or made unreadable by a permission mistake, keeps the configuration in force: the last
// good one stays, secrets and all.

/** The configuration read anew, or undefined when the one in force is kept (the reason is logged). */
export async function reloadConfig(
  current: LoadedConfig,
  sources: ConfigSources,
  log: Logger,
): Promise<LoadedConfig | undefined> {
  try {
    const next = await loadConfig(sources);
    logProblems(next, log);
    const unread = unreadableFiles(current, next);
    if (unread.length === 0) return next;
    registerConfigSecrets(current.config);
    log.error(
      {
        code: 'ERR_CONFIG_UNREADABLE',
        files: unread.map((f) => next.paths.unmap(f)),
        reason: 'a config file could not be read',
      },
      'configuration reload failed; keeping the previous configuration',
    );
  } catch (err) {
    log.error({ err }, 'configuration reload failed; keeping the previous configuration');
  }
  return undefined;
}

/**
 * The config files a reload could not read: those it says so of (unreadable, or a --config-file/--config-dir that is
 * gone), and the main file read before when no main file is found now (deleted, or replaced in two steps). A conf.d
 * file that is gone is a change like any other.
 */
function unreadableFiles(before: LoadedConfig, next: LoadedConfig): string[] {
  const files = next.problems.flatMap((p) => (p.unreadable === true && p.file !== undefined ? [p.file] : []));
  if (next.hashedFiles.length === 0) files.push(...before.hashedFiles);
  return files;
}
