// The deployment states, and what each one means to the readers of the records: status, status --wait, pruning, the
// outbox, the console line. The events that move a record between them are in machine.ts.

export const DEPLOYMENT_STATES = [
  'pending',
  'running',
  'awaiting-reboot',
  'applied',
  'done',
  'signalled',
  'reconverging',
  'skipped',
  'removed',
] as const;
export type DeploymentState = (typeof DEPLOYMENT_STATES)[number];

export interface StateMeaning {
  /** One line for docs and error messages. */
  readonly meaning: string;
  /**
   * Nothing more happens to it unless Heat lists it again, it leaves the metadata or an operator reruns it (re-runs on
   * a reconverge interval aside: they never change what Heat was told).
   */
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
  reconverging: {
    meaning:
      'a finished deployment runs again on its reconverge interval, with the inputs it last had; Heat is not signalled, and it returns to the state it left',
    terminal: false,
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

export function isDeploymentState(value: unknown): value is DeploymentState {
  return (DEPLOYMENT_STATES as readonly unknown[]).includes(value);
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
