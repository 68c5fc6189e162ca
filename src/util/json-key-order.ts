// Python's dicts keep their keys in the order they were inserted; JavaScript objects list integer-like keys (array
// indexes: "0", "443") first, in ascending order, whatever order they came in. An object read from JSON
// (python-json-parse.ts), or made from one by a merge or a clone (json-merge.ts), that holds such a key carries the
// order Python would keep, and python-json.ts writes its keys in that order: a cache file, a hook's stdin and a signal
// body list `{"b": 1, "3": 2}` as os-collect-config and heat-agents would, not as `{"3": 2, "b": 1}`.
//
// The order rides on a symbol property that is not enumerable: Object.keys, JSON.stringify and spread copies do not see
// it (a spread copy lists its keys in JavaScript's order). Keys added after the order was recorded come after it, and
// keys removed since are left out, as in a Python dict.

const PYTHON_KEY_ORDER: unique symbol = Symbol('pythonKeyOrder');

type Ordered = { [PYTHON_KEY_ORDER]?: readonly string[] };

/** The largest array index is 2^32 - 2; "4294967295" and longer are ordinary keys, listed in insertion order. */
const MAX_ARRAY_INDEX = 4_294_967_294;

/** A key JavaScript lists before the others: an array index in canonical form ("0", "17"; not "017" or "-1"). */
export function isArrayIndexKey(key: string): boolean {
  if (key.length === 0 || key.length > 10) return false;
  const first = key.charCodeAt(0);
  if (first === 0x30) return key.length === 1;
  if (first < 0x31 || first > 0x39) return false;
  for (let i = 1; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return Number(key) <= MAX_ARRAY_INDEX;
}

/**
 * Records `keys`, the object's own keys in Python's order, on `target`; nothing when JavaScript lists them in that
 * order anyway (no integer-like key, or only ones that came in ascending order before any other).
 */
export function keepKeyOrder(target: object, keys: readonly string[]): void {
  // Object.keys only for an object with an integer-like key: merges and clones call this for every object they make.
  if (keys.some(isArrayIndexKey) && !sameKeys(Object.keys(target), keys)) {
    Object.defineProperty(target, PYTHON_KEY_ORDER, {
      value: keys,
      enumerable: false,
      writable: true,
      configurable: true,
    });
    return;
  }
  // An order recorded before (shallowMerge updates its target) would no longer be true.
  if (PYTHON_KEY_ORDER in target) delete (target as Ordered)[PYTHON_KEY_ORDER];
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((key, i) => key === b[i]);
}

/** The object's own enumerable keys in Python's order: as recorded by keepKeyOrder, else as JavaScript lists them. */
export function keysInOrder(value: object): string[] {
  const own = Object.keys(value);
  const order = (value as Ordered)[PYTHON_KEY_ORDER];
  if (order === undefined) return own;
  const left = new Set(own);
  const keys = order.filter((key) => left.delete(key));
  for (const key of own) if (left.has(key)) keys.push(key);
  return keys;
}
