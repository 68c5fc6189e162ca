import type { Logger } from '../log/logger.js';
import { systemdNotifySender, takeNotifyEnvironment, type NotifyEnvironment, type NotifySender } from './sd-notify.js';
import { LoopWatchdog } from './watchdog.js';

// What the daemon loop tells its service manager: ready once start-up is done, progress at each step (which feeds
// the watchdog, src/daemon/watchdog.ts), stopping on shutdown. Absent unless systemd started the agent with
// Type=notify, so the loop's calls cost nothing elsewhere.

export interface ServiceNotifier {
  /** Start-up is done (configuration loaded, the loop entered): READY=1, and the watchdog starts. */
  ready(): void;
  /** The loop will make progress again within `withinMs`; `stallMs` is the budget a process start or end renews. */
  progress(withinMs: number, stallMs: number): void;
  /** Shutdown has begun: STOPPING=1; the watchdog is no longer fed. */
  stopping(): void;
  /** Stops the watchdog and waits for the last message to be sent. */
  close(): Promise<void>;
}

export function createServiceNotifier(
  log: Logger,
  env: NodeJS.ProcessEnv = process.env,
  senderFor?: (notify: NotifyEnvironment) => NotifySender,
): ServiceNotifier | undefined {
  const notify = takeNotifyEnvironment(env);
  if (!notify) return undefined;
  const send = senderFor ? senderFor(notify) : systemdNotifySender(notify.socket, log);
  let last: Promise<void> = Promise.resolve();
  const post = (state: string) => {
    last = send(state);
  };
  const watchdog =
    notify.watchdogMs !== undefined
      ? new LoopWatchdog({ intervalMs: notify.watchdogMs / 2, feed: () => post('WATCHDOG=1') })
      : undefined;
  let readySent = false;
  let stoppingSent = false;
  log.info(
    { watchdogSeconds: notify.watchdogMs !== undefined ? notify.watchdogMs / 1000 : undefined },
    'systemd notification enabled',
  );
  return {
    ready() {
      if (readySent) return;
      readySent = true;
      post('READY=1');
      watchdog?.start();
    },
    progress(withinMs, stallMs) {
      watchdog?.progress(withinMs, stallMs);
    },
    stopping() {
      if (stoppingSent) return;
      stoppingSent = true;
      watchdog?.stop();
      post('STOPPING=1');
    },
    async close() {
      watchdog?.stop();
      await last;
    },
  };
}
