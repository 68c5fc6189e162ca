import type { Logger } from '../../log/logger.js';
import { SIGNAL_HISTORY_MAX, type SignalAttempt } from '../../state/store.js';
import type { Delivery } from '../transports/delivery.js';
import { deliver } from '../transports/registry.js';
import type { DeliveryTarget } from '../transports/transport.js';
import { signalRetryDelayMs } from './backoff.js';
import type { EngineDeps } from './policy.js';

// One attempt of one signal, whoever stored it: deliver through the transport the target names, and decide from the
// answer the signal table's event (src/state/signal-machine.ts), the next attempt's time and the history entry.
// Nothing is written here: the client that stored the signal writes the decision to its own storage.

/** A stored signal as the engine sees it. */
export interface PendingSignal {
  /** Undefined (or no text) when the stored signal lacks what sending needs: it is settled as unsendable. */
  readonly target: DeliveryTarget | undefined;
  readonly text: string | undefined;
  /** Attempts made before this one. */
  readonly attempts: number;
  readonly history?: readonly SignalAttempt[] | undefined;
}

interface Attempted {
  /** When the attempt began. */
  readonly at: string;
  /** Attempts made, this one included. */
  readonly attempts: number;
  readonly status?: number;
  /** The attempt history with this attempt, the oldest dropped beyond SIGNAL_HISTORY_MAX. */
  readonly history: SignalAttempt[];
}

/** What the stored signal becomes: the event of the signal table, and the facts the client stores with it. */
export type AttemptDecision =
  | { readonly event: 'unsendable'; readonly at: string; readonly attempts: number; readonly lastError: string }
  | ({ readonly event: 'delivered' } & Attempted)
  | ({ readonly event: 'gave-up'; readonly lastError: string } & Attempted)
  | ({
      readonly event: 'attempt-failed';
      readonly lastError: string;
      readonly nextAttemptAt: string;
      readonly retryInMs: number;
    } & Attempted);

/**
 * Attempt `pending` once and decide what it becomes; undefined when a shutdown cut the attempt short (it says nothing
 * about the server, so it is not counted and nothing is to be written). `unsendableReason` is the client's words for
 * a signal that lacks its target or body.
 */
export async function decideAttempt(
  pending: PendingSignal,
  unsendableReason: string,
  deps: EngineDeps,
  log: Logger,
): Promise<AttemptDecision | undefined> {
  const { policy } = deps;
  const at = new Date(policy.now()).toISOString();
  const attempts = pending.attempts + 1;
  if (pending.target === undefined || pending.text === undefined)
    return { event: 'unsendable', at, attempts, lastError: unsendableReason };
  const delivery = await deliver(pending.target, pending.text, {
    http: deps.http,
    log,
    timeoutSeconds: policy.timeoutSeconds,
    now: policy.now,
    ...(policy.signal ? { signal: policy.signal } : {}),
    ...(policy.zaqarWebsockets ? { zaqarWebsockets: true } : {}),
  });
  if (delivery.outcome === 'retry' && policy.signal?.aborted) return undefined;
  const status = delivery.status !== undefined ? { status: delivery.status } : {};
  if (delivery.outcome === 'sent')
    return { event: 'delivered', at, attempts, ...status, history: withAttempt(pending, at, 'sent', delivery) };
  if (delivery.outcome === 'final' || attempts >= policy.maxAttempts) {
    const lastError =
      delivery.outcome === 'final'
        ? `${delivery.error}; the answer is final, not retried`
        : `${delivery.error}; gave up after ${attempts} attempts`;
    return {
      event: 'gave-up',
      at,
      attempts,
      ...status,
      lastError,
      history: withAttempt(pending, at, 'failed', delivery),
    };
  }
  const retryInMs = signalRetryDelayMs(
    attempts,
    policy.maxBackoffSeconds * 1000,
    policy.random(),
    delivery.retryAfterSeconds,
  );
  return {
    event: 'attempt-failed',
    at,
    attempts,
    ...status,
    lastError: delivery.error,
    nextAttemptAt: new Date(policy.now() + retryInMs).toISOString(),
    retryInMs,
    history: withAttempt(pending, at, 'retry', delivery),
  };
}

/** The history with this attempt appended (a signal retried for days keeps only the newest entries). */
function withAttempt(
  pending: PendingSignal,
  at: string,
  outcome: SignalAttempt['outcome'],
  delivery: Delivery,
): SignalAttempt[] {
  const error = delivery.outcome === 'sent' ? undefined : delivery.error;
  const entry: SignalAttempt = {
    at,
    outcome,
    ...(delivery.status !== undefined ? { status: delivery.status } : {}),
    ...(error ? { error: error.slice(0, 300) } : {}),
  };
  return [...(pending.history ?? []), entry].slice(-SIGNAL_HISTORY_MAX);
}
