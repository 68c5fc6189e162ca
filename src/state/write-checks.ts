import { DeploymentTransitionError } from './errors.js';
import {
  holdsSignal,
  SIGNAL_EVENTS_IN_PLACE,
  signalMoveWith,
  targetOf,
  type DeploymentState,
  type Position,
  type TransitionEvent,
} from './machine.js';
import type { DeploymentRecord, SignalRecord } from './record.js';
import { signalTarget, type SignalEvent, type SignalState } from './signal-machine.js';

// What the store checks before each write of a record, against the tables of machine.ts and signal-machine.ts. Each
// check throws a DeploymentTransitionError naming the event, so a refused write leaves the record as it was.

/** Facts a record notes without a move, and the states each belongs to (a hook's pid: its run, or its re-run). */
export type StateNote = Partial<
  Pick<DeploymentRecord, 'hookPid' | 'hookPidStart' | 'rebootCommandRanAt' | 'lastError'>
>;
const NOTED_IN: Readonly<Record<keyof StateNote, readonly DeploymentState[]>> = {
  hookPid: ['running', 'reconverging'],
  hookPidStart: ['running', 'reconverging'],
  // Why a run stopped without a result (a full disk): status shows it instead of "is running".
  lastError: ['running'],
  rebootCommandRanAt: ['awaiting-reboot'],
};

/** Where a move starts: a record, or (state undefined, no signal) one about to be created. */
export interface MoveStart extends Position {
  readonly id: string;
  readonly signal: Pick<SignalRecord, 'state'>;
}

export interface CheckedMove {
  readonly to: DeploymentState;
  /** The move of the signal that goes with it (signal-machine.ts); 'kept': the signal stays as it is. */
  readonly signal: SignalEvent | 'kept';
}

/** The state `event` leads to from `start`, with the signal in `signalTo`; throws when the tables do not allow it. */
export function checkMove(start: MoveStart, event: TransitionEvent, signalTo: SignalState): CheckedMove {
  const to = targetOf(start, event);
  if (to === undefined) throw new DeploymentTransitionError(start.id, start.state, event);
  const signal = signalMoveWith(event, start.signal.state, signalTo);
  // A pending signal is sent only from a state that holds it (the outbox's): anywhere else it would be stranded.
  if (signal === undefined || (signalTo === 'pending' && !holdsSignal(to)))
    throw new DeploymentTransitionError(start.id, start.state, event, { from: start.signal.state, to: signalTo });
  return { to, signal };
}

/** The state a signal move on its own leads to: only the outbox's moves, only while the deployment holds its signal. */
export function checkSignalInPlace(record: DeploymentRecord, event: SignalEvent): SignalState {
  const to = signalTarget(record.signal.state, event);
  if (to === undefined || !SIGNAL_EVENTS_IN_PLACE.includes(event) || !holdsSignal(record.state))
    throw new DeploymentTransitionError(record.id, record.state, event, { from: record.signal.state });
  return to;
}

/** Each fact noted belongs to the record's state (a hook pid to a running or reconverging record). */
export function checkNote(record: DeploymentRecord, facts: StateNote): void {
  for (const key of Object.keys(facts)) {
    const states: readonly DeploymentState[] = Object.hasOwn(NOTED_IN, key) ? NOTED_IN[key as keyof StateNote] : [];
    if (!states.includes(record.state)) throw new DeploymentTransitionError(record.id, record.state, `note of ${key}`);
  }
}
