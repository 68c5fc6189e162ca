import type { LoadedConfig } from '../config/load.js';
import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { RetryLoop, type RetryPassResult } from './retry-loop.js';
import { YieldingLoop } from './yielding-loop.js';

// Work of the daemon beside the poll loop: the deployment signal outbox and the re-runs of finished deployments
// (passes that say when they are next due) and
// the queue of signals `os-config-agent cfn-signal` left and the built-in cfn-hup (services that run until the daemon
// stops). Each reads the
// configuration and HTTP client in force at each pass: a reload replaces them.

/** One pass of the deployment signal outbox. */
export type OutboxPass = (
  loaded: LoadedConfig,
  log: Logger,
  http: HttpClient,
  signal: AbortSignal,
) => Promise<RetryPassResult>;

/** A service of the daemon (the cfn-signal queue, the built-in cfn-hup): runs until the signal aborts. */
export type DaemonService = (
  ctx: { loaded: () => LoadedConfig; http: () => HttpClient; log: Logger; signalled?: () => void },
  signal: AbortSignal,
) => Promise<void>;

/** The configuration and HTTP client in force now, and whom to tell that a signal reached Heat. */
export interface InForce {
  loaded(): LoadedConfig;
  http(): HttpClient;
  signalled?(): void;
}

/** The outbox's loop, woken by a cycle that ran a pipeline; `done` settles when the signal aborts. */
export function startOutbox(
  pass: OutboxPass,
  inForce: InForce,
  log: Logger,
  signal: AbortSignal,
): { loop: RetryLoop; done: Promise<void> } {
  const olog = log.child({ component: 'outbox' });
  const loop = new RetryLoop(
    'signal outbox',
    async (s) => {
      const result = await pass(inForce.loaded(), olog, inForce.http(), s);
      if ((result.sent ?? 0) > 0) inForce.signalled?.();
      return result;
    },
    olog,
  );
  return { loop, done: loop.run(signal) };
}

/** One pass of the re-runs of finished deployments (due again when it says). */
export type ReconvergePass = OutboxPass;

/** The re-runs' loop, which gives way to a cycle with new data (yielding-loop.ts); `done` settles when the signal aborts. */
export function startReconverge(
  pass: ReconvergePass,
  inForce: InForce,
  log: Logger,
  signal: AbortSignal,
): { loop: YieldingLoop; done: Promise<void> } {
  const rlog = log.child({ component: 'reconverge' });
  const loop = new YieldingLoop('deployment re-runs', (s) => pass(inForce.loaded(), rlog, inForce.http(), s), rlog);
  return { loop, done: loop.run(signal) };
}

/** The cfn-signal queue's service. */
export type SignalQueueService = DaemonService;

/** The built-in cfn-hup: checks the hooks of /etc/cfn/cfn-hup.conf while that file exists. */
export type CfnHupService = DaemonService;

/** The cfn-signal queue service; it never rejects (a failure to start is logged, the poll loop goes on). */
export function startSignalQueue(
  service: SignalQueueService,
  inForce: InForce,
  log: Logger,
  signal: AbortSignal,
): Promise<void> {
  const qlog = log.child({ component: 'signal-queue' });
  const signalled = () => inForce.signalled?.();
  return service({ loaded: () => inForce.loaded(), http: () => inForce.http(), log: qlog, signalled }, signal).catch(
    (err: unknown) => {
      qlog.error({ reason: errorMessage(err) }, 'signal queue stopped; queued signals wait for the next start');
    },
  );
}

/** The built-in cfn-hup; it never rejects (a failure is logged, the poll loop goes on). */
export function startCfnHup(service: CfnHupService, inForce: InForce, log: Logger, signal: AbortSignal): Promise<void> {
  const hlog = log.child({ component: 'cfn-hup' });
  return service({ loaded: () => inForce.loaded(), http: () => inForce.http(), log: hlog }, signal).catch(
    (err: unknown) => {
      hlog.error({ reason: errorMessage(err) }, 'cfn-hup stopped; its hooks are checked again at the next start');
    },
  );
}

/** The daemon's background work, each part started when this build and mode have it. */
export interface BackgroundWork {
  readonly outbox: { loop: RetryLoop; done: Promise<void> } | undefined;
  readonly queue: Promise<void> | undefined;
  readonly cfnHup: Promise<void> | undefined;
  readonly reruns: { loop: YieldingLoop; done: Promise<void> } | undefined;
}

/** Starts the background work; the outbox and the re-runs belong to the native pipeline of `run` mode only. */
export function startBackgroundWork(
  parts: {
    backgroundPass?: OutboxPass;
    reconverge?: ReconvergePass;
    signalQueue?: DaemonService;
    cfnHup?: DaemonService;
  },
  native: boolean,
  inForce: InForce,
  log: Logger,
  signal: AbortSignal,
): BackgroundWork {
  return {
    outbox: parts.backgroundPass && native ? startOutbox(parts.backgroundPass, inForce, log, signal) : undefined,
    queue: parts.signalQueue ? startSignalQueue(parts.signalQueue, inForce, log, signal) : undefined,
    cfnHup: parts.cfnHup ? startCfnHup(parts.cfnHup, inForce, log, signal) : undefined,
    reruns: parts.reconverge && native ? startReconverge(parts.reconverge, inForce, log, signal) : undefined,
  };
}
