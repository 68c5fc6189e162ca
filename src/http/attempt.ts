import type { Got } from 'got';
import type { CaFiles } from './ca-files.js';
import type { HttpClientOptions } from './client.js';
import type { ProxyRouting, RequestRoute } from './proxy-routing.js';
import type { HttpRequest } from './types.js';
import { zonedAgents } from './zoned-agents.js';
import type { splitZone } from './zoned-url.js';

// What one request or download carries from attempt to attempt: the client's parts, the request's limits and
// deadline, and got's options for each attempt (everything but the retries, which request() leaves to got and a
// download makes itself).

export interface ClientParts {
  readonly options: HttpClientOptions;
  readonly base: Got;
  readonly caFiles: CaFiles;
  readonly proxies: ProxyRouting | undefined;
}

export interface Attempts {
  readonly zoned: ReturnType<typeof splitZone>;
  readonly shown: string;
  readonly ca: string | undefined;
  readonly maxBytes: number;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  /** performance.now() at which the request's time is up. */
  readonly deadlineAt: number;
  /** The whole request's time ran out (not a shutdown). */
  readonly timedOut: () => boolean;
}

/** got's options for one attempt of `req` (a request or a download), but for retries. */
export function attemptOptions(req: HttpRequest, a: Attempts, route: RequestRoute | undefined) {
  const { zoned, ca, timeoutMs } = a;
  return {
    method: req.method ?? 'GET',
    headers: req.headers ?? {},
    ...(req.body !== undefined ? { body: typeof req.body === 'string' ? req.body : Buffer.from(req.body) } : {}),
    timeout: {
      lookup: timeoutMs,
      connect: timeoutMs,
      secureConnect: timeoutMs,
      socket: timeoutMs,
      response: timeoutMs,
      send: timeoutMs,
      // The whole attempt, body included: the per-read timeouts above never fire on a body that trickles.
      request: timeoutMs,
    },
    https: { ...(ca !== undefined ? { certificateAuthority: ca } : {}), rejectUnauthorized: !req.insecure },
    signal: a.signal,
    ...(zoned.zone !== undefined && zoned.address !== undefined
      ? { agent: zonedAgents(zoned.address, zoned.zone), followRedirect: false }
      : {}),
    ...route?.gotOptions,
  };
}

/** The request's time ran out, retries included: got's own timeout error, so it reads as any other timeout. */
export function wholeRequestTimeout(cause: unknown): Error {
  return Object.assign(new Error('the request timed out', { cause }), {
    name: 'TimeoutError',
    code: 'ETIMEDOUT',
    event: 'request',
  });
}
