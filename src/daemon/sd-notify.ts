import type { Logger } from '../log/logger.js';
import { errorMessage } from '../errors.js';
import { runProcess } from '../util/process-group.js';

// The sd_notify protocol (READY=1, WATCHDOG=1, STOPPING=1) for a service started with Type=notify. Node cannot send
// a unix datagram, so the messages go through systemd's own `systemd-notify`, a child of the agent: the unit says
// NotifyAccess=all for that. systemd-notify waits (a barrier) until systemd has read the message, so the message is
// not lost when the short-lived sender has already exited by the time systemd looks up its unit. Nothing of this
// runs unless systemd set NOTIFY_SOCKET.

export interface NotifyEnvironment {
  readonly socket: string;
  /** WATCHDOG_USEC in milliseconds, when systemd expects this process to feed a watchdog. */
  readonly watchdogMs?: number;
}

/**
 * Reads what systemd passed for notifications and removes it from the environment, as sd_notify's unset_environment
 * does: deployments inherit the agent's environment and must not speak for it (nor a program they start).
 */
export function takeNotifyEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  pid: number = process.pid,
): NotifyEnvironment | undefined {
  const socket = env.NOTIFY_SOCKET;
  const usec = Number(env.WATCHDOG_USEC);
  const watchdogPid = env.WATCHDOG_PID;
  delete env.NOTIFY_SOCKET;
  delete env.WATCHDOG_USEC;
  delete env.WATCHDOG_PID;
  if (!socket) return undefined;
  // WATCHDOG_PID names the process meant to feed it (sd_watchdog_enabled): not ours, not ours to feed.
  const forUs = watchdogPid === undefined || Number(watchdogPid) === pid;
  return { socket, ...(forUs && Number.isFinite(usec) && usec > 0 ? { watchdogMs: usec / 1000 } : {}) };
}

export type NotifySender = (state: string) => Promise<void>;

const SEND_TIMEOUT_MS = 10_000;

/**
 * A sender running `systemd-notify <state>`. Sends are serialised (READY before the first WATCHDOG, STOPPING last);
 * a failure is logged once per message kind and never thrown: the agent works on without the service manager.
 */
export function systemdNotifySender(socket: string, log: Logger, command = 'systemd-notify'): NotifySender {
  let chain: Promise<void> = Promise.resolve();
  const failedKinds = new Set<string>();
  const sendOne = async (state: string): Promise<void> => {
    const kind = state.split('=')[0] ?? state;
    try {
      const r = await runProcess({
        file: command,
        args: [state],
        env: { NOTIFY_SOCKET: socket, PATH: process.env.PATH ?? '/usr/bin:/bin' },
        timeoutMs: SEND_TIMEOUT_MS,
        killGraceMs: 1000,
        unobserved: true,
      });
      if (r.exitCode !== 0)
        throw new Error(r.spawnError?.message ?? (r.stderr.trim() || `exit ${r.exitCode ?? r.signal ?? 'unknown'}`));
      failedKinds.delete(kind);
    } catch (err) {
      if (!failedKinds.has(kind)) {
        failedKinds.add(kind);
        log.warn(
          { notification: kind, reason: errorMessage(err) },
          'could not notify systemd; is systemd-notify installed?',
        );
      }
    }
  };
  return (state) => (chain = chain.then(() => sendOne(state)));
}
