import { setTimeout as sleep } from 'node:timers/promises';
import { wholeRequestTimeout, type Attempts, type ClientParts } from './attempt.js';
import { closedOnReuse } from './exchange.js';
import { HttpError } from './http-error.js';
import type { RequestRoute } from './proxy-routing.js';
import { requestFailure } from './request-failure.js';
import { RETRY_ERROR_CODES, RETRY_STATUS_CODES, retryDelayMs } from './retry-policy.js';
import type { HttpRequest } from './types.js';

// The attempts of one request or download, by the rule of retry-policy.ts: network errors and 5xx are tried again,
// up to the request's limit, after a jittered delay, and none is started that could not begin within the whole
// request's timeout; a 4xx, a body over the cap or a refusal never is. A kept-alive connection found closed when it
// was reused (tinyproxy closes after every answer without saying so) fails before the request reached the other side:
// that request goes again at once on a new connection, once, whatever the limit.

/** A failure that is not the request's (the disk under a download): thrown as it is, never retried. */
export class NotTheRequest extends Error {
  override name = 'NotTheRequest';
  constructor(readonly error: unknown) {
    super('not a failure of the request', { cause: error });
  }
}

/** `once`'s answer after as many attempts as the rule allows; the last answer, or the last failure as an HttpError. */
export async function withRetries<T extends { statusCode: number }>(
  client: ClientParts,
  req: HttpRequest,
  a: Attempts,
  once: (route: RequestRoute | undefined) => Promise<T>,
): Promise<T> {
  const limit = req.retries ?? client.options.defaultRetries;
  let staleRetried = false;
  let attempt = 1;
  for (;;) {
    const route = a.zoned.zone === undefined ? await client.proxies?.begin(req.url, a.timeoutMs) : undefined;
    let answer: T | undefined;
    let failure: unknown;
    try {
      answer = await once(route);
    } catch (err) {
      if (err instanceof NotTheRequest) throw err.error;
      failure = err;
    }
    const stale = answer === undefined ? closedOnReuse(failure) : undefined;
    if (stale && !staleRetried) {
      staleRetried = true;
      route?.closedOnReuse(stale.agent);
      continue;
    }
    const reason = answer ? answer.statusCode : retryableCode(failure);
    const delay = retryDelayMs(attempt, client.options.retryBaseMs ?? 500, (client.options.random ?? Math.random)());
    const again =
      attempt <= limit &&
      reason !== undefined &&
      (typeof reason === 'string' || RETRY_STATUS_CODES.includes(reason)) &&
      delay < a.deadlineAt - performance.now();
    if (!again) {
      if (answer) return answer;
      throw requestFailure(failure, a.shown, a.timeoutMs, route);
    }
    client.options.log?.debug({ url: a.shown, attempt, delayMs: delay, reason }, 'retrying request');
    try {
      await sleep(delay, undefined, { signal: a.signal });
    } catch (err) {
      throw requestFailure(a.timedOut() ? wholeRequestTimeout(err) : err, a.shown, a.timeoutMs);
    }
    attempt++;
  }
}

/** The network error code of a failed attempt worth another, else undefined. */
function retryableCode(failure: unknown): string | undefined {
  if (failure instanceof HttpError) return undefined;
  const code = (failure as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && RETRY_ERROR_CODES.includes(code) ? code : undefined;
}
