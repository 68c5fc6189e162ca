// Deep equality of parsed JSON values. Object key order is ignored (as Python dict equality ignores it); list order
// matters. Unlike Python, `true` and `1` differ: upstream's `true == 1` hid real changes (reference B14).
//
// Plain loops, no callbacks or key arrays: the daemon compares every source with its committed copy at every poll,
// and what it allocates each second is what grows an idle daemon's heap.
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let count = 0;
  for (const k in ao) {
    if (!Object.hasOwn(ao, k)) continue;
    if (!Object.hasOwn(bo, k) || !jsonEqual(ao[k], bo[k])) return false;
    count++;
  }
  for (const k in bo) if (Object.hasOwn(bo, k)) count--;
  return count === 0;
}

/**
 * Whether two parsed JSON values are the same document: equal as jsonEqual says, and with every object's keys in the
 * same order (so both serialise to the same text).
 */
export function jsonIdentical(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonIdentical(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao);
  const bk = Object.keys(bo);
  if (ak.length !== bk.length) return false;
  for (let i = 0; i < ak.length; i++) {
    const k = ak[i] as string;
    if (k !== bk[i] || !jsonIdentical(ao[k], bo[k])) return false;
  }
  return true;
}
