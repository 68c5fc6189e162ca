import { redactUrl } from '../log/redact.js';
import type { CaFiles } from './ca-files.js';
import type { HttpClientOptions } from './client.js';
import { exchange, type Exchange } from './exchange.js';
import type { ProxyRouting, RequestRoute } from './proxy-routing.js';
import { proxyRefusal, tooLargeError } from './request-failure.js';
import type { HttpRequest } from './types.js';
import { zonedAgent } from './zoned-agents.js';
import type { splitZone } from './zoned-url.js';

// What one request or download carries from attempt to attempt (the client's parts, the request's limits and
// deadline), and one attempt's exchange: sent on the agent its route gives each hop, ended by its own timeout or by
// the whole request's signal.

export interface ClientParts {
  readonly options: HttpClientOptions;
  readonly userAgent: string;
  readonly caFiles: CaFiles;
  readonly proxies: ProxyRouting | undefined;
}

export interface Attempts {
  readonly zoned: ReturnType<typeof splitZone>;
  readonly shown: string;
  readonly ca: string | undefined;
  readonly maxBytes: number;
  readonly timeoutMs: number;
  /** Aborts when the caller's signal does or the whole request's time is up. */
  readonly signal: AbortSignal;
  /** performance.now() at which the request's time is up. */
  readonly deadlineAt: number;
  /** The whole request's time ran out (not a shutdown). */
  readonly timedOut: () => boolean;
}

/** One attempt under way: its exchange's answer, its signal (for reading the body), and its end. */
export interface AttemptRun {
  readonly signal: AbortSignal;
  readonly answer: Promise<Exchange>;
  /** Stops the attempt's timer; call when its body has been read or it failed. */
  readonly end: () => void;
}

/**
 * Starts one attempt of `req`. Its signal aborts after the request's timeout (each attempt has the whole of it, as
 * upstream's `timeout` options mean: connect, TLS, headers and the body) or when the whole request's signal does; its
 * reason is the error the attempt fails with.
 */
export function startAttempt(
  client: ClientParts,
  req: HttpRequest,
  a: Attempts,
  route: RequestRoute | undefined,
): AttemptRun {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(attemptTimeout()), a.timeoutMs);
  const onAbort = () => controller.abort(a.timedOut() ? wholeRequestTimeout() : aborted());
  if (a.signal.aborted) onAbort();
  else a.signal.addEventListener('abort', onAbort, { once: true });
  const end = () => {
    clearTimeout(timer);
    a.signal.removeEventListener('abort', onAbort);
  };
  const { zoned } = a;
  const { address, zone } = zoned;
  // A zoned URL's socket is not followed elsewhere: a redirect would reach another host through it.
  const zonedTo = zone !== undefined && address !== undefined ? { address, zone } : undefined;
  const answer = exchange({
    url: zoned.url,
    method: req.method ?? 'GET',
    // Which agent and release asked: what a service's operator looks for in its access log.
    headers: { 'user-agent': client.userAgent, ...req.headers },
    body: req.body === undefined ? undefined : Buffer.from(req.body),
    ca: a.ca,
    rejectUnauthorized: !req.insecure,
    followRedirects: zonedTo === undefined,
    agentFor: (url) =>
      zonedTo ? zonedAgent(zonedTo.address, zonedTo.zone, new URL(url).protocol) : route?.agentFor(url),
    signal: controller.signal,
  });
  answer.catch(end);
  return { signal: controller.signal, answer, end };
}

/**
 * An answer's status and redacted final URL, once its head is acceptable: a 407 from the proxy, and a declared body
 * over the size cap, fail the attempt here, before any of the body is read (its connection is closed).
 */
export function acceptedHead(
  req: HttpRequest,
  a: Attempts,
  route: RequestRoute | undefined,
  { response, url }: Exchange,
): { statusCode: number; redactedUrl: string } {
  const statusCode = response.statusCode ?? 0;
  // A HEAD's Content-Length is the size of a body it does not carry.
  const declared = req.method === 'HEAD' ? 0 : Number(response.headers['content-length'] ?? 0);
  const refused =
    proxyRefusal(statusCode, a.shown, route) ??
    (declared > a.maxBytes ? tooLargeError(a.shown, a.maxBytes, `at least ${declared}`) : undefined);
  if (refused) {
    response.destroy();
    throw refused;
  }
  return { statusCode, redactedUrl: redactUrl(a.zoned.zone !== undefined ? req.url : url) };
}

/** One attempt's time ran out: a timeout of the whole response, body included. */
function attemptTimeout(): Error {
  return Object.assign(new Error('the request timed out'), {
    name: 'TimeoutError',
    code: 'ETIMEDOUT',
    event: 'request',
  });
}

/** The caller's signal ended the request (shutting down). */
function aborted(): Error {
  return Object.assign(new Error('the request was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
}

/** The request's time ran out, retries included: said as any other timeout of the whole response. */
export function wholeRequestTimeout(cause?: unknown): Error {
  return Object.assign(new Error('the request timed out', { cause }), {
    name: 'TimeoutError',
    code: 'ETIMEDOUT',
    event: 'request',
  });
}
