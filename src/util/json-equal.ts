// Deep equality of parsed JSON values. Object key order is ignored (as Python dict equality ignores it); list order
// matters. Unlike Python, `true` and `1` differ: upstream's `true == 1` hid real changes (B14,
// docs/migrating.md).
//
// Plain loops, no callbacks: the daemon compares every source with its committed copy at every poll, and what it
// allocates each second is what grows an idle daemon's heap.
export function jsonEqual(a: unknown, b: unknown): boolean {
  return sameJson(a, b, false);
}

/**
 * Whether two parsed JSON values are the same document: equal as jsonEqual says, and with every object's keys in the
 * same order (so both serialise to the same text).
 */
export function jsonIdentical(a: unknown, b: unknown): boolean {
  return sameJson(a, b, true);
}

function sameJson(a: unknown, b: unknown, ordered: boolean): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], bb[i], ordered)) return false;
    return true;
  }
  return ordered
    ? sameObjectInOrder(a as Record<string, unknown>, b as Record<string, unknown>)
    : sameObject(a as Record<string, unknown>, b as Record<string, unknown>);
}

/** Same own keys and values, in any order (no key arrays: for-in walks V8's cached key list). */
function sameObject(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  let count = 0;
  for (const k in a) {
    if (!Object.hasOwn(a, k)) continue;
    if (!Object.hasOwn(b, k) || !sameJson(a[k], b[k], false)) return false;
    count++;
  }
  for (const k in b) if (Object.hasOwn(b, k)) count--;
  return count === 0;
}

/** Same own keys and values, key for key in the same order. */
function sameObjectInOrder(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  if (ak.length !== bk.length) return false;
  for (let i = 0; i < ak.length; i++) {
    const k = ak[i] as string;
    if (k !== bk[i] || !sameJson(a[k], b[k], true)) return false;
  }
  return true;
}
