import type { AgentConfig } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { scrubText } from '../log/redact.js';
import type { Transport } from '../heat/signal-target.js';
import { hasResult } from '../state/machine.js';
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

const COLUMNS = ['ID', 'NAME', 'GROUP', 'ACTION', 'STATE', 'STARTED', 'ENDED', 'EXIT', 'SIGNAL', 'ERROR'] as const;
const MAX_ERROR_WIDTH = 80;

/** A plain text table, one deployment per line. */
export function formatStatusTable(list: readonly DeploymentStatus[]): string {
  if (list.length === 0) return 'no deployments known\n';
  const rows = list.map((d) => [
    d.id,
    d.name,
    d.group,
    d.action,
    d.state + (d.adopted ? ' (adopted)' : ''),
    shortTime(d.startedAt),
    shortTime(d.endedAt ?? d.removedAt),
    d.exitCode === undefined || d.exitCode === null ? (d.statusCode ?? '-') : String(d.exitCode),
    signalText(d),
    oneLine(d.lastError ?? '-'),
  ]);
  return formatTable(COLUMNS, rows);
}

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function formatTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns), ...rows.map(line)].join('\n') + '\n';
}

export function shortTime(iso: string | undefined): string {
  return iso ? iso.replace(/\.\d{3}Z$/, 'Z') : '-';
}

function signalText(d: DeploymentStatus): string {
  const s = d.signal;
  // A signal is shown once there is a result to signal (and for removed ones, what became of it).
  if (!hasResult(d.state) && d.state !== 'removed') return '-';
  if (s.state === 'none') return s.transport === 'NO_SIGNAL' ? 'none' : '-';
  const base = `${s.state} ${s.transport}`;
  if (s.state === 'pending')
    return `${base} (${s.attempts} tries${s.nextAttemptAt ? `, next ${shortTime(s.nextAttemptAt)}` : ''})`;
  return base;
}

export function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_ERROR_WIDTH ? `${flat.slice(0, MAX_ERROR_WIDTH - 1)}…` : flat;
}
