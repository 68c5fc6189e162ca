import { signalEventFor, type SignalEvent, type SignalState } from './signal-machine.js';
import { DEPLOYMENT_STATES, type DeploymentState } from './states.js';

// The deployment state machine, declared once: which states there are, what each one means to the readers of the
// records (status, status --wait, pruning, the outbox, the console line), and the events that move a record, each
// from the states it is allowed in to the one state it leads to. StateStore takes the event, derives the state from
// here and refuses an event the record's state does not allow, so a new code path that would put a record somewhere
// unexpected fails loudly in tests instead of leaving a record that no reader understands. The moves of the signal
// inside a record have their own table (signal-machine.ts); each event here says which of them may go with it.
// docs/state-machine.md shows these tables (generated from them) with the crash windows between the writes.

export {
  DEPLOYMENT_STATES,
  STATE_MEANINGS,
  hasResult,
  holdsSignal,
  isDeploymentState,
  isInProgress,
  isListed,
  isPrunable,
  type DeploymentState,
  type StateMeaning,
} from './states.js';

/** The events that create a record. */
export type CreationEvent = 'seen' | 'adopted';

export type TransitionEvent =
  | CreationEvent
  | 'hook-started'
  | 'hook-restarted'
  | 'rerun-after-reboot'
  | 'hook-finished'
  | 'hook-failed-to-run'
  | 'interrupted-too-often'
  | 'reboot-requested'
  | 'reboot-failed'
  | 'nothing-to-run'
  | 'applied-by-cycle'
  | 'cycle-ended'
  | 'signal-delivered'
  | 'left-metadata'
  | 'listed-again'
  | 'rerun'
  | ReconvergeEvent;

/** The events of a re-run on a reconverge interval (src/deploy/reconverge/): never a signal to Heat. */
export type ReconvergeEvent =
  'reconverge-started' | 'reconverge-finished' | 'reconverge-stopped' | 'reconverge-interrupted';

/** A target read from the record, not written in the table: the state it was in when it left the metadata. */
export const BEFORE_REMOVAL = 'the state before removal';
/** A target read from the record: the state a re-run started from (`reconverge.from`). */
export const BEFORE_RECONVERGE = 'the state the re-run started from';
export type Target = DeploymentState | typeof BEFORE_REMOVAL | typeof BEFORE_RECONVERGE;

export interface EventRule {
  /** The states the event is taken from; undefined: the record is created. */
  readonly from: readonly (DeploymentState | undefined)[];
  /** The one state it leads to. */
  readonly to: Target;
  /** Moves of the record's signal (signal-machine.ts) that may go with it; none listed: the signal stays as it is. */
  readonly signal?: readonly SignalEvent[];
  /** One of `signal` must happen: a deployment is signalled by its delivered signal and nothing else. */
  readonly signalRequired?: true;
  /** Logged at debug: a routine move whose outcome has a log line of its own (a re-run's). */
  readonly quiet?: true;
  /** One line for docs. */
  readonly meaning: string;
}

// States a hook run can start from: pending, an interrupted run (running) and a run after the asked-for reboot.
const RUNNABLE = ['pending', 'running', 'awaiting-reboot'] as const;
// A re-run in progress ends (finished, stopped or found interrupted) before anything else happens to its record.
const NOT_REMOVED = DEPLOYMENT_STATES.filter((s) => s !== 'removed' && s !== 'reconverging');
// Storing a result (a move to done) stores its signal: one to send, one that cannot be sent, or none (NO_SIGNAL).
const RESULT_SIGNAL: readonly SignalEvent[] = ['queued', 'unsendable', 'reset'];

