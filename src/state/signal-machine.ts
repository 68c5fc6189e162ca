import { SignalTransitionError } from './errors.js';

// The signal state machine, declared once: the states of a signal to Heat (the one inside each deployment record, and
// each wait condition signal of the cfn-signal queue) and the moves between them, each named by its event. The store
// checks every write of a record's signal against it, and the cfn-signal queue every write of its files, so a signal
// can never be dropped or settled by a code path the table does not name. machine.ts says which of these moves go
// with which move of the deployment; docs/state-machine.md shows both tables.

export const SIGNAL_STATES = ['none', 'pending', 'sent', 'failed', 'cancelled'] as const;
export type SignalState = (typeof SIGNAL_STATES)[number];

export type SignalEvent = 'queued' | 'unsendable' | 'attempt-failed' | 'delivered' | 'gave-up' | 'cancelled' | 'reset';

export interface SignalEventRule {
  readonly from: readonly SignalState[];
  readonly to: SignalState;
  /** One line for docs. */
  readonly meaning: string;
}

// A new signal replaces only a settled one: a pending signal is never overwritten, it is delivered, given up,
// cancelled or dropped by name (reset).
const SETTLED: readonly SignalState[] = SIGNAL_STATES.filter((s) => s !== 'pending');

/** Each event, the states it is taken from, and the one state it leads to. */
export const SIGNAL_EVENTS: Readonly<Record<SignalEvent, SignalEventRule>> = {
  queued: { from: SETTLED, to: 'pending', meaning: 'a signal to send is stored (before its first attempt)' },
  unsendable: {
    from: SIGNAL_STATES,
    to: 'failed',
    meaning: 'the signal cannot be sent (bad signal inputs, or no target or body): settled without an attempt',
  },
  'attempt-failed': {
    from: ['pending'],
    to: 'pending',
    meaning: 'an attempt failed and is retried after a backoff',
  },
  delivered: { from: ['pending'], to: 'sent', meaning: 'Heat accepted the signal' },
  'gave-up': {
    from: ['pending'],
    to: 'failed',
    meaning: 'a final answer (a 4xx other than 408 and 429), or the last allowed attempt failed: not retried',
  },
  cancelled: {
    from: ['pending'],
    to: 'cancelled',
    meaning: 'the deployment left the metadata before its signal was delivered',
  },
  reset: { from: SIGNAL_STATES, to: 'none', meaning: 'the signal of an earlier run is dropped' },
};

export const SIGNAL_EVENT_NAMES = Object.keys(SIGNAL_EVENTS) as SignalEvent[];

export function isSignalState(value: unknown): value is SignalState {
  return (SIGNAL_STATES as readonly unknown[]).includes(value);
}

/** The state `event` moves a signal in `from` to; undefined when the table has no such move. */
export function signalTarget(from: SignalState, event: SignalEvent): SignalState | undefined {
  const rule = SIGNAL_EVENTS[event];
  return rule.from.includes(from) ? rule.to : undefined;
}

/**
 * The event among `events` that moves a signal from `from` to `to`; undefined when none does. Each event leads to one
 * state, so at most one of a list of events with different targets matches.
 */
export function signalEventFor(
  from: SignalState,
  to: SignalState,
  events: readonly SignalEvent[],
): SignalEvent | undefined {
  return events.find((e) => signalTarget(from, e) === to);
}

/** The state `event` moves a signal in `from` to; a move the table lacks throws (nothing is to be written). */
export function moveSignal(signalId: string, from: SignalState, event: SignalEvent): SignalState {
  const to = signalTarget(from, event);
  if (to === undefined) throw new SignalTransitionError(signalId, from, event);
  return to;
}
