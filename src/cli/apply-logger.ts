import pino from 'pino';
import type { LoadedConfig } from '../config/load.js';
import type { LogLevel } from '../log/log-level.js';
import { createLogger, fdDestination, setLogFormat, type Logger } from '../log/logger.js';
import { configuredLogFormat } from './common-flags.js';

// The log of both apply commands (`os-config-agent apply` and `os-apply-config`): stderr, since --key prints data on
// stdout, and upstream's log file where it is asked for.

const LEGACY_LOG_FILE = '/var/log/os-apply-config.log';

/** stderr logger, plus upstream's root-only /var/log/os-apply-config.log when [apply] legacy_log_file is set. */
export function createApplyLogger(loaded: LoadedConfig | undefined, level: LogLevel): Logger {
  const legacy = loaded?.config.apply.legacy_log_file === true && process.geteuid?.() === 0;
  const format = loaded ? configuredLogFormat(loaded.config.agent) : undefined;
  if (!legacy || !loaded) {
    const log = createLogger({ level, destination: 'stderr', buffered: true });
    setLogFormat(log, format);
    return log;
  }
  const stderr = fdDestination(2);
  stderr.setFormat(format);
  const file = pino.destination({ dest: loaded.paths.map(LEGACY_LOG_FILE), append: true, sync: true, mkdir: true });
  const stream = pino.multistream([
    { level: 'trace', stream: stderr },
    { level: 'trace', stream: file },
  ]);
  return createLogger({ level, destination: stream });
}
