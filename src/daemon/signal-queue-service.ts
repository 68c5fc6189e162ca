import { watch, type FSWatcher } from 'node:fs';
import type { LoadedConfig } from '../config/load.js';
import { claimDaemon, daemonPresenceFile } from '../status/daemon-presence.js';
import { ensureQueueDir, hasQueuedFiles, signalQueueDir } from '../state/signal-queue-paths.js';
import { errorMessage } from '../errors.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { RetryLoop, type RetryPassResult } from './retry-loop.js';

// The daemon's side of `os-config-agent cfn-signal`: it says it is running (daemon.pid), watches the signal queue
// directory (inotify: no work while nothing is queued), and delivers what is due with the queue's backoff. The first
// pass runs at start, so signals queued while the agent was down go out at once. Where the directory cannot be
// watched, the queue is looked at every polling_interval instead.

export interface SignalQueueContext {
  /** The current configuration and HTTP client (both change on reload). */
  readonly loaded: () => LoadedConfig;
  readonly http: () => HttpClient;
  readonly log: Logger;
}

export async function runSignalQueue(ctx: SignalQueueContext, signal: AbortSignal): Promise<void> {
  const { log } = ctx;
  const config = ctx.loaded().config;
  const dir = signalQueueDir(config);
  let watcher: FSWatcher | undefined;
  const pass = async (s: AbortSignal): Promise<RetryPassResult> => {
    const current = ctx.loaded().config;
    const fallback = watcher ? undefined : Date.now() + current.DEFAULT.polling_interval * 1000;
    // An empty queue (almost always) costs one readdir; the sending code is loaded only when there is work.
    if (!(await hasQueuedFiles(dir))) return fallback !== undefined ? { nextDueAt: fallback } : {};
    const { flushSignalQueue, queueDepsFor } = await import('../signals/cfn-signal-queue/send.js');
    const report = await flushSignalQueue(queueDepsFor(current, ctx.http(), log, { signal: s }));
    if (report.attempted > 0)
      log.info(
        { attempted: report.attempted, sent: report.sent, failed: report.failed, pending: report.pending },
        'signal queue flushed',
      );
    const times = [report.nextDueAt, fallback].filter((x): x is number => x !== undefined);
    return { ...(report.busy ? { busy: true } : {}), ...(times.length > 0 ? { nextDueAt: Math.min(...times) } : {}) };
  };
  const loop = new RetryLoop('signal queue', pass, log);
  try {
    await ensureQueueDir(dir);
    watcher = watch(dir, () => loop.wake());
    watcher.on('error', (err) => {
      log.warn(
        { dir, reason: errorMessage(err) },
        'watching the signal queue failed; looking at it every polling interval',
      );
      watcher?.close();
      watcher = undefined;
    });
  } catch (err) {
    log.warn({ dir, reason: errorMessage(err) }, 'cannot watch the signal queue; looking at it every polling interval');
  }
  let withdraw: (() => Promise<void>) | undefined;
  try {
    withdraw = await claimDaemon(daemonPresenceFile(config));
  } catch (err) {
    log.warn(
      { reason: errorMessage(err) },
      'cannot claim the daemon pid file; cfn-signal will think no daemon runs and send by itself',
    );
  }
  try {
    await loop.run(signal);
  } finally {
    watcher?.close();
    await withdraw?.();
  }
}
