// Merges of parsed JSON that are safe against keys such as "__proto__" and "constructor": values are copied with
// defineProperty, never assigned, so metadata cannot change an object's prototype.

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `target[key] = value` as data: a key named "__proto__" in parsed JSON sets a key, never the prototype. */
export function setOwnKey(target: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Top-level merge: keys of `source` replace those of `target` (Python dict.update). Returns target. */
export function shallowMerge(target: JsonObject, source: JsonObject): JsonObject {
  for (const key of Object.keys(source)) setOwnKey(target, key, source[key]);
  return target;
}

/**
 * os-apply-config's merge: objects merge recursively; any other incoming value (array, scalar, null) replaces.
 * Returns a new object; inputs are not modified.
 */
export function deepMerge(base: JsonObject, incoming: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(base)) setOwnKey(out, key, base[key]);
  for (const key of Object.keys(incoming)) {
    const current = out[key];
    const next = incoming[key];
    if (Object.prototype.hasOwnProperty.call(out, key) && isJsonObject(current) && isJsonObject(next))
      setOwnKey(out, key, deepMerge(current, next));
    else setOwnKey(out, key, deepClone(next));
  }
  return out;
}

export function deepClone<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => deepClone(v)) as T;
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const key of Object.keys(value)) setOwnKey(out, key, deepClone(value[key]));
    return out as T;
  }
  return value;
}
