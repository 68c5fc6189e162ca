import pino, { type DestinationStream, type Logger } from 'pino';
import { scrubText } from './redact.js';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go: stdout for the daemon (journald), stderr for commands that print data on stdout. */
  destination?: 'stdout' | 'stderr' | DestinationStream;
}

// One root logger per process; components take children ({component, collector} / {deploymentId, name}).
// Messages are fixed strings; values go in fields. Every serialised line is scrubbed of secrets before it is written.
export function createLogger(options: LoggerOptions = {}): Logger {
  const dest = options.destination ?? 'stdout';
  const stream: DestinationStream =
    dest === 'stdout' ? pino.destination({ fd: 1, sync: true }) : dest === 'stderr' ? pino.destination({ fd: 2, sync: true }) : dest;
  return pino(
    {
      level: options.level ?? 'info',
      base: { name: 'os-config-agent' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: ['password', '*.password', 'secret_access_key', '*.secret_access_key', 'token', '*.token', 'headers.authorization', 'headers["x-auth-token"]'],
        censor: '[REDACTED]',
      },
      hooks: { streamWrite: (line: string) => scrubText(line) },
    },
    stream,
  );
}

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
