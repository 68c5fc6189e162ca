// Merges of parsed JSON that are safe against keys such as "__proto__" and "constructor": values are copied with
// defineProperty, never assigned, so metadata cannot change an object's prototype. Keys keep Python's order: a merge
// or a clone of an object with integer-like keys lists them where a Python dict would (json-key-order.ts).

import { ExactNumber } from './exact-number.js';
import { keepKeyOrder, keysInOrder } from './json-key-order.js';

export type JsonObject = Record<string, unknown>;

/** A JSON object: not null, an array, or a number kept exact (an ExactNumber is a number). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof ExactNumber);
}

/** `target[key] = value` as data: a key named "__proto__" in parsed JSON sets a key, never the prototype. */
export function setOwnKey(target: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Top-level merge: keys of `source` replace those of `target` (Python dict.update). Returns target. */
export function shallowMerge(target: JsonObject, source: JsonObject): JsonObject {
  const order = keysInOrder(target);
  for (const key of keysInOrder(source)) {
    if (!Object.hasOwn(target, key)) order.push(key);
    setOwnKey(target, key, source[key]);
  }
  keepKeyOrder(target, order);
  return target;
}

/**
 * os-apply-config's merge: objects merge recursively; any other incoming value (array, scalar, null) replaces.
 * Returns a new object; inputs are not modified.
 */
export function deepMerge(base: JsonObject, incoming: JsonObject): JsonObject {
  const out: JsonObject = {};
  const order = keysInOrder(base);
  for (const key of order) setOwnKey(out, key, base[key]);
  for (const key of keysInOrder(incoming)) {
    const current = out[key];
    const next = incoming[key];
    const present = Object.hasOwn(out, key);
    if (present && isJsonObject(current) && isJsonObject(next)) setOwnKey(out, key, deepMerge(current, next));
    else setOwnKey(out, key, deepClone(next));
    if (!present) order.push(key);
  }
  keepKeyOrder(out, order);
  return out;
}

export function deepClone<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => deepClone(v)) as T;
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    const keys = keysInOrder(value);
    for (const key of keys) setOwnKey(out, key, deepClone(value[key]));
    keepKeyOrder(out, keys);
    return out as T;
  }
  return value;
}
