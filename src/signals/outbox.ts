import type { LoadedConfig } from '../config/load.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import type { SignalTarget } from '../heat/signal-target.js';
import { holdsSignal } from '../state/machine.js';
import { deployLockFile, storeFor, type DeploymentRecord, type SignalRecord, type StateStore } from '../state/store.js';
import type { AttemptDecision } from './engine/attempt.js';
import { attemptOnce, type SignalClient } from './engine/client.js';
import { BUSY, FlushTally, waitingSummary, type FlushReport } from './engine/flush-report.js';
import { whenLockFree } from './engine/lock.js';
import { signalPolicyFor, type EngineDeps, type PolicyOverrides } from './engine/policy.js';
import { describeTarget } from './transports/registry.js';

export type { FlushReport } from './engine/flush-report.js';

// The signal outbox: the engine's client for deployment signals. Every record in a state that holds its signal
// (`done`, src/state/states.ts) whose signal is pending is in it. It lives in the records themselves, so a signal is on
// disk before its first attempt and survives restarts; each attempt's outcome is written to the record through the
// store, which moves the signal only as the signal table allows (delivered: the deployment becomes `signalled`).
//
// Delivery is at least once only in one narrow window: if the agent dies after Heat accepted a signal but before the
// record says so, the signal is sent again after the restart. Heat ignores a signal for a deployment that is no
// longer in progress, so the repeat is harmless.

export interface OutboxDeps extends EngineDeps {
  readonly store: StateStore;
}

/** A pending signal, ready for its first attempt. */
export function queuedSignal(target: SignalTarget, text: string): SignalRecord {
  return { state: 'pending', transport: target.transport, attempts: 0, target, text };
}

export function isDue(record: DeploymentRecord, now: number): boolean {
  if (!holdsSignal(record.state) || record.signal.state !== 'pending') return false;
  return record.signal.nextAttemptAt === undefined || Date.parse(record.signal.nextAttemptAt) <= now;
}

function outboxClient(deps: OutboxDeps): SignalClient<DeploymentRecord> {
  return {
    messages: {
      unsendable: 'signal cannot be sent',
      gaveUp: 'signal failed; not retried',
      retry: 'signal attempt failed; will retry',
    },
    unsendableReason: 'the pending signal has no target or body in its record; it cannot be sent',
    pendingOf: ({ signal }) => ({
      target: signal.target,
      text: signal.text,
      attempts: signal.attempts,
      history: signal.history,
    }),
    logOf: (record) => deps.log.child({ deploymentId: record.id, deploymentName: record.name }),
    fieldsOf: ({ signal: { target } }) => (target ? { transport: target.transport, to: describeTarget(target) } : {}),
    record: (record, decision) => recordDecision(deps.store, record, decision),
  };
}

/** The decision written to the record: the signal moved by its event (delivered also moves the deployment). */
function recordDecision(
  store: StateStore,
  record: DeploymentRecord,
  decision: AttemptDecision,
): Promise<DeploymentRecord> {
  const { transport } = record.signal;
  const { at, attempts } = decision;
  if (decision.event === 'unsendable') {
    const { lastError } = decision;
    return store.moveSignal(record, 'unsendable', { transport, attempts, lastAttemptAt: at, lastError }, { lastError });
  }
  const { status, history } = decision;
  const base = { transport, attempts, lastAttemptAt: at, ...(status !== undefined ? { lastStatus: status } : {}) };
  switch (decision.event) {
    case 'delivered': {
      const signal = { state: 'sent', sentAt: at, ...base, history } as const;
      return store.transition(record, 'signal-delivered', { signal }, { attempts, status });
    }
    case 'gave-up': {
      const { lastError } = decision;
      return store.moveSignal(record, 'gave-up', { lastError, ...base, history }, { lastError });
    }
    case 'attempt-failed': {
      const { nextAttemptAt, lastError } = decision;
      return store.moveSignal(record, 'attempt-failed', {
        ...record.signal,
        ...base,
        nextAttemptAt,
        lastError,
        history,
      });
    }
  }
}

/** One delivery attempt of a record's pending signal; the outcome is written to the record before returning. */
export function attemptSignal(record: DeploymentRecord, deps: OutboxDeps): Promise<DeploymentRecord> {
  return attemptOnce(outboxClient(deps), record, deps);
}

/** Attempt every due signal once (oldest first), except those in `exclude`. */
export async function flushDue(deps: OutboxDeps, exclude: ReadonlySet<string> = new Set()): Promise<FlushReport> {
  const { records } = await deps.store.listAll('quiet');
  const now = deps.policy.now();
  const due = records
    .filter((r) => isDue(r, now) && !exclude.has(r.id))
    .sort((a, b) => a.firstSeenAt.localeCompare(b.firstSeenAt));
  const client = outboxClient(deps);
  const tally = new FlushTally();
  const after = new Map(records.map((r) => [r.id, r]));
  for (const record of due) {
    if (deps.policy.signal?.aborted) break;
    const next = await attemptOnce(client, record, deps);
    tally.count(next.signal.state);
    after.set(next.id, next);
  }
  return tally.report(dueTimes([...after.values()]));
}

export function pendingSummary(records: readonly DeploymentRecord[]): { pending: number; nextDueAt?: number } {
  return waitingSummary(dueTimes(records));
}

/** When each pending signal is due (0: at once). */
function dueTimes(records: readonly DeploymentRecord[]): number[] {
  return records
    .filter((r) => holdsSignal(r.state) && r.signal.state === 'pending')
    .map((r) => (r.signal.nextAttemptAt ? Date.parse(r.signal.nextAttemptAt) : 0));
}

/**
 * For the daemon, between polls: deliver the signals that are due, under the deployment lock. When another process
 * is running deployments, nothing is attempted (it flushes its own). Throws only for local state failures.
 */
export async function flushOutbox(
  loaded: LoadedConfig,
  log: Logger,
  http: HttpClient,
  overrides: PolicyOverrides = {},
): Promise<FlushReport> {
  const { config } = loaded;
  const policy = signalPolicyFor(config, overrides);
  const store = storeFor(config, log, policy.now);
  const outcome = await whenLockFree(deployLockFile(config), () => flushDue({ store, http, log, policy }));
  if (outcome.ran) return outcome.value;
  log.debug({ holder: outcome.holderPid }, 'outbox flush skipped: another process is running deployments');
  return BUSY;
}
