import type { LoadedConfig } from '../config/load.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import { DeployLockedError } from '../state/errors.js';
import { holdsSignal } from '../state/machine.js';
import { withDeployLock } from '../state/deploy-lock.js';
import { signalRetryDelayMs } from './backoff.js';
import type { SignalTarget } from '../heat/signal-target.js';
import {
  deployLockFile,
  SIGNAL_HISTORY_MAX,
  storeFor,
  type DeploymentRecord,
  type SignalAttempt,
  type SignalRecord,
  type StateStore,
} from '../state/store.js';
import { sendCfnSignal } from './transports/cfn-signal.js';
import type { Delivery, DeliveryContext } from './transports/delivery.js';
import { sendHeatSignal } from './transports/heat-signal.js';
import { sendTempUrlSignal } from './transports/temp-url-signal.js';
import { sendZaqarSignal } from './transports/zaqar-signal.js';

// The signal outbox: every record in a state that holds its signal (`done`, deployment-states.ts) whose signal is pending. It lives in the records themselves, so a
// signal is on disk before its first attempt and survives restarts. Each attempt is one request with a short timeout
// and no client-level retries; a failure is rescheduled with capped, jittered exponential backoff, so an unreachable
// Heat never holds up other deployments or the collect loop. A final answer (a 4xx other than 408/429) or
// [deploy] signal_max_attempts failures settle the signal as failed; it is not retried.
//
// Delivery is at least once only in one narrow window: if the agent dies after Heat accepted a signal but before the
// record says so, the signal is sent again after the restart. Heat ignores a signal for a deployment that is no
// longer in progress, so the repeat is harmless.

export interface OutboxDeps {
  readonly store: StateStore;
  readonly http: HttpClient;
  readonly log: Logger;
  readonly timeoutSeconds: number;
  readonly maxBackoffSeconds: number;
  readonly maxAttempts: number;
  readonly now: () => number;
  readonly random: () => number;
  readonly signal?: AbortSignal;
  /** [zaqar] use_websockets: ZAQAR_SIGNAL goes over the websocket API. */
  readonly zaqarWebsockets?: boolean;
}

export interface FlushReport {
  readonly attempted: number;
  readonly sent: number;
  readonly failed: number;
  /** Signals still waiting after this flush. */
  readonly pending: number;
  /** Epoch ms of the earliest pending retry, if any. */
  readonly nextDueAt?: number;
  /** Another process holds the deployment lock; nothing was attempted. */
  readonly busy?: boolean;
}

/** A pending signal, ready for its first attempt. */
export function queuedSignal(target: SignalTarget, text: string): SignalRecord {
  return { state: 'pending', transport: target.transport, attempts: 0, target, text };
}

export function isDue(record: DeploymentRecord, now: number): boolean {
  if (!holdsSignal(record.state) || record.signal.state !== 'pending') return false;
  return record.signal.nextAttemptAt === undefined || Date.parse(record.signal.nextAttemptAt) <= now;
}

function deliver(target: SignalTarget, text: string, ctx: DeliveryContext): Promise<Delivery> {
  switch (target.transport) {
    case 'CFN_SIGNAL':
      return sendCfnSignal(target, text, ctx);
    case 'TEMP_URL_SIGNAL':
      return sendTempUrlSignal(target, text, ctx);
    case 'HEAT_SIGNAL':
      return sendHeatSignal(target, text, ctx);
    case 'ZAQAR_SIGNAL':
      return sendZaqarSignal(target, text, ctx);
    case 'NO_SIGNAL':
      return Promise.resolve({ outcome: 'sent', status: 0 });
  }
}

function where(target: SignalTarget): string {
  if (target.transport === 'CFN_SIGNAL' || target.transport === 'TEMP_URL_SIGNAL') return redactUrl(target.url);
  if (target.transport === 'HEAT_SIGNAL')
    return `${redactUrl(target.authUrl)} (stack ${target.stackId}, resource ${target.resourceName})`;
  if (target.transport === 'ZAQAR_SIGNAL') return `${redactUrl(target.authUrl)} (queue ${target.queueId})`;
  return 'nowhere';
}

