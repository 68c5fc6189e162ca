// Metadata nested deeper than this is refused: nothing legitimate comes close, and unbounded nesting would exhaust
// the stack of every recursive consumer (serialiser, merge, templates). Python's own json gives up near 1000.
export const MAX_JSON_DEPTH = 512;

/** Depth of a parsed JSON value (scalars are 0), computed without recursion; stops counting past `limit`. */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH + 1): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max >= limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) stack.push([child, depth]);
  }
  return max;
}
