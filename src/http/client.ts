import { VERSION } from '../version.js';
import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import { acceptedHead, startAttempt, type Attempts, type ClientParts } from './attempt.js';
import { CaFiles } from './ca-files.js';
import { downloadWithin } from './download-to-file.js';
import { readBody } from './exchange.js';
import { HttpError } from './http-error.js';
import type { ProxyInputs } from './proxy-env.js';
import { ProxyRouting } from './proxy-routing.js';
import { tooLargeError } from './request-failure.js';
import { withRetries } from './retry-loop.js';
import type { DownloadingHttpClient, HttpRequest, HttpResponse } from './types.js';
import { splitZone } from './zoned-url.js';

/** The User-Agent of every request: the project and its version. */
export const USER_AGENT = `os-config-agent/${VERSION}`;

// The agent's one HTTP client, on Node's own http and https (exchange.ts): a deadline on each attempt as a whole
// (connect, TLS handshake, headers and body: a server trickling its body a byte at a time still ends within the
// timeout) and on the request as the caller sees it (every retry and the waits between them too: a request never
// outlasts its timeout, however often it is retried), bounded retries with jitter after network errors and 5xx only
// (retry-loop.ts), a response size cap (the download is stopped as soon as it crosses the cap), redirects, proxies,
// CA bundles, and an AbortSignal for prompt shutdown. Bodies are never decompressed: a small compressed answer could
// otherwise expand past the cap. Errors carry redacted URLs only.

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
  const client: ClientParts = {
    options,
    userAgent: options.userAgent ?? USER_AGENT,
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
  // A link-local URL's zone id ("%25eth0") is out of the URL parser's sight: it goes to the socket through an agent,
  // and redirects are not followed (they would reach another host through that same zoned socket). Link-local addresses
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
  const { shown, maxBytes } = a;
  return withRetries(client, req, a, async (route) => {
    const run = startAttempt(client, req, a, route);
    try {
      const answer = await run.answer;
      const { statusCode, redactedUrl } = acceptedHead(req, a, route, answer);
      const overCap = (size: number) => tooLargeError(shown, maxBytes, `at least ${size}`);
      const body = await readBody(answer.response, run.signal, overCap, maxBytes);
      return { statusCode, headers: answer.response.headers, body, redactedUrl };
    } finally {
      run.end();
    }
  });
}
