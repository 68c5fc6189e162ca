import { jsonEqual } from '../util/json-equal.js';

// Which event a hook's path saw between two reads of its resource's metadata, as AWS's cfn-hup defines them:
// post.add (the value appeared), post.update (it changed), post.remove (it went away). Nothing known before (no copy
// saved yet) counts as absent. heat-cfntools fired post.update alone, on any change of the resource's metadata.

export type PathEvent = 'post.add' | 'post.update' | 'post.remove';

interface Found {
  readonly found: boolean;
  readonly value?: unknown;
}

export function pathEvent(before: unknown, after: unknown, keys: readonly string[]): PathEvent | undefined {
  const was = valueAt(before, keys);
  const now = valueAt(after, keys);
  if (!was.found) return now.found ? 'post.add' : undefined;
  if (!now.found) return 'post.remove';
  return jsonEqual(was.value, now.value) ? undefined : 'post.update';
}

function valueAt(metadata: unknown, keys: readonly string[]): Found {
  if (metadata === undefined) return { found: false };
  let at: unknown = metadata;
  for (const key of keys) {
    if (typeof at !== 'object' || at === null || Array.isArray(at) || !Object.hasOwn(at, key)) return { found: false };
    at = (at as Record<string, unknown>)[key];
  }
  return { found: true, value: at };
}
