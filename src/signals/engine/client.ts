import type { Logger } from '../../log/logger.js';
import { decideAttempt, type AttemptDecision, type PendingSignal } from './attempt.js';
import type { EngineDeps } from './policy.js';

// A client of the engine is a store of signals: the outbox (the signal inside each deployment record) and the
// cfn-signal queue (one file per signal). Each reads and writes only its own storage; the engine attempts, decides
// and logs the same way for both.

/** The log lines of one client's attempts (fixed messages, so operators and tests find them). */
export interface AttemptMessages {
  readonly unsendable: string;
  /** Omitted where the write already logs the delivery (a deployment's state change). */
  readonly sent?: string;
  readonly gaveUp: string;
  readonly retry: string;
}

export interface SignalClient<E> {
  readonly messages: AttemptMessages;
  /** Why a stored signal without its target or body cannot be sent, in this store's words (kept as its lastError). */
  readonly unsendableReason: string;
  /** The signal `entry` holds. */
  pendingOf(entry: E): PendingSignal;
  /** The logger of `entry`'s lines (bound to its id), and the fields naming where its signal goes (redacted). */
  logOf(entry: E): Logger;
  fieldsOf(entry: E): Record<string, unknown>;
  /** Write the decision to `entry`'s storage, moving its signal by the decision's event; the entry as written. */
  record(entry: E, decision: AttemptDecision): Promise<E>;
}

/** One attempt of `entry`'s signal; its outcome is on disk when this returns (unchanged after a shutdown). */
export async function attemptOnce<E>(client: SignalClient<E>, entry: E, deps: EngineDeps): Promise<E> {
  const log = client.logOf(entry);
  const decision = await decideAttempt(client.pendingOf(entry), client.unsendableReason, deps, log);
  if (!decision) return entry;
  const next = await client.record(entry, decision);
  logDecision(log, client.messages, client.fieldsOf(entry), decision);
  return next;
}

function logDecision(
  log: Logger,
  messages: AttemptMessages,
  fields: Record<string, unknown>,
  decision: AttemptDecision,
): void {
  if (decision.event === 'unsendable') {
    log.error({ code: 'ERR_SIGNAL', ...fields }, messages.unsendable);
    return;
  }
  const { status, attempts } = decision;
  if (decision.event === 'delivered') {
    if (messages.sent !== undefined) log.info({ ...fields, status, attempts }, messages.sent);
  } else if (decision.event === 'gave-up') {
    log.error({ code: 'ERR_SIGNAL', ...fields, status, attempts, reason: decision.lastError }, messages.gaveUp);
  } else {
    const retryInSeconds = Math.round(decision.retryInMs / 100) / 10;
    log.warn(
      { code: 'ERR_SIGNAL', ...fields, status, attempts, retryInSeconds, reason: decision.lastError },
      messages.retry,
    );
  }
}
