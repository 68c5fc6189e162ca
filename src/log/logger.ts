import pino, { type DestinationStream, type Logger } from 'pino';
import type { ErrorCode } from '../errors.js';
import { LineSink } from './line-sink.js';
import { redactFields, scrubText } from './redact.js';

export type { Logger } from 'pino';

// The `code` field of every log line is one of the documented error codes (docs/troubleshooting.md#error-codes):
// pino merges LogFnFields into the fields of each log call, so a code outside the union is a type error.
declare module 'pino' {
  interface LogFnFields {
    code?: ErrorCode | undefined;
  }
}

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

// One root logger per process; components take children ({component, collector} / {deploymentId, name}).
// Messages are fixed strings; values go in fields. Every serialised line is scrubbed of secrets before it is written.
export function createLogger(options: LoggerOptions = {}): Logger {
  const dest = options.destination ?? 'stdout';
  const stream: DestinationStream =
    typeof dest === 'string' ? fdDestination(dest === 'stdout' ? 1 : 2, options.buffered === true) : dest;
  return pino(
    {
      level: options.level ?? 'info',
      base: { name: 'os-config-agent' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Credential-named fields are redacted here rather than with pino's `redact` paths, which clone and re-parse
      // every field of every line, and os-apply-config logs a line per file.
      formatters: { level: (label) => ({ level: label }), log: redactFields, bindings: redactFields },
      hooks: { streamWrite: (line: string) => scrubText(line) },
    },
    stream,
  );
}

/**
 * A synchronous writer on a descriptor, behind a LineSink (held for good when `buffered`). Given to pino as `dest`,
 * not `fd`: with `fd` pino also reads process.stdout.fd, which creates process.stdout at start-up (see
 * cli/quiet-epipe.ts and cli/stdio-blocking.ts).
 */
export function fdDestination(fd: number, buffered = false): DestinationStream {
  const sink = new LineSink(pino.destination({ dest: fd, sync: true }));
  if (buffered) sink.hold();
  return sink;
}

/**
 * Gathers the lines of `log`'s destination into blocks until the returned release is called: for a burst of lines
 * (one per rendered file). A no-op for destinations other than a descriptor's.
 */
export function holdLogLines(log: Logger): () => void {
  const stream = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
  return stream instanceof LineSink ? stream.hold() : () => undefined;
}

/**
 * A child logger for a component, unless `log` already names one: pino writes every binding of every ancestor, so a
 * second `component` would be a key twice in one line (JSON readers keep only one of them).
 */
export function componentLogger(log: Logger, component: string): Logger {
  return Object.hasOwn(log.bindings(), 'component') ? log : log.child({ component });
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
