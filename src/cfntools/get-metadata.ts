import { pythonJsonDumps } from '../util/python-json.js';

// What `cfn-get-metadata` prints: the whole metadata, or with -k the value at a key path, as Python's json.dumps
// writes it (", " and ": ", non-ASCII as \u escapes), followed by a newline. A path is keys joined by "."; a key that
// holds a dot is quoted ('bar.1'). A path that does not lead to a value, or leads to null, prints nothing.
// heat-cfntools removed each matched key from the path with str.replace, which also removed later copies of it
// ("a.a.b" read as "a.b"); here each key is taken off the front only.

const SEGMENT = /^(?:'([^']+)'|([^.]+))(?:\.|$)/;

export function displayMetadata(metadata: unknown, key?: string): string | undefined {
  if (metadata === undefined || metadata === null) return undefined;
  if (key === undefined) return `${pythonJsonDumps(metadata)}\n`;
  let rest = key;
  let value: unknown;
  let at: unknown = metadata;
  for (;;) {
    const m = SEGMENT.exec(rest);
    if (!m) break;
    const name = m[1] ?? m[2]!;
    if (typeof at !== 'object' || at === null || Array.isArray(at) || !Object.hasOwn(at, name)) break;
    rest = rest.slice(m[0].length);
    value = at = (at as Record<string, unknown>)[name];
  }
  if (rest !== '' || value === undefined || value === null) return undefined;
  return `${pythonJsonDumps(value)}\n`;
}
