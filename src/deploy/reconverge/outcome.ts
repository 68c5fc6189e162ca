import type { DeploymentOutput } from '../../heat/deployment.js';
import { judgeSignal } from '../../heat/signal-body.js';
import { CHANGED_KEY, parseChanges } from '../../hooks/kit/change-report.js';
import type { ReconvergeOutcome } from '../../state/store.js';
import type { JsonObject } from '../../util/json-merge.js';

// What a re-run found, from its result as the hook gave it: failed as Heat would judge the signal it is never sent
// (deploy_status_code, an error output), else changed when the hook said so (deploy_changed: true, or a count above
// 0: src/hooks/kit/change-report.ts), else converged. A hook that does not say counts as converged when it succeeds.

export interface RerunVerdict {
  readonly outcome: ReconvergeOutcome;
  readonly statusCode?: string;
  /** Resources changed, when the hook gave a number. */
  readonly changes?: number;
  /** Why it failed. */
  readonly reason?: string;
}

const REASON_CHARS = 300;

export function verdictOfRerun(body: JsonObject, outputs: readonly DeploymentOutput[]): RerunVerdict {
  const judged = judgeSignal(body, outputs);
  const statusCode = judged.statusCode !== undefined ? { statusCode: judged.statusCode } : {};
  if (judged.failed) return { outcome: 'failed', ...statusCode, reason: failureReason(body, judged.reason) };
  const changes = parseChanges(body[CHANGED_KEY]);
  const changed = changes === true || (typeof changes === 'number' && changes > 0);
  return {
    outcome: changed ? 'changed' : 'converged',
    ...statusCode,
    ...(typeof changes === 'number' ? { changes } : {}),
  };
}

/** The verdict's reason and the last line the hook wrote to stderr (where tools say what went wrong). */
function failureReason(body: JsonObject, reason: string | undefined): string {
  const stderr = typeof body.deploy_stderr === 'string' ? body.deploy_stderr : '';
  const last = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .at(-1);
  const text = [reason ?? 'failed', last].filter(Boolean).join(': ');
  return text.length > REASON_CHARS ? `${text.slice(0, REASON_CHARS - 1)}…` : text;
}
