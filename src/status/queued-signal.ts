import type { AgentConfig } from '../config/options.js';
import { scrubText } from '../log/redact.js';
import { isJsonObject } from '../util/json-merge.js';
import { isSafeFileName } from '../util/safe-name.js';
import { signalQueueDir } from '../state/signal-queue-paths.js';
import type { QueuedSignal } from '../signals/cfn-signal-queue/entry.js';
import { readQueuedSignal } from '../signals/cfn-signal-queue/files.js';
import { STATUS_VERSION, verdictOf, type Verdict } from './report.js';

// `status <id>` for an entry of the cfn-signal queue (what `cfn-signal` queued, listed by `status` under UNDELIVERED
// SIGNALS): where it goes, its attempts and how they ended, and what it says while it waits. Read only. The URL is
// shown without its signature, and the body's data is never shown (only its status, reason and unique id).

export interface QueuedSignalDetail {
  readonly version: 1;
  /** The queue entry as stored, less its URL (`to`: without the signature), token and body. */
  readonly signal: Pick<
    QueuedSignal,
    | 'id'
    | 'state'
    | 'createdAt'
    | 'updatedAt'
    | 'attempts'
    | 'nextAttemptAt'
    | 'lastAttemptAt'
    | 'lastStatus'
    | 'lastError'
    | 'sentAt'
  > & {
    readonly kind: 'cfn-signal' | 'wc-notify';
    readonly to: string;
  };
  /** From the body, which the queue keeps only until the signal is settled. */
  readonly says?: { readonly status?: string; readonly reason?: string; readonly uniqueId?: string };
}

/** The queued signal with this id, or undefined when there is none (or its file cannot be read). */
export async function readQueuedSignalDetail(config: AgentConfig, id: string): Promise<QueuedSignalDetail | undefined> {
  if (!isSafeFileName(id)) return undefined;
  const entry = await readQueuedSignal(signalQueueDir(config), id).catch(() => undefined);
  if (!entry) return undefined;
  const says = entry.text !== undefined ? bodySays(entry.text) : undefined;
  return {
    version: 1,
    signal: {
      kind: entry.kind === 'cfn' ? 'cfn-signal' : 'wc-notify',
      id: entry.id,
      state: entry.state,
      to: scrubText(entry.shownUrl),
      createdAt: entry.createdAt,
      updatedAt: entry.updatedAt,
      attempts: entry.attempts,
      ...(entry.state === 'pending' && entry.nextAttemptAt ? { nextAttemptAt: entry.nextAttemptAt } : {}),
      ...(entry.lastAttemptAt ? { lastAttemptAt: entry.lastAttemptAt } : {}),
      ...(entry.lastStatus !== undefined ? { lastStatus: entry.lastStatus } : {}),
      ...(entry.lastError ? { lastError: scrubText(entry.lastError) } : {}),
      ...(entry.sentAt ? { sentAt: entry.sentAt } : {}),
    },
    ...(says && Object.keys(says).length > 0 ? { says } : {}),
  };
}

/**
 * Pending: still in progress (3); failed for good: a signal not delivered (2); sent: done (0). The whole report's
 * verdict over this one signal, so its code and reason are those `status` gives it in the list.
 */
export function verdictOfQueuedSignal(d: QueuedSignalDetail): Verdict {
  const { state } = d.signal;
  return verdictOf({
    version: STATUS_VERSION,
    agent: { running: false },
    sources: [],
    deployments: [],
    signals: state === 'sent' ? [] : [{ ...d.signal, state }],
  });
}

export function formatQueuedSignal(d: QueuedSignalDetail): string {
  const s = d.signal;
  const lines = [
    `${s.kind} signal ${s.id}`,
    `  state: ${s.state}   to: ${s.to}`,
    `  queued: ${s.createdAt}   last attempt: ${s.lastAttemptAt ?? '-'}   ${s.sentAt ? `sent: ${s.sentAt}` : `next: ${s.nextAttemptAt ?? '-'}`}`,
    `  attempts: ${s.attempts}   last HTTP status: ${s.lastStatus ?? '-'}`,
  ];
  if (s.lastError) lines.push(`  last error: ${s.lastError}`);
  if (d.says)
    lines.push(
      `  says: status ${d.says.status ?? '-'}, reason ${d.says.reason ?? '-'}, unique id ${d.says.uniqueId ?? '-'}`,
    );
  return `${lines.join('\n')}\n`;
}

// A cfn-signal body ({"Status", "Reason", "UniqueId", "Data"}) or a wait condition's ({"status", "reason", "id", "data"}).
function bodySays(text: string): QueuedSignalDetail['says'] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isJsonObject(body)) return undefined;
  const pick = (...keys: string[]) => {
    for (const k of keys) if (typeof body[k] === 'string') return scrubText(body[k]);
    return undefined;
  };
  const status = pick('Status', 'status');
  const reason = pick('Reason', 'reason');
  const uniqueId = pick('UniqueId', 'id');
  return {
    ...(status !== undefined ? { status } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(uniqueId !== undefined ? { uniqueId } : {}),
  };
}
