import { heatLocalCollector } from './heat-local.js';
import { localCollector } from './local.js';
import type { Collector, CollectorName } from './types.js';

// Every collector the agent knows, one per file, listed here by hand (greppable and type-checked; no discovery by
// name). Collection order comes from the `collectors` option, not from this list.
export const COLLECTORS: readonly Collector[] = [heatLocalCollector, localCollector];

export function findCollector(name: CollectorName): Collector | undefined {
  return COLLECTORS.find((c) => c.name === name);
}
