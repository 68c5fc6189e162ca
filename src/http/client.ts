import { readFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';
import got, { type Got, type Response } from 'got';
import { HttpError } from './http-error.js';
import { VERSION } from '../version.js';
import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import type { ProxyInputs } from './proxy-env.js';
import { proxyAuthReason, proxyFailureReason, ProxyRouting } from './proxy-routing.js';
import type { HttpClient, HttpRequest, HttpResponse } from './types.js';
import { zonedAgents } from './zoned-agents.js';
import { splitZone } from './zoned-url.js';

export { HttpError } from './http-error.js';

/** The User-Agent of every request: the project and its version. */
export const USER_AGENT = `os-config-agent/${VERSION}`;

// The agent's one HTTP client (got underneath, promise API so got's own retry machinery runs): per-request
// connect/response/idle timeouts, bounded retries with jitter after network errors and 5xx only, a response size cap
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

/** Statuses worth another try within one poll; a 4xx never is (the request itself is wrong). */
export const RETRY_STATUS_CODES: readonly number[] = [500, 502, 503, 504];
export const RETRY_METHODS = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE'] as const;
const RETRY_CAP_MS = 5000;

/**
 * Delay before retry number `attempt` (1-based): exponential from `baseMs`, capped at 5 s, then scaled by a random
 * factor in [0.5, 1) so a fleet that failed together does not retry together.
 */
export function retryDelayMs(attempt: number, baseMs: number, random: number): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, attempt - 1), RETRY_CAP_MS);
  return Math.round(exp * (0.5 + Math.min(Math.max(random, 0), 1) / 2));
}

