import { Writable } from 'node:stream';
import pino from 'pino';
import { scrubText } from '../../src/log/redact.js';
import type { Logger } from '../../src/log/logger.js';

// A real pino logger (same scrubbing hook as production) writing parsed JSON lines into an array, so tests assert
// on log output and the secrets audit can read every line.
export interface CapturedLog {
  log: Logger;
  lines: Array<Record<string, unknown>>;
  text(): string;
}

export function captureLog(level: pino.Level = 'debug'): CapturedLog {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) {
        if (line.trim() === '') continue;
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      cb();
    },
  });
  const log = pino({ level, hooks: { streamWrite: (s: string) => scrubText(s) }, formatters: { level: (label) => ({ level: label }) } }, stream);
  return { log, lines, text: () => raw.join('\n') };
}
