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
        // Every test that logs checks the rule: a key twice in a line is lost to JSON readers (they keep one).
        const twice = repeatedKeys(line);
        if (twice.length > 0) {
          cb(new Error(`log line has the key(s) ${twice.join(', ')} twice: ${line.slice(0, 300)}`));
          return;
        }
      }
      cb();
    },
  });
  const log = pino(
    {
      level,
      hooks: { streamWrite: (s: string) => scrubText(s) },
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
  return { log, lines, text: () => raw.join('\n') };
}

/** Top-level keys that appear more than once in a JSON object text (JSON.parse silently keeps the last). */
export function repeatedKeys(json: string): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      let j = i + 1;
      while (j < json.length && json[j] !== '"') j += json[j] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) {
        const key = JSON.parse(json.slice(i, j + 1)) as string;
        if (seen.has(key)) repeated.add(key);
        seen.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === '{' || c === '[') {
      depth++;
      if (depth === 1 && c === '{') expectKey = true;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return [...repeated];
}
