import type { AgentConfig } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { scrubText } from '../log/redact.js';
import type { Transport } from '../heat/signal-target.js';
import { storeFor, type DeploymentRecord, type DeploymentState, type SignalState } from '../state/store.js';
import { rerunStatusOf, type RerunStatus } from './rerun-status.js';

// `os-config-agent status`: what the agent knows about every deployment, from the state records (read only). The
// signal's target and body stay out of it: they hold credentials and can be large.

export interface DeploymentStatus {
  readonly id: string;
  readonly name: string;
  readonly group: string;
  readonly action: string;
  readonly state: DeploymentState;
  readonly firstSeenAt: string;
  readonly startedAt?: string;
  readonly endedAt?: string;
  readonly removedAt?: string;
  readonly hook?: string;
  readonly hookStarts: number;
  readonly exitCode?: number | null;
  readonly statusCode?: string;
  readonly failed?: boolean;
  readonly adopted?: boolean;
  readonly reruns?: number;
  readonly reboots?: number;
  readonly signal: {
    readonly state: SignalState;
    readonly transport: Transport;
    readonly attempts: number;
    readonly sentAt?: string;
    readonly nextAttemptAt?: string;
    readonly lastStatus?: number;
  };
  readonly lastError?: string;
  /** Re-runs on a reconverge interval, and the last one's outcome (reconverge.ts). */
  readonly reconverge?: RerunStatus;
}

export function toStatus(r: DeploymentRecord): DeploymentStatus {
  const reconverge = rerunStatusOf(r);
  const s = r.signal;
  const lastError = r.lastError ?? s.lastError;
  return {
    id: r.id,
    name: r.name,
    group: r.group,
    action: r.action,
    state: r.state,
    firstSeenAt: r.firstSeenAt,
    ...(r.startedAt ? { startedAt: r.startedAt } : {}),
    ...(r.endedAt ? { endedAt: r.endedAt } : {}),
    ...(r.removedAt ? { removedAt: r.removedAt } : {}),
    ...(r.hook ? { hook: r.hook } : {}),
    hookStarts: r.hookStarts,
    ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
    ...(r.statusCode !== undefined ? { statusCode: r.statusCode } : {}),
    ...(r.failed !== undefined ? { failed: r.failed } : {}),
    ...(r.adopted ? { adopted: true } : {}),
    ...(r.reruns ? { reruns: r.reruns } : {}),
    ...(r.reboots ? { reboots: r.reboots } : {}),
    signal: {
      state: s.state,
      transport: s.transport,
      attempts: s.attempts,
      ...(s.sentAt ? { sentAt: s.sentAt } : {}),
      ...(s.state === 'pending' && s.nextAttemptAt ? { nextAttemptAt: s.nextAttemptAt } : {}),
      ...(s.lastStatus !== undefined ? { lastStatus: s.lastStatus } : {}),
    },
    ...(lastError ? { lastError: scrubText(lastError) } : {}),
    ...(reconverge ? { reconverge } : {}),
  };
}

/** A record file that cannot be used (DeploymentRecordError): its deployment is held until the operator clears it. */
export interface UnusableRecord {
  readonly id: string;
  readonly file: string;
  readonly problem: string;
}

/** Every known deployment, oldest first, and the records that cannot be used (by id). */
export async function readStatusAll(
  config: AgentConfig,
  log: Logger,
): Promise<{ deployments: DeploymentStatus[]; unusable: UnusableRecord[] }> {
  const { records, unusable } = await storeFor(config, log).listAll('ignore');
  return {
    deployments: records
      .sort((a, b) => a.firstSeenAt.localeCompare(b.firstSeenAt) || a.id.localeCompare(b.id))
      .map(toStatus),
    unusable: unusable
      .map((e) => ({ id: e.deploymentId, file: e.file, problem: e.problem }))
      .sort((a, b) => a.id.localeCompare(b.id)),
  };
}