/** Every event: the states it is taken from and the one it leads to. */
export const EVENTS: Readonly<Record<TransitionEvent, EventRule>> = {
  seen: { from: [undefined], to: 'pending', meaning: 'seen in the metadata for the first time' },
  adopted: {
    from: [undefined],
    to: 'signalled',
    meaning:
      'no record, but `deployed/<id>.json` exists: an earlier agent (upstream, or one whose records were lost) ran it; never run here',
  },
  'hook-started': { from: ['pending'], to: 'running', meaning: 'the hook is started' },
  'hook-restarted': {
    from: ['running'],
    to: 'running',
    meaning: 'an interrupted hook is started once more (`hookStarts` counts the starts)',
  },
  'rerun-after-reboot': {
    from: ['awaiting-reboot'],
    to: 'running',
    meaning: 'the reboot it asked for happened: the hook runs again',
  },
  'hook-finished': {
    from: ['running'],
    to: 'done',
    signal: RESULT_SIGNAL,
    meaning: 'the hook exited or timed out (or asked for a reboot that is refused): its result and signal are stored',
  },
  'hook-failed-to-run': {
    from: RUNNABLE,
    to: 'done',
    signal: RESULT_SIGNAL,
    meaning:
      'no hook for the group, one that cannot be run, or an option that cannot be used: a failure signal without a run',
  },
  'interrupted-too-often': {
    from: ['running'],
    to: 'done',
    signal: RESULT_SIGNAL,
    meaning: 'interrupted `MAX_HOOK_STARTS` times: a failure signal instead of another start',
  },
  'reboot-requested': {
    from: ['running'],
    to: 'awaiting-reboot',
    meaning: 'the hook exited 194 and a reboot is possible',
  },
  'reboot-failed': {
    from: ['awaiting-reboot'],
    to: 'done',
    signal: RESULT_SIGNAL,
    meaning: 'the reboot command failed, or reboots were turned off meanwhile: a failure signal',
  },
  'nothing-to-run': {
    from: RUNNABLE,
    to: 'skipped',
    meaning: 'a component without a config for the action; an os-apply-config deployment asking for no signal',
  },
  'applied-by-cycle': {
    from: RUNNABLE,
    to: 'applied',
    meaning: 'an os-apply-config deployment without a hook: the cycle applies its data',
  },
  'cycle-ended': {
    from: ['applied', 'pending'],
    to: 'done',
    signal: RESULT_SIGNAL,
    meaning: 'the cycle ended (pending: a failed cycle signals those the deployment step never reached)',
  },
  'signal-delivered': {
    from: ['done'],
    to: 'signalled',
    signal: ['delivered'],
    signalRequired: true,
    meaning: 'Heat accepted the signal',
  },
  'left-metadata': {
    from: NOT_REMOVED,
    to: 'removed',
    signal: ['cancelled'],
    meaning:
      'gone from the metadata (one without a `deployments` key removes nothing); an undelivered signal is cancelled',
  },
  'listed-again': {
    from: ['removed'],
    to: BEFORE_REMOVAL,
    meaning:
      'listed again: back to the state it left from; `pending` (run again) when its removal undid its effects (containers), and for records older than `stateBeforeRemoval`',
  },
  rerun: {
    from: DEPLOYMENT_STATES.filter((s) => s !== 'running' && s !== 'reconverging'),
    to: 'pending',
    signal: ['reset'],
    meaning: '`deploy --rerun`: run again, with a new signal (an undelivered one of the earlier run is dropped)',
  },
  // A re-run leaves the signal as it is: no signal event goes with any of these, so the store refuses a write that
  // would queue one, and a pending signal (never in `reconverging`, which does not hold it) keeps its deployment in
  // `done` until it is settled.
  'reconverge-started': {
    from: ['done', 'signalled'],
    to: 'reconverging',
    quiet: true,
    meaning:
      'its reconverge interval has passed: the hook runs again with the inputs it last had (not while its signal is pending)',
  },
  'reconverge-finished': {
    from: ['reconverging'],
    to: BEFORE_RECONVERGE,
    quiet: true,
    meaning:
      'the re-run ended: its outcome (converged, changed or failed) is kept on the record; Heat is not signalled',
  },
  'reconverge-stopped': {
    from: ['reconverging'],
    to: BEFORE_RECONVERGE,
    quiet: true,
    meaning: 'a shutdown, a new deployment or an operator command stopped the re-run: no outcome, the last one stays',
  },
  'reconverge-interrupted': {
    from: ['reconverging'],
    to: BEFORE_RECONVERGE,
    quiet: true,
    meaning:
      'found re-running after the agent died: what it left running is ended and the re-run counts as failed, never as a first run',
  },
};