/** One delivery attempt of a record's pending signal; the outcome is written to the record before returning. */
export async function attemptSignal(record: DeploymentRecord, deps: OutboxDeps): Promise<DeploymentRecord> {
  const log = deps.log.child({ deploymentId: record.id, deploymentName: record.name });
  const { target, text } = record.signal;
  const at = new Date(deps.now()).toISOString();
  const attempts = record.signal.attempts + 1;
  if (!target || text === undefined) {
    const lastError = 'the pending signal has no target or body in its record; it cannot be sent';
    log.error({ code: 'ERR_SIGNAL' }, 'signal cannot be sent');
    return deps.store.save({
      ...record,
      lastError,
      signal: { state: 'failed', transport: record.signal.transport, attempts, lastAttemptAt: at, lastError },
    });
  }
  const delivery = await deliver(target, text, {
    http: deps.http,
    log,
    timeoutSeconds: deps.timeoutSeconds,
    now: deps.now,
    ...(deps.signal ? { signal: deps.signal } : {}),
    ...(deps.zaqarWebsockets ? { zaqarWebsockets: true } : {}),
  });
  // A shutdown during the attempt says nothing about Heat: the attempt is not counted.
  if (delivery.outcome === 'retry' && deps.signal?.aborted) return record;
  const base = {
    transport: target.transport,
    attempts,
    lastAttemptAt: at,
    ...(delivery.status !== undefined ? { lastStatus: delivery.status } : {}),
  };
  const attempt = (outcome: SignalAttempt['outcome'], error?: string) => ({
    history: withAttempt(record.signal.history, {
      at,
      outcome,
      ...(delivery.status !== undefined ? { status: delivery.status } : {}),
      ...(error ? { error: error.slice(0, 300) } : {}),
    }),
  });
  if (delivery.outcome === 'sent') {
    return deps.store.transition(
      record,
      'signalled',
      { signal: { state: 'sent', sentAt: at, ...base, ...attempt('sent') } },
      { attempts, httpStatus: delivery.status },
    );
  }
  if (delivery.outcome === 'final' || attempts >= deps.maxAttempts) {
    const lastError =
      delivery.outcome === 'final'
        ? `${delivery.error}; the answer is final, not retried`
        : `${delivery.error}; gave up after ${attempts} attempts`;
    log.error(
      {
        code: 'ERR_SIGNAL',
        transport: target.transport,
        destination: where(target),
        httpStatus: delivery.status,
        attempts,
        reason: lastError,
      },
      'signal failed; not retried',
    );
    return deps.store.save({
      ...record,
      lastError,
      signal: { state: 'failed', lastError, ...base, ...attempt('failed', delivery.error) },
    });
  }
  const delayMs = signalRetryDelayMs(
    attempts,
    deps.maxBackoffSeconds * 1000,
    deps.random(),
    delivery.retryAfterSeconds,
  );
  const nextAttemptAt = new Date(deps.now() + delayMs).toISOString();
  log.warn(
    {
      code: 'ERR_SIGNAL',
      transport: target.transport,
      destination: where(target),
      httpStatus: delivery.status,
      attempts,
      delayMs,
      reason: delivery.error,
    },
    'signal attempt failed; will retry',
  );
  return deps.store.save({
    ...record,
    signal: {
      ...record.signal,
      ...base,
      nextAttemptAt,
      lastError: delivery.error,
      ...attempt('retry', delivery.error),
    },
  });
}

/** The attempt history with one more entry, the oldest dropped beyond the bound (a signal retried for days stays small). */
function withAttempt(history: readonly SignalAttempt[] | undefined, entry: SignalAttempt): SignalAttempt[] {
  return [...(history ?? []), entry].slice(-SIGNAL_HISTORY_MAX);
}

/** Attempt every due signal once (oldest first), except those in `exclude`. */
export async function flushDue(deps: OutboxDeps, exclude: ReadonlySet<string> = new Set()): Promise<FlushReport> {
  const { records } = await deps.store.listAll('quiet');
  const now = deps.now();
  const due = records
    .filter((r) => isDue(r, now) && !exclude.has(r.id))
    .sort((a, b) => a.firstSeenAt.localeCompare(b.firstSeenAt));
  let attempted = 0;
  let sent = 0;
  let failed = 0;
  const after = new Map(records.map((r) => [r.id, r]));
  for (const record of due) {
    if (deps.signal?.aborted) break;
    const next = await attemptSignal(record, deps);
    attempted++;
    if (next.signal.state === 'sent') sent++;
    if (next.signal.state === 'failed') failed++;
    after.set(next.id, next);
  }
  return { attempted, sent, failed, ...pendingSummary([...after.values()]) };
}

export function pendingSummary(records: readonly DeploymentRecord[]): { pending: number; nextDueAt?: number } {
  const pending = records.filter((r) => holdsSignal(r.state) && r.signal.state === 'pending');
  const times = pending.map((r) => (r.signal.nextAttemptAt ? Date.parse(r.signal.nextAttemptAt) : 0));
  return { pending: pending.length, ...(times.length > 0 ? { nextDueAt: Math.min(...times) } : {}) };
}

export interface FlushOptions {
  readonly now?: () => number;
  readonly random?: () => number;
  readonly signal?: AbortSignal;
}

/**
 * For the daemon, between polls: deliver the signals that are due, under the deployment lock. When another process
 * is running deployments, nothing is attempted (it flushes its own). Throws only for local state failures.
 */
export async function flushOutbox(
  loaded: LoadedConfig,
  log: Logger,
  http: HttpClient,
  options: FlushOptions = {},
): Promise<FlushReport> {
  const config = loaded.config;
  const now = options.now ?? Date.now;
  const store = storeFor(config, log, now);
  try {
    return await withDeployLock(deployLockFile(config), () =>
      flushDue({
        store,
        http,
        log,
        timeoutSeconds: config.deploy.signal_timeout,
        maxBackoffSeconds: config.deploy.signal_max_backoff,
        maxAttempts: Math.max(1, config.deploy.signal_max_attempts),
        now,
        random: options.random ?? Math.random,
        ...(options.signal ? { signal: options.signal } : {}),
        zaqarWebsockets: config.zaqar.use_websockets,
      }),
    );
  } catch (err) {
    if (err instanceof DeployLockedError) {
      log.debug({ holder: err.holderPid }, 'outbox flush skipped: another process is running deployments');
      return { attempted: 0, sent: 0, failed: 0, pending: 0, busy: true };
    }
    throw err;
  }
}
