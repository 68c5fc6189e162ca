import type { Logger } from '../log/logger.js';
import { EVENTS, hasResult, type DeploymentState, type TransitionEvent } from './machine.js';
import type { DeploymentRecord } from './record.js';
import type { CheckedMove } from './write-checks.js';

// The one log line of each transition ("deployment state changed"), written once the move is on disk.

/** A move checked against the state machine, and what its log line and listener need once it is on disk. */
export interface CheckedRecordMove {
  readonly from: DeploymentState | undefined;
  readonly event: TransitionEvent;
  readonly written: DeploymentRecord;
  readonly signalMove: CheckedMove['signal'];
  readonly logFields: Record<string, unknown>;
  readonly failedBefore: boolean;
}

/** The move's log line. */
export function logTransition(log: Logger, move: CheckedRecordMove): void {
  const { written, event, signalMove } = move;
  // The move that records a failure is a warning (journalctl -p warning shows it); the moves after it are not news,
  // and the quiet events (a re-run's own moves) are for debugging.
  const level = written.failed === true && !move.failedBefore ? 'warn' : EVENTS[event].quiet ? 'debug' : 'info';
  log[level](
    {
      deploymentId: written.id,
      deploymentName: written.name,
      group: written.group,
      action: written.action,
      event,
      from: move.from ?? null,
      to: written.state,
      ...(signalMove !== 'kept' ? { signalEvent: signalMove } : {}),
      ...(hasResult(written.state) ? { signalState: written.signal.state, transport: written.signal.transport } : {}),
      ...move.logFields,
    },
    'deployment state changed',
  );
}
