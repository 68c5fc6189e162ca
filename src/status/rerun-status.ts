import { scrubText } from '../log/redact.js';
import type { DeploymentRecord, ReconvergeResult } from '../state/store.js';

// A deployment's re-runs on its reconverge interval as `status` reports them: how many, whether one runs now, and the
// last one's outcome.

export interface RerunStatus {
  /** Re-runs started. */
  readonly runs: number;
  /** A re-run is in progress now. */
  readonly running: boolean;
  readonly last?: ReconvergeResult;
}

/** A record's re-runs as `status` shows them (the reason scrubbed of anything credential-shaped). */
export function rerunStatusOf(r: DeploymentRecord): RerunStatus | undefined {
  const rc = r.reconverge;
  if (rc === undefined) return undefined;
  const last = rc.last;
  return {
    runs: rc.runs,
    running: r.state === 'reconverging',
    ...(last
      ? {
          last: {
            outcome: last.outcome,
            startedAt: last.startedAt,
            endedAt: last.endedAt,
            ...(last.exitCode !== undefined ? { exitCode: last.exitCode } : {}),
            ...(last.statusCode !== undefined ? { statusCode: last.statusCode } : {}),
            ...(last.changes !== undefined ? { changes: last.changes } : {}),
            ...(last.reason !== undefined ? { reason: scrubText(last.reason) } : {}),
          },
        }
      : {}),
  };
}
