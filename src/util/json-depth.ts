import { ExactNumber } from './exact-number.js';

// Metadata nested deeper than this is refused: nothing legitimate comes close, and unbounded nesting would exhaust
// the stack of every recursive consumer (serialiser, merge, templates). Python's own json gives up near 1000.
export const MAX_JSON_DEPTH = 512;

/**
 * Depth of a parsed JSON value (scalars are 0), computed without recursion; stops counting past `limit`. The daemon
 * runs this on every source at every poll, so it allocates nothing per value (two plain stacks, no entry arrays):
 * garbage made every second is what grows an idle daemon's young generation.
 */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH + 1): number {
  let max = 0;
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const v = values.pop();
    const d = depths.pop() as number;
    if (v === null || typeof v !== 'object' || v instanceof ExactNumber) continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max >= limit) return max;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        values.push(v[i]);
        depths.push(depth);
      }
    } else {
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue;
        values.push((v as Record<string, unknown>)[key]);
        depths.push(depth);
      }
    }
  }
  return max;
}
