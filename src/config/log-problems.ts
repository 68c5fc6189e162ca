import type { Logger } from '../log/logger.js';
import type { LoadedConfig } from './load.js';

// Configuration problems (unknown options, bad values) are logged, never fatal: one line each, file and line in
// fields, by every command that loads the configuration.

export function logProblems(loaded: LoadedConfig, log: Logger): void {
  for (const p of loaded.problems) {
    const fields = {
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
