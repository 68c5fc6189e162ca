import { TRANSITIONS, type DeploymentState } from '../../src/state/machine.js';
import type { DeploymentRecord, StateStore } from '../../src/state/store.js';

// Tests that need a record in some state get it the way the agent would: along the shortest path of allowed
// transitions (deployment-states.ts), so a fixture can never hold a record the state machine could not produce.

/** The states between `from` and `to` (excluding `from`), by the shortest path of allowed transitions. */
export function statePath(from: DeploymentState, to: DeploymentState): DeploymentState[] {
  const previous = new Map<DeploymentState, DeploymentState>();
  const queue: DeploymentState[] = [from];
  while (queue.length > 0) {
    const at = queue.shift()!;
    if (at === to && at !== from) break;
    for (const t of TRANSITIONS) {
      if (t.from !== at || previous.has(t.to) || t.to === from) continue;
      previous.set(t.to, at);
      queue.push(t.to);
    }
  }
  if (from === to) return [to];
  if (!previous.has(to)) throw new Error(`no path of allowed transitions from ${from} to ${to}`);
  const path: DeploymentState[] = [];
  for (let s: DeploymentState | undefined = to; s !== undefined && s !== from; s = previous.get(s)) path.unshift(s);
  return path;
}

/** `record` moved to `to` through allowed transitions; `patch` is written with the last one. */
export async function moveTo(
  store: StateStore,
  record: DeploymentRecord,
  to: DeploymentState,
  patch: Partial<DeploymentRecord> = {},
): Promise<DeploymentRecord> {
  const steps = statePath(record.state, to);
  let r = record;
  for (const [i, state] of steps.entries()) r = await store.transition(r, state, i === steps.length - 1 ? patch : {});
  return r;
}
