import { targetOf } from './machine.js';
import type { DeploymentRecord } from './record.js';
import type { DeploymentState } from './states.js';

// What a deployment record keeps of its re-runs on a reconverge interval (src/deploy/reconverge/): how many started,
// the one in progress, and the outcome of the last one. A re-run never signals Heat, so none of this reaches Heat;
// `status` reports it.

/** What a re-run on a reconverge interval found: nothing to change, drift it repaired, or a failure. */
export const RECONVERGE_OUTCOMES = ['converged', 'changed', 'failed'] as const;
export type ReconvergeOutcome = (typeof RECONVERGE_OUTCOMES)[number];

/** The outcome of one re-run that ended (or was found interrupted). */
export interface ReconvergeResult {
  readonly outcome: ReconvergeOutcome;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly exitCode?: number | null;
  /** deploy_status_code of the re-run, as text. */
  readonly statusCode?: string;
  /** Resources the tool said it changed, when it said a number. */
  readonly changes?: number;
  /** Why it failed, in one line. */
  readonly reason?: string;
}

/** The re-runs of a finished deployment on its reconverge interval. */
export interface ReconvergeRecord {
  /** Re-runs started. */
  readonly runs: number;
  /** While reconverging: the state the re-run returns to. */
  readonly from?: DeploymentState;
  /** When the last re-run started, and when it ended (finished, stopped or found interrupted). */
  readonly startedAt?: string;
  readonly endedAt?: string;
  /** The last re-run that finished or was found interrupted (a stopped one leaves it as it was). */
  readonly last?: ReconvergeResult;
}

// Deployment actions whose run is never repeated on an interval: a deletion or a suspension done again would undo
// what came after it.
const NOT_REPEATED: ReadonlySet<string> = new Set(['DELETE', 'SUSPEND']);

/**
 * Whether a re-run may start from this record: its own run finished (done or signalled) and did not fail (Heat has
 * that failure; a new stack update or `deploy --rerun` is the way on), no signal of it waits for delivery (a re-run
 * never stands in its way), and its action may be repeated.
 */
export function canReconverge(record: DeploymentRecord): boolean {
  return (
    targetOf(record, 'reconverge-started') !== undefined &&
    record.signal.state !== 'pending' &&
    record.failed !== true &&
    !NOT_REPEATED.has(record.action)
  );
}

/**
 * When the next re-run is due, in epoch ms: an interval after the last re-run ended (finished, stopped or found
 * interrupted), else after the deployment's own run ended (adopted ones: when adopted). Counting from the end, never
 * from the start, means that a re-run which ends badly (a crash, a stop) waits a whole interval before the next.
 */
export function reconvergeDueAt(record: DeploymentRecord, intervalSeconds: number, now: number): number {
  const base = Date.parse(record.reconverge?.endedAt ?? record.endedAt ?? record.updatedAt);
  return (Number.isFinite(base) ? base : now) + intervalSeconds * 1000;
}
