import type { JsonObject } from '../../util/json-merge.js';
import { HookFailure } from '../contract.js';

// The one rule for a hook whose tool talks to a daemon (docker's, for docker-cmd, docker-compose and the kubelet):
// the daemon gets a grace period, the deployment option daemon_timeout, and no longer. Within it a daemon that refuses
// connections (starting at boot) is asked again; past it the deployment fails, naming the daemon and what to do. A
// call that has not answered when the grace period is over is checked with a short probe of the daemon: when the
// daemon does not answer either (it accepts connections and hangs), the call is stopped and the deployment fails; when
// it answers, the call is doing real work (pulling an image) and goes on. Never held until the deployment's timeout.

/** The failure of a call whose daemon stayed unreachable past the grace period. */
export class DaemonUnreachable extends HookFailure {}

/** The deployment option setting the grace period, in seconds. */
export const DAEMON_TIMEOUT_OPTION = 'daemon_timeout';
const DEFAULT_GRACE_S = 30;
/** Pause between two calls refused by a daemon that may be starting. */
const RETRY_MS = 1000;
/** Bounds of the probe: long enough for a busy daemon, short enough to fail soon after the grace period. */
const PROBE_MIN_MS = 2000;
const PROBE_MAX_MS = 10_000;
const LATE = Symbol('late');

/** The grace period a deployment's options give, in milliseconds; a value that is not seconds fails the hook. */
export function daemonGraceMs(options: JsonObject, group: string): number {
  const value = options[DAEMON_TIMEOUT_OPTION] ?? DEFAULT_GRACE_S;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new HookFailure(
      `the ${group} option ${DAEMON_TIMEOUT_OPTION} must be a number of seconds (0 or more), not ${JSON.stringify(value)}`,
    );
  return value * 1000;
}

/**
 * What a probe of the daemon found: it answered; it refused (nobody listens: a call then ends by itself, failing);
 * it did not answer in time (it hangs, and so would the call); or nothing could ask it (no CLI to probe with).
 */
export type ProbeAnswer = 'answered' | 'refused' | 'silent' | 'unknown';

/** The daemon as one hook run sees it. */
export interface DaemonLink {
  /** True when a failed call's output says the daemon was not reached (as opposed to an answer from it). */
  unreachable(stderr: string): boolean;
  /** Asks the daemon whether it is there, stopped by `signal`. */
  probe(signal: AbortSignal): Promise<ProbeAnswer>;
  /** The failure naming the call, the daemon, the tool's last words (`stderr`), how long (`note`) and what to do. */
  failure(what: string, stderr: string, note: string): DaemonUnreachable;
}

/** A call the rule watches: started with the signal that stops it, its failure output once it has ended. */
export type DaemonCall<T> = (signal: AbortSignal) => Promise<T>;

export class DaemonReach {
  private unreachableSince: number | undefined;

  constructor(
    private readonly link: DaemonLink,
    readonly graceMs: number,
  ) {}

  /**
   * Runs `call` until the daemon answers it: a refused call is made again while the grace period lasts, a call that
   * hangs past it is stopped when the daemon does not answer a probe either. `stderrOf` reads the failure output of
   * a result (empty for a success).
   */
  async call<T>(what: string, call: DaemonCall<T>, stderrOf: (result: T) => string): Promise<T> {
    for (;;) {
      const result = await this.watched(what, call);
      const stderr = stderrOf(result);
      if (!this.note(what, stderr)) return result;
      await new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_MS, this.graceLeft())));
    }
  }

  /**
   * Notes how a call ended: true when it did not reach the daemon. Throws the daemon's failure once the daemon has
   * been unreachable for the grace period.
   */
  note(what: string, stderr: string): boolean {
    if (stderr === '' || !this.link.unreachable(stderr)) {
      this.unreachableSince = undefined;
      return false;
    }
    this.unreachableSince ??= Date.now();
    if (this.graceLeft() <= 0) throw this.link.failure(what, stderr, `unreachable for ${this.graceMs / 1000} seconds`);
    return true;
  }

  /** Runs one call, probing the daemon each time the call outlasts the grace period. */
  async watched<T>(what: string, call: DaemonCall<T>): Promise<T> {
    const stop = new AbortController();
    const pending = call(stop.signal);
    const probeMs = Math.min(Math.max(this.graceMs, PROBE_MIN_MS), PROBE_MAX_MS);
    const watchMs = Math.max(this.graceMs, PROBE_MIN_MS);
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      // A grace period of 0 refuses a daemon that is down at once; a call still gets the probe's time to answer.
      const late = new Promise<typeof LATE>((resolve) => (timer = setTimeout(() => resolve(LATE), watchMs)));
      const first = await Promise.race([pending, late]).finally(() => clearTimeout(timer));
      if (first !== LATE) return first;
      if ((await this.link.probe(AbortSignal.timeout(probeMs))) !== 'silent') continue;
      stop.abort();
      await pending.catch(() => undefined);
      throw this.link.failure(
        what,
        '',
        `no answer within ${watchMs / 1000} seconds, nor to a probe within ${probeMs / 1000} seconds`,
      );
    }
  }

  private graceLeft(): number {
    return this.unreachableSince === undefined ? this.graceMs : this.unreachableSince + this.graceMs - Date.now();
  }
}
