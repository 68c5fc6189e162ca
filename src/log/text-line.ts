// The text form of a log line, for a person at a terminal (`[agent] log_format = text`): the time, the level, the
// message, then the fields as key=value, in the order the code gave them. A value with a space, a quote or an equals
// sign is written as a JSON string, so a line still splits unambiguously; objects and lists are JSON.

/** Fields every line has, shown in the head of the line (or not at all) rather than as key=value. */
const HEAD_FIELDS = new Set(['level', 'time', 'msg', 'name']);

/** One pino JSON line (ending in a newline) as text; a line that is not JSON is returned as it is. */
export function textLine(json: string): string {
  let entry: unknown;
  try {
    entry = JSON.parse(json);
  } catch {
    return json;
  }
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return json;
  const fields = entry as Record<string, unknown>;
  const time = typeof fields.time === 'string' ? fields.time.replace(/^.*T/, '').replace(/Z$/, '') : '';
  const level = String(fields.level ?? 'info').padEnd(5);
  const pairs = Object.entries(fields)
    .filter(([key]) => !HEAD_FIELDS.has(key))
    .map(([key, value]) => `${key}=${textValue(value)}`);
  const head = [time, level, String(fields.msg ?? '')].filter((part) => part !== '').join(' ');
  return `${pairs.length > 0 ? `${head}  ${pairs.join(' ')}` : head}\n`;
}

function textValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}
