import { HttpError } from './http-error.js';
import { proxyAuthReason, proxyFailureReason, type RequestRoute } from './proxy-routing.js';

// What the operator reads when a request fails: a short reason without the URL (callers name the endpoint with its
// redacted URL), in terms of the proxy when one was in the way, and the size cap with the option that raises it.

/** A body over the size cap: `size` says how much arrived ("at least N" when the download was cut short). */
export function tooLargeError(shown: string, maxBytes: number, size: string): HttpError {
  const reason = `the response is over the ${maxBytes}-byte limit (${size} bytes); raise [agent] http_max_bytes if it is legitimate`;
  return new HttpError(`response from ${shown}: ${reason}`, shown, 'ERR_HTTP_TOO_LARGE', { reason });
}

/** A request that got no usable answer (transport error, timeout, shutdown). */
export function requestFailure(err: unknown, shown: string, timeoutMs: number, route?: RequestRoute): HttpError {
  if (err instanceof HttpError) return err;
  const code = (err as { code?: string }).code;
  const proxy = route?.route.kind === 'proxy' ? route.route.proxy : undefined;
  // The proxy agents report a proxy that did not answer within the request's timeout as ETIMEDOUT.
  const described =
    proxy && code === 'ETIMEDOUT'
      ? `no answer within ${timeoutMs / 1000} s (ETIMEDOUT)`
      : describeError(err, timeoutMs);
  const reason = proxy ? proxyFailureReason(proxy, code, described) : described;
  return new HttpError(`request to ${shown} failed: ${reason}`, shown, 'ERR_HTTP', { cause: err, reason });
}

/** A 407 from the proxy the request went through; undefined for any other answer. */
export function proxyRefusal(statusCode: number, shown: string, route?: RequestRoute): HttpError | undefined {
  if (statusCode !== 407 || route?.route.kind !== 'proxy') return undefined;
  const reason = proxyAuthReason(route.route.proxy);
  return new HttpError(`request to ${shown} failed: ${reason}`, shown, 'ERR_HTTP', { reason, statusCode: 407 });
}

/** A failed attempt's error -> short operator text (never the URL: callers add the redacted one). */
function describeError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === 'AbortError') return 'aborted (shutting down)';
  if (e.name === 'TimeoutError' && (e as { event?: string }).event === 'request')
    return `no answer within ${timeoutMs / 1000} s (ETIMEDOUT; the timeout covers the whole response, body included)`;
  if (e.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s (${e.code ?? 'ETIMEDOUT'})`;
  if (e.code === 'ECONNREFUSED') return 'connection refused';
  if (e.code === 'ECONNRESET') return `connection closed before the whole response arrived (${e.code})`;
  // Node's HTTP parser refused the answer: headers past its size limit, bytes beyond the declared length, bad framing.
  if (e.code === 'HPE_HEADER_OVERFLOW') return `the response headers are over the size limit (${e.code})`;
  if (e.code?.startsWith('HPE_') === true) return `the response is not well-formed HTTP (${e.code})`;
  if (e.name === 'MaxRedirectsError') return `redirected too many times (a loop?) (${e.message})`;
  if (e.name === 'RedirectProtocolError') return `${e.message}, not followed`;
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return `host name not resolvable (${e.code})`;
  if (typeof e.code === 'string' && /CERT|SSL|TLS|SELF_SIGNED|VERIFY|ISSUER|ALTNAME/i.test(e.code))
    return `TLS verification failed (${e.code}); check the CA certificate option`;
  return e.code ?? e.name ?? 'unknown error';
}
