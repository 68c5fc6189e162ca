import { isJsonObject } from '../util/json-merge.js';
import { keysInOrder } from '../util/json-key-order.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { MetadataError } from './apply-errors.js';

// os-apply-config's --key, --type, --boolean-key and --subhash. Values are validated against --type in their Python
// str() form (so objects and lists only pass "raw", floats fail "default"), then printed as Python would: objects,
// lists and booleans as JSON, everything else as str().

// Patterns matched at the start of the string; "$" means end of string or before a final newline, as in Python.
const END = '(?=\\n?$)';
const VALUE_TYPES: Readonly<Record<string, RegExp>> = Object.freeze({
  int: new RegExp(`^[0-9]+${END}`),
  default: new RegExp(`^[A-Za-z0-9_]*${END}`),
  netaddress: new RegExp(`^[A-Za-z0-9/.:-]*${END}`),
  netdevice: new RegExp(`^[A-Za-z0-9/.:-]*${END}`),
  dsn: new RegExp(
    `^[a-zA-Z0-9]+://([a-zA-Z0-9+_-]+(:[^@]+)?)?(@?[a-zA-Z0-9/_.-]+)?(/[a-zA-Z0-9_-]+)?(\\?[a-zA-Z0-9=_-]+)?${END}`,
  ),
  swiftdevices: new RegExp(`^(r\\d+z\\d+-[A-Za-z0-9.-_]+:%PORT%/[^,]+,?)+${END}`),
  username: new RegExp(`^[A-Za-z0-9_-]+${END}`),
  raw: /^/,
});

const INDEX = /^\s*[+-]?\d+(_\d+)*\s*$/;

/**
 * The value at a dotted key: each segment names an object member, or indexes a list when it reads as an integer
 * (negative counts from the end, as in Python). Missing segments and null values give undefined.
 */
export function extractKey(metadata: unknown, key: string): unknown {
  let value: unknown = metadata;
  for (const part of key.split('.')) {
    if (isJsonObject(value) && Object.hasOwn(value, part)) {
      value = value[part];
    } else if (Array.isArray(value) && INDEX.test(part)) {
      const n = Number(part.replace(/_/g, '').trim());
      const index = n < 0 ? value.length + n : n;
      if (index < 0 || index >= value.length) return undefined;
      value = value[index];
    } else {
      return undefined;
    }
    if (value === null || value === undefined) return undefined;
  }
  return value;
}

export function isKnownType(type: string): boolean {
  return Object.hasOwn(VALUE_TYPES, type);
}

/** Validate `value` against a --type; throws MetadataError for an unknown type or a value that does not match. */
export function checkValueType(value: unknown, type: string): void {
  if (!isKnownType(type))
    throw new MetadataError(
      `requested validation of unknown type: ${type} (known: ${Object.keys(VALUE_TYPES).join(', ')})`,
    );
  const text = pythonStr(value);
  if (!(VALUE_TYPES[type] as RegExp).test(text))
    throw new MetadataError(`cannot interpret value '${text}' as type ${type}`);
}

/** The text --key prints for a found value (without the newline). */
export function formatKeyValue(value: unknown): string {
  if (typeof value === 'boolean' || Array.isArray(value) || isJsonObject(value)) return pythonJsonDumps(value);
  return pythonStr(value);
}

/** --boolean-key exit status: 0 for true, 1 for false, 255 (upstream's -1) for anything else, missing included. */
export function booleanKeyStatus(metadata: unknown, key: string): 0 | 1 | 255 {
  const value = extractKey(metadata, key);
  if (value === true) return 0;
  if (value === false) return 1;
  return 255;
}

/** --subhash: the object at a dotted path; every step must be an object. */
export function subhash(metadata: Record<string, unknown>, key: string | undefined): Record<string, unknown> {
  if (!key) return metadata;
  let value: Record<string, unknown> = metadata;
  for (const part of key.split('.')) {
    const next = Object.hasOwn(value, part) ? value[part] : undefined;
    if (!isJsonObject(next)) throw new MetadataError(`key '${key}' does not correspond to a hash in the metadata file`);
    value = next;
  }
  return value;
}

/** Python's str() of a JSON value (repr for containers), as upstream validates it. */
export function pythonStr(value: unknown): string {
  if (typeof value === 'string') return value;
  return pythonRepr(value);
}

function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number')
    return pythonJsonDumps(value)
      .replace(/^Infinity$/, 'inf')
      .replace(/^-Infinity$/, '-inf')
      .replace(/^NaN$/, 'nan');
  if (typeof value === 'string') return reprString(value);
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  if (isJsonObject(value))
    return `{${keysInOrder(value)
      .map((k) => `${reprString(k)}: ${pythonRepr(value[k])}`)
      .join(', ')}}`;
  return String(value);
}

function reprString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f)
      out += `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + quote;
}
