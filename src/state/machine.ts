// The deployment state machine, declared once: which states there are, what each one means to the readers of the
// records (status, status --wait, pruning, the outbox, the console line), and which moves between them the agent
// makes, each named by the event that causes it. StateStore refuses any move not listed here, so a new code path
// that would put a record somewhere unexpected fails loudly in tests instead of leaving a record that no reader
// understands. docs/state-machine.md has the same table with the crash windows between the writes.

export const DEPLOYMENT_STATES = [
  'pending',
  'running',
  'awaiting-reboot',
  'applied',
  'done',
  'signalled',
  'skipped',
  'removed',
] as const;
export type DeploymentState = (typeof DEPLOYMENT_STATES)[number];

export interface StateMeaning {
  /** One line for docs and error messages. */
  readonly meaning: string;
  /** Nothing more happens to it unless Heat lists it again, it leaves the metadata or an operator reruns it. */
  readonly terminal: boolean;
  /** `status --wait` keeps waiting while a deployment is in this state (exit code 3). */
  readonly inProgress: boolean;
  /** Its signal lives in the outbox: a pending signal is retried, a failed one is reported as undelivered. */
  readonly holdsSignal: boolean;
  /** The record carries a hook result (exit code, status code) that the console line and status show. */
  readonly hasResult: boolean;
  /** Pruned [deploy] prune_after days after it entered this state. */
  readonly prunable: boolean;
  /** Heat still lists it, so its outcome counts for `status` (a removed deployment's failure is history). */
  readonly listed: boolean;
}

export const STATE_MEANINGS: Readonly<Record<DeploymentState, StateMeaning>> = {
  pending: {
    meaning: 'seen in the metadata; the hook has not started',
    terminal: false,
    inProgress: true,
    holdsSignal: false,
    hasResult: false,
    prunable: false,
    listed: true,
  },
  running: {
    meaning: 'the hook was started (an interrupted one is run once more, then failed)',
    terminal: false,
    inProgress: true,
    holdsSignal: false,
    hasResult: false,
    prunable: false,
    listed: true,
  },
  'awaiting-reboot': {
    meaning: 'the hook exited 194 and asked for a reboot; it runs again in the next boot',
    terminal: false,
    inProgress: true,
    holdsSignal: false,
    hasResult: false,
    prunable: false,
    listed: true,
  },
  applied: {
    meaning: 'an os-apply-config deployment; signalled when the cycle that applied it ends',
    terminal: false,
    inProgress: true,
    holdsSignal: false,
    hasResult: false,
    prunable: false,
    listed: true,
  },
  done: {
    meaning: 'the result and the signal are stored; the signal is in the outbox until delivered',
    terminal: false,
    inProgress: false,
    holdsSignal: true,
    hasResult: true,
    prunable: false,
    listed: true,
  },
  signalled: {
    meaning: 'Heat has the signal (or an earlier agent had deployed it: adopted)',
    terminal: true,
    inProgress: false,
    holdsSignal: false,
    hasResult: true,
    prunable: false,
    listed: true,
  },
  skipped: {
    meaning: 'nothing to run and nothing to signal',
    terminal: true,
    inProgress: false,
    holdsSignal: false,
    hasResult: false,
    prunable: false,
    listed: true,
  },
  removed: {
    meaning: 'gone from the metadata; its undelivered signal was cancelled',
    terminal: true,
    inProgress: false,
    holdsSignal: false,
    hasResult: false,
    prunable: true,
    listed: false,
  },
};

export type TransitionEvent =
  | 'seen'
  | 'adopted'
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
  | 'rerun';

export interface Transition {
  /** undefined: the record is created in `to`. */
  readonly from: DeploymentState | undefined;
  readonly to: DeploymentState;
  readonly event: TransitionEvent;
}

// States a hook run can start from: pending, an interrupted run (running) and a run after the asked-for reboot.
const RUNNABLE = ['pending', 'running', 'awaiting-reboot'] as const;

