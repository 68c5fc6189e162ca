// The log levels and their parser, apart from the logger: the configuration's options and the command-line flags
// check a level without loading pino, which the heat-cfntools commands never use.

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Parse a --log-level value; unknown values are a usage error. */
export function parseLogLevel(value: string): LogLevel {
  const v = value.toLowerCase();
  const aliases: Record<string, LogLevel> = { warning: 'warn', critical: 'fatal' };
  const level = (aliases[v] ?? v) as LogLevel;
  if (!LOG_LEVELS.includes(level)) {
    throw new Error(`unknown log level "${value}": use one of ${LOG_LEVELS.join(', ')}`);
  }
  return level;
}
