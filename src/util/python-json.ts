// Byte-compatible output of Python's json.dumps, so cache files and printed metadata match os-collect-config's:
// ensure_ascii escaping (\uXXXX, surrogate pairs for astral characters), ", " / ": " separators when compact,
// "," at line ends when indented, and "[]" / "{}" for empty containers.
//
// Numbers print as Python prints them: an ExactNumber (a big integer, or a float with no fraction, as the reader of
// python-json-parse.ts keeps them) as its text, NaN and the infinities as NaN, Infinity, -Infinity.
//
// Keys come out in Python's order: an object read or merged with integer-like keys carries it (json-key-order.ts).

import { ExactNumber } from './exact-number.js';
import { keysInOrder } from './json-key-order.js';

export interface PythonJsonOptions {
  /** Spaces per level; undefined means compact single-line output. */
  indent?: number;
  /** Python's ensure_ascii (default true). */
  ensureAscii?: boolean;
}

export function pythonJsonDumps(value: unknown, options: PythonJsonOptions = {}): string {
  const ensureAscii = options.ensureAscii ?? true;
  return dump(value, options.indent, 0, ensureAscii);
}

function dump(value: unknown, indent: number | undefined, depth: number, ascii: boolean): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return quote(value, ascii);
  if (typeof value === 'number') return formatNumber(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof ExactNumber) return value.text;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const items = value.map((v) => dump(v, indent, depth + 1, ascii));
    return wrap('[', ']', items, indent, depth);
  }
  if (typeof value === 'object') {
    const object = value as Record<string, unknown>;
    const keys = keysInOrder(object);
    if (keys.length === 0) return '{}';
    const items = keys.map((k) => `${quote(k, ascii)}: ${dump(object[k], indent, depth + 1, ascii)}`);
    return wrap('{', '}', items, indent, depth);
  }
  return 'null';
}

function wrap(open: string, close: string, items: string[], indent: number | undefined, depth: number): string {
  if (indent === undefined) return `${open}${items.join(', ')}${close}`;
  const inner = ' '.repeat(indent * (depth + 1));
  const outer = ' '.repeat(indent * depth);
  return `${open}\n${inner}${items.join(`,\n${inner}`)}\n${outer}${close}`;
}

/** A plain number as Python's json.dumps writes a float or an int of that value. */
export function formatNumber(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return 'Infinity';
  if (n === -Infinity) return '-Infinity';
  // Safe integers print the same in both languages; String() is several times cheaper than toFixed().
  if (Number.isSafeInteger(n)) return String(n);
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return n.toFixed(0);
  // Python's float repr switches to exponent notation below 1e-4 (JavaScript only below 1e-6) and writes at least two
  // exponent digits (1.5e-07, JavaScript 1.5e-7). Both print the shortest digits that read back as the same float.
  const text = Math.abs(n) < 1e-4 ? n.toExponential() : String(n);
  return text.replace(/e([+-])(\d)$/, (_m, sign: string, digit: string) => `e${sign}0${digit}`);
}

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

// Python's own escape sets. Runs between escapes are copied as slices: appending character by character builds a
// rope of one node per character, many times the size of the text (hook output can be megabytes).
const ESCAPE_ASCII = /["\\]|[^ -~]/g;
const ESCAPE_RAW = /["\\]|[^ -\uffff]/g;

function quote(s: string, ascii: boolean): string {
  const re = ascii ? ESCAPE_ASCII : ESCAPE_RAW;
  re.lastIndex = 0;
  let out = '"';
  let last = 0;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    const i = m.index;
    if (i > last) out += s.slice(last, i);
    out += SIMPLE_ESCAPES[m[0]] ?? `\\u${s.charCodeAt(i).toString(16).padStart(4, '0')}`;
    last = i + 1;
  }
  return `${out}${s.slice(last)}"`;
}
