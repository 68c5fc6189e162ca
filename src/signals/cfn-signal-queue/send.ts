import type { AgentConfig } from '../../config/options.js';
import type { HttpClient } from '../../http/types.js';
import type { Logger } from '../../log/logger.js';
import { signalQueueDir, signalQueueLockFile } from '../../state/signal-queue-paths.js';
import type { AttemptDecision } from '../engine/attempt.js';
import { attemptOnce, type SignalClient } from '../engine/client.js';
import { BUSY, FlushTally, type FlushReport } from '../engine/flush-report.js';
import { whenLockFree } from '../engine/lock.js';
import { signalPolicyFor, type EngineDeps, type PolicyOverrides } from '../engine/policy.js';
import { isDueSignal, settled, targetOf, type QueuedSignal } from './entry.js';
import { listQueuedSignalIds, pruneIfOld, readQueuedSignal, saveMove, setAside } from './files.js';

// Sending the wait condition signals `os-config-agent cfn-signal` queued: the engine's client for the queue's files.
// They are not deployments, so they live apart from the deployment records and have a lock of their own
// (signals.lock): a hook that runs for an hour under the deployment lock must not hold up a signal, least of all one
// its own script queued.
//
//   pending -> sent | failed
//
// Whoever holds the lock may attempt a due signal: the daemon (woken when a file appears), or the command itself
// (--now, --wait, or when no daemon runs). Each attempt re-reads the file under the lock and writes its outcome before
// the lock is released, so a signal is sent once. The one window for a repeat is a crash after Heat accepted it and
// before the file says so; Heat stores a wait condition signal under its UniqueId/id, so the repeat overwrites
// itself. Settled files go after [deploy] prune_after days.

export interface QueueDeps extends EngineDeps {
  readonly dir: string;
  readonly lockFile: string;
  readonly pruneAfterDays: number;
}

/** The queue's dependencies from the configuration (the [deploy] signal_* settings apply to these signals too). */
export function queueDepsFor(
  config: AgentConfig,
  http: HttpClient,
  log: Logger,
  overrides: PolicyOverrides = {},
): QueueDeps {
  return {
    dir: signalQueueDir(config),
    lockFile: signalQueueLockFile(config),
    pruneAfterDays: config.deploy.prune_after,
    http,
    log,
    policy: signalPolicyFor(config, overrides),
  };
}

function queueClient(deps: QueueDeps): SignalClient<QueuedSignal> {
  return {
    messages: {
      unsendable: 'queued signal cannot be sent',
      sent: 'queued signal sent',
      gaveUp: 'queued signal failed; not retried',
      retry: 'queued signal attempt failed; will retry',
    },
    unsendableReason: 'the queued signal has no URL, body or token in its file; it cannot be sent',
    pendingOf: (entry) => ({ target: targetOf(entry), text: entry.text, attempts: entry.attempts }),
    logOf: (entry) => deps.log.child({ signalId: entry.id }),
    fieldsOf: (entry) => ({ kind: entry.kind, to: entry.shownUrl }),
    record: (entry, decision) => recordDecision(deps.dir, entry, decision),
  };
}

/** The decision written to the entry's file; a settled one keeps no URL, token or body. */
function recordDecision(dir: string, entry: QueuedSignal, decision: AttemptDecision): Promise<QueuedSignal> {
  const { at, attempts } = decision;
  const status = 'status' in decision && decision.status !== undefined ? { lastStatus: decision.status } : {};
  const base = { attempts, lastAttemptAt: at, updatedAt: at, ...status };
  switch (decision.event) {
    case 'delivered':
      return saveMove(dir, entry, 'delivered', settled(entry, { ...base, sentAt: at, lastError: undefined }));
    case 'attempt-failed': {
      const { nextAttemptAt, lastError } = decision;
      return saveMove(dir, entry, 'attempt-failed', { ...entry, ...base, nextAttemptAt, lastError });
    }
    default:
      return saveMove(dir, entry, decision.event, settled(entry, { ...base, lastError: decision.lastError }));
  }
}

/** One attempt of a pending signal (the caller holds the lock); the outcome is on disk when this returns. */
export function attemptQueuedSignal(entry: QueuedSignal, deps: QueueDeps): Promise<QueuedSignal> {
  return attemptOnce(queueClient(deps), entry, deps);
}

/**
 * Attempt one queued signal if it is due, under the lock (the command's --now and --wait). Returns the signal as it
 * is afterwards; when another process holds the lock, as it is on disk (that process is attempting it).
 */
export async function attemptIfDue(deps: QueueDeps, id: string): Promise<QueuedSignal | undefined> {
  const outcome = await whenLockFree(deps.lockFile, async () => {
    const entry = await readQueuedSignal(deps.dir, id);
    if (!entry || !isDueSignal(entry, deps.policy.now())) return entry;
    return attemptQueuedSignal(entry, deps);
  });
  return (outcome.ran ? outcome.value : undefined) ?? readQueuedSignal(deps.dir, id);
}

/** Attempt every due signal once, oldest first, and delete settled files older than prune_after days. */
export async function flushSignalQueue(deps: QueueDeps): Promise<FlushReport> {
  const outcome = await whenLockFree(deps.lockFile, () => flushUnderLock(deps));
  return outcome.ran ? outcome.value : BUSY;
}

async function flushUnderLock(deps: QueueDeps): Promise<FlushReport> {
  const { dir, policy, log } = deps;
  const client = queueClient(deps);
  const tally = new FlushTally();
  const dueTimes: number[] = [];
  for (const id of await listQueuedSignalIds(dir)) {
    let entry = await readQueuedSignal(dir, id);
    if (!entry) {
      await setAside(dir, id, policy.now(), log);
      continue;
    }
    if (isDueSignal(entry, policy.now()) && !policy.signal?.aborted) {
      entry = await attemptOnce(client, entry, deps);
      tally.count(entry.state);
    }
    if (entry.state === 'pending') dueTimes.push(entry.nextAttemptAt ? Date.parse(entry.nextAttemptAt) : policy.now());
    else await pruneIfOld(dir, entry, deps.pruneAfterDays, policy.now(), log);
  }
  return tally.report(dueTimes);
}
