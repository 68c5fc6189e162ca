import pino from 'pino';
import type { LoadedConfig } from '../config/load.js';
import { createLogger, fdDestination, type Logger, type LogLevel } from '../log/logger.js';

// The log of both apply commands (`os-config-agent apply` and `os-apply-config`): stderr, since --key prints data on
// stdout, and upstream's log file where it is asked for.

const LEGACY_LOG_FILE = '/var/log/os-apply-config.log';

/** stderr logger, plus upstream's root-only /var/log/os-apply-config.log when [apply] legacy_log_file is set. */
export function createApplyLogger(loaded: LoadedConfig | undefined, level: LogLevel): Logger {
  const legacy = loaded?.config.apply.legacy_log_file === true && process.geteuid?.() === 0;
  if (!legacy || !loaded) return createLogger({ level, destination: 'stderr', buffered: true });
  const file = pino.destination({ dest: loaded.paths.map(LEGACY_LOG_FILE), append: true, sync: true, mkdir: true });
  const stream = pino.multistream([
    { level: 'trace', stream: fdDestination(2) },
    { level: 'trace', stream: file },
  ]);
  return createLogger({ level, destination: stream });
}