export function createHttpClient(options: HttpClientOptions): HttpClient {
  const random = options.random ?? Math.random;
  const baseMs = options.retryBaseMs ?? 500;
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
  const caCache = new Map<string, string>();
  const proxies = options.proxy ? new ProxyRouting(options.proxy, options.log) : undefined;

  const readCa = (file: string, shown: string): string => {
    let ca = caCache.get(file);
    if (ca !== undefined) return ca;
    try {
      ca = readFileSync(file, 'utf8');
    } catch (err) {
      const reason = `cannot read CA file ${file}: ${(err as NodeJS.ErrnoException).code ?? err}; fix the ca_certificate/ca_file option`;
      throw new HttpError(reason, shown, 'ERR_HTTP', { cause: err, reason });
    }
    caCache.set(file, ca);
    return ca;
  };

  return {
    async request(req: HttpRequest): Promise<HttpResponse> {
      const maxBytes = req.maxBytes ?? options.defaultMaxBytes;
      const timeoutMs = Math.max(1, Math.round((req.timeoutSeconds ?? 10) * 1000));
      const shown = redactUrl(req.url);
      const ca = req.caFile ? readCa(req.caFile, shown) : undefined;
      if (req.signal?.aborted) throw new HttpError(`request to ${shown} not sent: shutting down`, shown);
      // A link-local URL's zone id ("%25eth0") is out of got's sight: it goes to the socket through an agent, and
      // redirects are not followed (they would reach another host through that same zoned socket). Link-local
      // addresses never go through a proxy.
      const zoned = splitZone(req.url);
      const route = zoned.zone === undefined ? await proxies?.begin(req.url, shown, timeoutMs) : undefined;
      let tooLarge: number | undefined;
      let current: ClientRequest | undefined;
      let staleRetried = false;
      const pending = base(zoned.url, {
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
        },
        retry: {
          limit: req.retries ?? options.defaultRetries,
          methods: [...RETRY_METHODS],
          statusCodes: [...RETRY_STATUS_CODES],
          calculateDelay: ({ attemptCount, computedValue, error }) => {
            // A kept-alive connection that the server or proxy closed just as it was reused (tinyproxy closes after
            // every answer without saying so) fails with ECONNRESET before any answer: the request never reached
            // the other side, so it goes again at once on a new connection, once, whatever the retry limit.
            if (
              !staleRetried &&
              current?.reusedSocket === true &&
              error.code === 'ECONNRESET' &&
              error.response === undefined
            ) {
              staleRetried = true;
              route?.closedOnReuse((current as ClientRequest & { agent?: unknown }).agent);
              return 1;
            }
            // got computes 0 when the error or status is not retryable (or the limit is reached).
            if (computedValue === 0) return 0;
            const delay = retryDelayMs(attemptCount, baseMs, random());
            options.log?.debug(
              { url: shown, attempt: attemptCount, delayMs: delay, reason: error.code ?? error.response?.statusCode },
              'retrying request',
            );
            return delay;
          },
        },
        https: { ...(ca !== undefined ? { certificateAuthority: ca } : {}), rejectUnauthorized: !req.insecure },
        ...(req.signal ? { signal: req.signal } : {}),
        ...(zoned.zone !== undefined && zoned.address !== undefined
          ? { agent: zonedAgents(zoned.address, zoned.zone), followRedirect: false }
          : {}),
        ...route?.gotOptions,
      });
      pending.on('request', (request: ClientRequest) => {
        current = request;
      });
      pending.on('downloadProgress', (progress: { transferred: number; total?: number }) => {
        if (tooLarge !== undefined) return;
        const declared = progress.total ?? 0;
        if (declared > maxBytes || progress.transferred > maxBytes) {
          tooLarge = Math.max(declared, progress.transferred);
          pending.cancel();
        }
      });
      let res: Response<Buffer>;
      try {
        res = (await pending) as unknown as Response<Buffer>;
      } catch (err) {
        if (tooLarge !== undefined) {
          const reason = `the response is over the ${maxBytes}-byte limit (at least ${tooLarge} bytes); raise [agent] http_max_bytes if it is legitimate`;
          throw new HttpError(`response from ${shown}: ${reason}`, shown, 'ERR_HTTP_TOO_LARGE', { reason });
        }
        if (err instanceof HttpError) throw err;
        const code = (err as { code?: string }).code;
        // The proxy agents report a proxy that did not answer within the request's timeout as ETIMEDOUT.
        const proxyTimeout = route?.route.kind === 'proxy' && code === 'ETIMEDOUT';
        const described = proxyTimeout
          ? `no answer within ${timeoutMs / 1000} s (ETIMEDOUT)`
          : describeError(err, timeoutMs);
        const reason =
          route?.route.kind === 'proxy' ? proxyFailureReason(route.route.proxy, code, described) : described;
        throw new HttpError(`request to ${shown} failed: ${reason}`, shown, 'ERR_HTTP', { cause: err, reason });
      }
      // A body that arrived whole but is over the cap (no progress event crossed it) is refused the same way.
      if (res.rawBody.length > maxBytes) {
        const reason = `the response is over the ${maxBytes}-byte limit (${res.rawBody.length} bytes); raise [agent] http_max_bytes if it is legitimate`;
        throw new HttpError(`response from ${shown}: ${reason}`, shown, 'ERR_HTTP_TOO_LARGE', { reason });
      }
      if (res.statusCode === 407 && route?.route.kind === 'proxy') {
        const reason = proxyAuthReason(route.route.proxy);
        throw new HttpError(`request to ${shown} failed: ${reason}`, shown, 'ERR_HTTP', { reason, statusCode: 407 });
      }
      return {
        statusCode: res.statusCode,
        headers: res.headers,
        body: res.rawBody,
        redactedUrl: redactUrl(zoned.zone !== undefined ? req.url : res.url || req.url),
      };
    },
  };
}

/** got error -> short operator text (never the URL: callers add the redacted one). */
function describeError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === 'AbortError') return 'aborted (shutting down)';
  if (e.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s (${e.code ?? 'ETIMEDOUT'})`;
  if (e.code === 'ECONNREFUSED') return 'connection refused';
  if (e.code === 'ECONNRESET' || e.name === 'ReadError')
    return `connection closed before the whole response arrived (${e.code ?? 'ReadError'})`;
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return `host name not resolvable (${e.code})`;
  if (typeof e.code === 'string' && /CERT|SSL|TLS|SELF_SIGNED|VERIFY|ISSUER|ALTNAME/i.test(e.code))
    return `TLS verification failed (${e.code}); check the CA certificate option`;
  return e.code ?? e.name ?? 'unknown error';
}
