import pino, { type DestinationStream, type Logger } from 'pino';
import { scrubText } from './redact.js';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go: stdout for the daemon (journald), stderr for commands that print data on stdout. */
  destination?: 'stdout' | 'stderr' | DestinationStream;
  /**
   * Short-lived commands that log a line per file (os-apply-config): lines to stdout or stderr are written in blocks
   * of about 8 KB instead of one write(2) each, and the rest when the process exits or the caller flushes the logger
   * (before it waits on anything slow, so a killed run still leaves its lines).
   */
  buffered?: boolean;
}

/** Block size of a buffered logger (sonic-boom's minLength; it must stay below its 16 KB largest write). */
const BUFFERED_BLOCK_BYTES = 8192;

// One root logger per process; components take children ({component, collector} / {deploymentId, name}).
// Messages are fixed strings; values go in fields. Every serialised line is scrubbed of secrets before it is written.
export function createLogger(options: LoggerOptions = {}): Logger {
  const dest = options.destination ?? 'stdout';
  const stream: DestinationStream = typeof dest === 'string' ? fdDestination(dest === 'stdout' ? 1 : 2, options.buffered === true) : dest;
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

/**
 * A synchronous writer on a descriptor. Given as `dest`, not `fd`: with `fd` pino also reads process.stdout.fd, which
 * creates process.stdout at start-up (see cli/quiet-epipe.ts and cli/stdio-blocking.ts).
 */
export function fdDestination(fd: number, buffered = false): DestinationStream {
  if (!buffered) return pino.destination({ dest: fd, sync: true });
  const stream = pino.destination({ dest: fd, sync: true, minLength: BUFFERED_BLOCK_BYTES });
  // flush(), not flushSync(): in sync mode it writes at once, without the fsync flushSync adds (a cost when the
  // output is a file).
  process.once('exit', () => stream.flush());
  return stream;
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
