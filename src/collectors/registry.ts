import { cfnCollector } from './cfn.js';
import { ec2Collector } from './ec2.js';
import { heatLocalCollector } from './heat-local.js';
import { heatCollector } from './heat.js';
import { localCollector } from './local.js';
import { requestCollector } from './request.js';
import type { Collector, CollectorName } from './types.js';
import { zaqarCollector } from './zaqar.js';

// Every collector the agent knows, one per file, listed here by hand (greppable and type-checked; no discovery by
// name). Collection order comes from the `collectors` option, not from this list.
export const COLLECTORS: readonly Collector[] = [
  heatLocalCollector,
  ec2Collector,
  cfnCollector,
  heatCollector,
  requestCollector,
  localCollector,
  zaqarCollector,
];

export function findCollector(name: CollectorName): Collector | undefined {
  return COLLECTORS.find((c) => c.name === name);
}
