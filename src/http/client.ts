import type { ClientRequest } from 'node:http';
import got, { type CancelableRequest, type Got, type Response } from 'got';
import { VERSION } from '../version.js';
import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import { CaFiles } from './ca-files.js';
import { HttpError } from './http-error.js';
import type { ProxyInputs } from './proxy-env.js';
import { ProxyRouting, type RequestRoute } from './proxy-routing.js';
import { proxyRefusal, requestFailure, tooLargeError } from './request-failure.js';
import { retryOptions } from './retry-policy.js';
import { attemptOptions, wholeRequestTimeout, type Attempts, type ClientParts } from './attempt.js';
import { downloadWithin } from './download-to-file.js';
import type { DownloadingHttpClient, HttpRequest, HttpResponse } from './types.js';
import { splitZone } from './zoned-url.js';

/** The User-Agent of every request: the project and its version. */
export const USER_AGENT = `os-config-agent/${VERSION}`;

// The agent's one HTTP client (got underneath, promise API so got's own retry machinery runs): a deadline on the
// whole request (connect, TLS handshake, headers and body: a server trickling its body a byte at a time still ends
// within the timeout; every retry and the waits between them too: a request never outlasts its timeout, however
// often it is retried), connect/response/idle timeouts inside it, bounded retries with jitter after network errors and 5xx only, a response size cap
// (the download is cancelled as soon as it crosses the cap), CA bundles, and an AbortSignal for prompt shutdown.
// Errors carry redacted URLs only.

export interface HttpClientOptions {
  readonly defaultMaxBytes: number;
  readonly defaultRetries: number;
  readonly userAgent?: string;
  /** First retry delay in ms before jitter (default 500; tests use a few ms). */
  readonly retryBaseMs?: number;
  readonly log?: Logger;
  readonly random?: () => number;
  /** Proxy options and environment (docs/proxies.md); without them every request goes direct. */
  readonly proxy?: ProxyInputs;
}

export function createHttpClient(options: HttpClientOptions): DownloadingHttpClient {
  const base: Got = got.extend({
    throwHttpErrors: false,
    followRedirect: true,
    maxRedirects: 5,
    // Metadata is small; accepting compression would let a small download expand past the size cap.
    decompress: false,
    responseType: 'buffer',
    // Which agent and release asked: what a service's operator looks for in its access log.
    headers: { 'user-agent': options.userAgent ?? USER_AGENT },
  });
  const client: ClientParts = {
    options,
    base,
    caFiles: new CaFiles(),
    proxies: options.proxy ? new ProxyRouting(options.proxy, options.log) : undefined,
  };
  return {
    request: (req) => withinDeadline(client, req, (a) => requestWithin(client, req, a)),
    download: (req, file) => withinDeadline(client, req, (a) => downloadWithin(client, req, file, a)),
  };
}

/** One request as the caller sees it, retries included, within its timeout and the caller's signal. */
async function withinDeadline<T>(
  client: ClientParts,
  req: HttpRequest,
  attempts: (a: Attempts) => Promise<T>,
): Promise<T> {
  const maxBytes = req.maxBytes ?? client.options.defaultMaxBytes;
  const timeoutMs = Math.max(1, Math.round((req.timeoutSeconds ?? 10) * 1000));
  const shown = redactUrl(req.url);
  const ca = req.caFile ? client.caFiles.text(req.caFile, shown) : undefined;
  if (req.signal?.aborted) throw new HttpError(`request to ${shown} not sent: shutting down`, shown);
  // A link-local URL's zone id ("%25eth0") is out of got's sight: it goes to the socket through an agent, and
  // redirects are not followed (they would reach another host through that same zoned socket). Link-local addresses
  // never go through a proxy.
  const zoned = splitZone(req.url);
  // One deadline for the request as the caller sees it, retries included, timed by a timer (monotonic).
  const whole = new AbortController();
  const deadlineAt = performance.now() + timeoutMs;
  const timer = setTimeout(() => whole.abort(), timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, whole.signal]) : whole.signal;
  const timedOut = () => whole.signal.aborted && req.signal?.aborted !== true;
  try {
    return await attempts({ zoned, shown, ca, maxBytes, timeoutMs, signal, deadlineAt, timedOut });
  } finally {
    clearTimeout(timer);
  }
}

async function requestWithin(client: ClientParts, req: HttpRequest, a: Attempts): Promise<HttpResponse> {
  const { zoned, shown, maxBytes, timeoutMs } = a;
  const route = zoned.zone === undefined ? await client.proxies?.begin(req.url, shown, timeoutMs) : undefined;
  let current: ClientRequest | undefined;
  const pending = client.base(zoned.url, {
    ...attemptOptions(req, a, route),
    retry: retryOptions({
      limit: req.retries ?? client.options.defaultRetries,
      baseMs: client.options.retryBaseMs ?? 500,
      random: client.options.random ?? Math.random,
      shown,
      log: client.options.log,
      current: () => current,
      closedOnReuse: route?.closedOnReuse,
      remainingMs: () => a.deadlineAt - performance.now(),
    }),
  });
  pending.on('request', (request: ClientRequest) => {
    current = request;
  });
  const res = await received(pending, { maxBytes, shown, timeoutMs, route }).catch((err: unknown) => {
    // Cut short by the whole request's deadline (an attempt or the wait before one): said as the timeout it is.
    throw a.timedOut() ? requestFailure(wholeRequestTimeout(err), shown, timeoutMs, route) : err;
  });
  const refused = proxyRefusal(res.statusCode, shown, route);
  if (refused) throw refused;
  return {
    statusCode: res.statusCode,
    headers: res.headers,
    body: res.rawBody,
    redactedUrl: redactUrl(zoned.zone !== undefined ? req.url : res.url || req.url),
  };
}

/** The whole response, or the error that says why there is none; the download stops as soon as it is too large. */
async function received(
  pending: CancelableRequest,
  limits: { maxBytes: number; shown: string; timeoutMs: number; route: RequestRoute | undefined },
): Promise<Response<Buffer>> {
  let tooLarge: number | undefined;
  pending.on('downloadProgress', (progress: { transferred: number; total?: number }) => {
    if (tooLarge !== undefined) return;
    const declared = progress.total ?? 0;
    if (declared > limits.maxBytes || progress.transferred > limits.maxBytes) {
      tooLarge = Math.max(declared, progress.transferred);
      pending.cancel();
    }
  });
  let res: Response<Buffer>;
  try {
    res = (await pending) as unknown as Response<Buffer>;
  } catch (err) {
    if (tooLarge !== undefined) throw tooLargeError(limits.shown, limits.maxBytes, `at least ${tooLarge}`);
    throw requestFailure(err, limits.shown, limits.timeoutMs, limits.route);
  }
  // A body that arrived whole but is over the cap (no progress event crossed it) is refused the same way.
  if (res.rawBody.length > limits.maxBytes) throw tooLargeError(limits.shown, limits.maxBytes, `${res.rawBody.length}`);
  return res;
}
