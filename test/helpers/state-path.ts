import { isDeploymentState, TRANSITIONS, type DeploymentState, type TransitionEvent } from '../../src/state/machine.js';
import type { DeploymentRecord, RecordPatch, StateStore } from '../../src/state/store.js';

// Tests that need a record in some state get it the way the agent would: along the shortest path of allowed
// events (src/state/machine.ts), so a fixture can never hold a record the state machine could not produce.

interface Hop {
  readonly event: TransitionEvent;
  readonly to: DeploymentState;
}

/** The events and states between `from` and `to` (excluding `from`), by the shortest path of allowed transitions. */
function hops(from: DeploymentState, to: DeploymentState): Hop[] {
  const previous = new Map<DeploymentState, { at: DeploymentState; event: TransitionEvent }>();
  const queue: DeploymentState[] = [from];
  while (queue.length > 0) {
    const at = queue.shift()!;
    if (at === to && at !== from) break;
    for (const t of TRANSITIONS) {
      // listed-again and the end of a re-run lead where the record came from: no fixed target to plan a path through.
      if (t.from !== at || !isDeploymentState(t.to) || previous.has(t.to) || t.to === from) continue;
      previous.set(t.to, { at, event: t.event });
      queue.push(t.to);
    }
  }
  if (from === to) {
    const loop = TRANSITIONS.find((t) => t.from === from && t.to === to);
    if (!loop) throw new Error(`no allowed transition from ${from} to itself`);
    return [{ event: loop.event, to }];
  }
  if (!previous.has(to)) throw new Error(`no path of allowed transitions from ${from} to ${to}`);
  const path: Hop[] = [];
  for (let s: DeploymentState = to; s !== from;) {
    const back = previous.get(s)!;
    path.unshift({ event: back.event, to: s });
    s = back.at;
  }
  return path;
}

/** The states between `from` and `to` (excluding `from`), by the shortest path of allowed transitions. */
export function statePath(from: DeploymentState, to: DeploymentState): DeploymentState[] {
  return hops(from, to).map((h) => h.to);
}

/**
 * `record` moved to `to` through allowed events; `patch` is written with the last one. A deployment is signalled only
 * by its delivered signal, so on the way there the signal is queued (in `patch`'s transport) and then sent.
 */
export async function moveTo(
  store: StateStore,
  record: DeploymentRecord,
  to: DeploymentState,
  patch: RecordPatch = {},
): Promise<DeploymentRecord> {
  const steps = hops(record.state, to);
  const transport = patch.signal?.transport ?? 'CFN_SIGNAL';
  let r = record;
  for (const [i, hop] of steps.entries()) {
    let p: RecordPatch = i === steps.length - 1 ? patch : {};
    if (steps[i + 1]?.event === 'signal-delivered') p = { ...p, signal: { state: 'pending', transport, attempts: 0 } };
    if (hop.event === 'signal-delivered' && p.signal === undefined)
      p = { ...p, signal: { ...r.signal, state: 'sent' } };
    r = await store.transition(r, hop.event, p);
  }
  return r;
}
