import type { LoadedConfig } from '../config/load.js';
import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { RetryLoop, type RetryPassResult } from './retry-loop.js';

// Work of the daemon beside the poll loop: the deployment signal outbox (a pass that says when it is next due) and
// the queue of signals `os-config-agent cfn-signal` left (a service that runs until the daemon stops). Each reads the
// configuration and HTTP client in force at each pass: a reload replaces them.

/** One pass of the deployment signal outbox. */
export type OutboxPass = (
  loaded: LoadedConfig,
  log: Logger,
  http: HttpClient,
  signal: AbortSignal,
) => Promise<RetryPassResult>;

/** The cfn-signal queue's service: runs until the signal aborts. */
export type SignalQueueService = (
  ctx: { loaded: () => LoadedConfig; http: () => HttpClient; log: Logger },
  signal: AbortSignal,
) => Promise<void>;

/** The configuration and HTTP client in force now. */
export interface InForce {
  loaded(): LoadedConfig;
  http(): HttpClient;
}

/** The outbox's loop, woken by a cycle that ran a pipeline; `done` settles when the signal aborts. */
export function startOutbox(
  pass: OutboxPass,
  inForce: InForce,
  log: Logger,
  signal: AbortSignal,
): { loop: RetryLoop; done: Promise<void> } {
  const olog = log.child({ component: 'outbox' });
  const loop = new RetryLoop('signal outbox', (s) => pass(inForce.loaded(), olog, inForce.http(), s), olog);
  return { loop, done: loop.run(signal) };
}

/** The cfn-signal queue service; it never rejects (a failure to start is logged, the poll loop goes on). */
export function startSignalQueue(
  service: SignalQueueService,
  inForce: InForce,
  log: Logger,
  signal: AbortSignal,
): Promise<void> {
  const qlog = log.child({ component: 'signal-queue' });
  return service({ loaded: () => inForce.loaded(), http: () => inForce.http(), log: qlog }, signal).catch(
    (err: unknown) => {
      qlog.error({ reason: errorMessage(err) }, 'signal queue stopped; queued signals wait for the next start');
    },
  );
}