function fromEach(froms: readonly DeploymentState[], to: DeploymentState, event: TransitionEvent): Transition[] {
  return froms.map((from) => ({ from, to, event }));
}

const NOT_REMOVED = DEPLOYMENT_STATES.filter((s) => s !== 'removed');

export const TRANSITIONS: readonly Transition[] = [
  { from: undefined, to: 'pending', event: 'seen' },
  // deployed/<id>.json exists but no record: an earlier agent (upstream's, or one whose records were lost) ran it.
  { from: undefined, to: 'signalled', event: 'adopted' },
  { from: 'pending', to: 'running', event: 'hook-started' },
  { from: 'running', to: 'running', event: 'hook-restarted' },
  { from: 'awaiting-reboot', to: 'running', event: 'rerun-after-reboot' },
  { from: 'running', to: 'done', event: 'hook-finished' },
  // A missing or non-executable hook is a failure signal without a run; an interrupted-too-often hook likewise.
  ...fromEach(RUNNABLE, 'done', 'hook-failed-to-run'),
  { from: 'running', to: 'done', event: 'interrupted-too-often' },
  { from: 'running', to: 'awaiting-reboot', event: 'reboot-requested' },
  { from: 'awaiting-reboot', to: 'done', event: 'reboot-failed' },
  ...fromEach(RUNNABLE, 'skipped', 'nothing-to-run'),
  ...fromEach(RUNNABLE, 'applied', 'applied-by-cycle'),
  // The end of the cycle: applied ones get their signal; when the cycle failed, so do pending ones it never reached.
  ...fromEach(['applied', 'pending'], 'done', 'cycle-ended'),
  { from: 'done', to: 'signalled', event: 'signal-delivered' },
  ...fromEach(NOT_REMOVED, 'removed', 'left-metadata'),
  // Back to where it was when it left (stateBeforeRemoval; pending for records from before that field).
  ...NOT_REMOVED.map((to): Transition => ({ from: 'removed', to, event: 'listed-again' })),
  // `deploy --rerun`: anything but a running hook goes back to pending.
  ...fromEach(
    DEPLOYMENT_STATES.filter((s) => s !== 'running'),
    'pending',
    'rerun',
  ),
];

/** The events that move `from` to `to` (empty: the move is not allowed). */
export function eventsFor(from: DeploymentState | undefined, to: DeploymentState): TransitionEvent[] {
  return TRANSITIONS.filter((t) => t.from === from && t.to === to).map((t) => t.event);
}

export function isAllowedTransition(from: DeploymentState | undefined, to: DeploymentState): boolean {
  return TRANSITIONS.some((t) => t.from === from && t.to === to);
}

export function isDeploymentState(value: unknown): value is DeploymentState {
  return (DEPLOYMENT_STATES as readonly unknown[]).includes(value);
}

/** The states with a property, in table order (e.g. what `status --wait` waits for). */
export function statesWhere(property: keyof Omit<StateMeaning, 'meaning'>): DeploymentState[] {
  return DEPLOYMENT_STATES.filter((s) => STATE_MEANINGS[s][property]);
}

export function isInProgress(state: DeploymentState): boolean {
  return STATE_MEANINGS[state].inProgress;
}

export function holdsSignal(state: DeploymentState): boolean {
  return STATE_MEANINGS[state].holdsSignal;
}

export function hasResult(state: DeploymentState): boolean {
  return STATE_MEANINGS[state].hasResult;
}

export function isPrunable(state: DeploymentState): boolean {
  return STATE_MEANINGS[state].prunable;
}

export function isListed(state: DeploymentState): boolean {
  return STATE_MEANINGS[state].listed;
}

// The order of the writes of one hook run, each durable (fsync, rename) before the next starts. The decision of the
// next pass (dispatch-decision.ts) depends on it: deployed/<id>.json before `running` so a deployed file without a
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
