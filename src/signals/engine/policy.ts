import type { AgentConfig } from '../../config/options.js';
import type { HttpClient } from '../../http/types.js';
import type { Logger } from '../../log/logger.js';

// How every signal is sent, whoever stored it (a deployment record or a cfn-signal queue file): one rule, built once
// from the configuration ([deploy] signal_timeout, signal_max_backoff, signal_max_attempts; [zaqar] use_websockets).

export interface SignalPolicy {
  /** Seconds for each request. */
  readonly timeoutSeconds: number;
  /** The cap of the wait between two attempts. */
  readonly maxBackoffSeconds: number;
  /** Failed attempts after which a signal is given up (at least 1). */
  readonly maxAttempts: number;
  readonly now: () => number;
  /** A number in [0, 1): the jitter of each wait, so instances that failed together do not retry together. */
  readonly random: () => number;
  /** Aborted on shutdown: an attempt cut short by it is not counted. */
  readonly signal?: AbortSignal;
  /** ZAQAR_SIGNAL over Zaqar's websocket API rather than its HTTP API. */
  readonly zaqarWebsockets?: boolean;
}

/** What a caller may set instead of the defaults (tests give a fake clock and a fixed jitter). */
export interface PolicyOverrides {
  readonly now?: () => number;
  readonly random?: () => number;
  readonly signal?: AbortSignal;
}

/** What the engine works with: the policy, the one HTTP client, and the logger of its client. */
export interface EngineDeps {
  readonly http: HttpClient;
  readonly log: Logger;
  readonly policy: SignalPolicy;
}

export function signalPolicyFor(config: AgentConfig, overrides: PolicyOverrides = {}): SignalPolicy {
  return {
    timeoutSeconds: config.deploy.signal_timeout,
    maxBackoffSeconds: config.deploy.signal_max_backoff,
    maxAttempts: Math.max(1, config.deploy.signal_max_attempts),
    now: overrides.now ?? Date.now,
    random: overrides.random ?? Math.random,
    ...(overrides.signal ? { signal: overrides.signal } : {}),
    zaqarWebsockets: config.zaqar.use_websockets,
  };
}
