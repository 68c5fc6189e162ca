import type { LoadedConfig } from '../config/load.js';
import type { HttpClientOptions } from '../http/client.js';
import { createLazyHttpClient } from '../http/lazy-client.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';

// The HTTP client settings of every process of the agent, from one place: the daemon's (size cap, retries, proxies),
// and the one-shot commands' (deploy, cfn-signal, doctor), which make one attempt per request: what they could not
// send stays queued for the daemon, and doctor reports what one attempt finds.

/** The daemon's HTTP client settings; doctor tests the same path. */
export function agentHttpOptions(loaded: LoadedConfig, log: Logger): HttpClientOptions {
  return {
    defaultMaxBytes: loaded.config.agent.http_max_bytes,
    defaultRetries: loaded.config.agent.http_retries,
    proxy: { config: loaded.config.agent, env: process.env },
    log: log.child({ component: 'http' }),
  };
}

/** A one-shot command's client: the daemon's settings, one attempt per request. */
export function oneAttemptHttpClient(loaded: LoadedConfig, log: Logger): HttpClient {
  return createLazyHttpClient({ ...agentHttpOptions(loaded, log), defaultRetries: 0 });
}
