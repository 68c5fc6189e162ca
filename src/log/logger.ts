import pino, { type DestinationStream, type Logger } from 'pino';
import type { ErrorCode } from '../errors.js';
import type { LogLevel } from './log-level.js';
import { LineSink } from './line-sink.js';
import { LogOutput, type LogFormat } from './log-output.js';
import { redactFields, scrubText } from './redact.js';

export type { Logger } from 'pino';
export type { LogFormat } from './log-output.js';

// The `code` field of every log line is one of the documented error codes (docs/troubleshooting.md#error-codes):
// pino merges LogFnFields into the fields of each log call, so a code outside the union is a type error.
declare module 'pino' {
  interface LogFnFields {
    code?: ErrorCode | undefined;
  }
}

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
 * A synchronous writer on a descriptor, behind a LineSink (held for good when `buffered`), in the descriptor's format
 * (log-output.ts). Given to pino as `dest`, not `fd`: with `fd` pino also reads process.stdout.fd, which creates
 * process.stdout at start-up (see cli/quiet-epipe.ts and cli/stdio-blocking.ts).
 */
export function fdDestination(fd: number, buffered = false): LogOutput {
  const sink = new LineSink(pino.destination({ dest: fd, sync: true }));
  if (buffered) sink.hold();
  return new LogOutput(sink, fd);
}

/** The logger's lines as `format` from now on (`[agent] log_format`; unset: its descriptor's default). */
export function setLogFormat(log: Logger, format: LogFormat | undefined): void {
  const stream = streamOf(log);
  if (stream instanceof LogOutput) stream.setFormat(format);
}

function streamOf(log: Logger): unknown {
  return (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
}

/**
 * Gathers the lines of `log`'s destination into blocks until the returned release is called: for a burst of lines
 * (one per rendered file). A no-op for destinations other than a descriptor's.
 */
export function holdLogLines(log: Logger): () => void {
  const stream = streamOf(log);
  if (stream instanceof LogOutput) return stream.sink.hold();
  return stream instanceof LineSink ? stream.hold() : () => undefined;
}

/**
 * A child logger for a component, unless `log` already names one: pino writes every binding of every ancestor, so a
 * second `component` would be a key twice in one line (JSON readers keep only one of them).
 */
export function componentLogger(log: Logger, component: string): Logger {
  return Object.hasOwn(log.bindings(), 'component') ? log : log.child({ component });
}
