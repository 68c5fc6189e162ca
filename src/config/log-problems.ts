import type { Logger } from '../log/logger.js';
import type { LoadedConfig } from './load.js';

// Configuration problems (unknown options, bad values, files that cannot be read) are logged, never fatal: one line
// each, file and line in fields, by every command that loads the configuration.

export function logProblems(loaded: LoadedConfig, log: Logger): void {
  for (const p of loaded.problems) {
    const fields = {
      code: p.unreadable === true ? ('ERR_CONFIG_UNREADABLE' as const) : ('ERR_CONFIG_INVALID' as const),
      file: p.file ? loaded.paths.unmap(p.file) : undefined,
      line: p.line,
      section: p.section,
      option: p.option,
      problem: p.message,
    };
    if (p.severity === 'error') log.error(fields, 'configuration problem');
    else log.warn(fields, 'configuration problem');
  }
}