export const TRANSITION_EVENTS = Object.keys(EVENTS) as TransitionEvent[];

export interface Transition {
  /** undefined: the record is created in `to`. */
  readonly from: DeploymentState | undefined;
  readonly event: TransitionEvent;
  readonly to: Target;
}

/** The table as one row per (from, event), in the order of EVENTS. */
export const TRANSITIONS: readonly Transition[] = TRANSITION_EVENTS.flatMap((event) =>
  EVENTS[event].from.map((from): Transition => ({ from, event, to: EVENTS[event].to })),
);

/**
 * What a target depends on: the record's state (undefined: no record yet), for listed-again its earlier one, and for
 * the end of a re-run the state it started from.
 */
export interface Position {
  readonly state: DeploymentState | undefined;
  readonly stateBeforeRemoval?: DeploymentState | undefined;
  readonly reconverge?: { readonly from?: DeploymentState | undefined } | undefined;
}

/** The state `event` moves a record at `at` to; undefined when the event is not allowed there. */
export function targetOf(at: Position, event: TransitionEvent): DeploymentState | undefined {
  const rule = EVENTS[event];
  if (!rule.from.includes(at.state)) return undefined;
  if (rule.to === BEFORE_REMOVAL) return restoredState(at.stateBeforeRemoval);
  if (rule.to === BEFORE_RECONVERGE) return returnState(at.reconverge?.from);
  return rule.to;
}

/**
 * Where a re-run returns to: the state it started from. A record that does not say (damaged) returns to done, which
 * claims no more than that a result is stored.
 */
function returnState(from: DeploymentState | undefined): DeploymentState {
  return from !== undefined && EVENTS['reconverge-started'].from.includes(from) ? from : 'done';
}

/**
 * Where a removed record goes back to: the state it left the metadata from. Records from before that field was kept
 * (and a damaged one naming a state nothing leaves the metadata from) start over from pending.
 */
function restoredState(before: DeploymentState | undefined): DeploymentState {
  return before !== undefined && EVENTS['left-metadata'].from.includes(before) ? before : 'pending';
}

/**
 * The move of the record's signal that goes with `event`: the signal event, 'kept' when the signal stays as it is
 * and may, undefined when the table allows neither.
 */
export function signalMoveWith(
  event: TransitionEvent,
  from: SignalState,
  to: SignalState,
): SignalEvent | 'kept' | undefined {
  const rule = EVENTS[event];
  if (from === to && rule.signalRequired !== true) return 'kept';
  return signalEventFor(from, to, rule.signal ?? []);
}

/**
 * Signal moves a record makes on its own, while its deployment stays where it is (the outbox's attempts that do not
 * deliver), and only in a state that holds its signal. A delivery moves the deployment too (signal-delivered).
 */
export const SIGNAL_EVENTS_IN_PLACE: readonly SignalEvent[] = ['attempt-failed', 'gave-up', 'unsendable'];

// The order of the writes of one hook run, each durable (fsync, rename) before the next starts. The decision of the
// next pass (decide.ts) depends on it: deployed/<id>.json before `running` so a deployed file without a
// record can only mean an earlier agent ran it; `running` before the hook so a crash mid-run is seen as an
// interrupted run; the notify file before `done` so upstream tools never see a done record without it; `done` (with
// the signal queued in the record) before the first attempt so a signal is never lost.
export const HOOK_RUN_WRITES = [
  'record pending',
  'deployed file',
  'running',
  'hook pid',
  'notify file',
  'done (result and queued signal)',
  'signalled',
] as const;
