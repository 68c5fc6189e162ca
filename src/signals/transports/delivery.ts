import { errorMessage } from '../../errors.js';
import type { HttpClient, HttpRequest, HttpResponse } from '../../http/types.js';
import type { Logger } from '../../log/logger.js';
import { classifySignalStatus, parseRetryAfter } from '../engine/backoff.js';

// What every signal transport shares: the context of one delivery attempt and the judgement of its answer.

export interface DeliveryContext {
  readonly http: HttpClient;
  readonly log: Logger;
  /** Seconds for each request ([deploy] signal_timeout). */
  readonly timeoutSeconds: number;
  readonly signal?: AbortSignal;
  readonly now: () => number;
  /** ZAQAR_SIGNAL over Zaqar's websocket API ([zaqar] use_websockets) rather than its HTTP API. */
  readonly zaqarWebsockets?: boolean;
}

export type Delivery =
  | { readonly outcome: 'sent'; readonly status: number }
  | { readonly outcome: 'retry'; readonly status?: number; readonly error: string; readonly retryAfterSeconds?: number }
  | { readonly outcome: 'final'; readonly status?: number; readonly error: string };

/** Send one request (no client-level retries: the outbox owns retrying) and judge the answer. */
export async function sendOnce(ctx: DeliveryContext, req: HttpRequest, what: string): Promise<Delivery> {
  let res: HttpResponse;
  try {
    res = await ctx.http.request({
      ...req,
      timeoutSeconds: ctx.timeoutSeconds,
      retries: 0,
      maxBytes: 1024 * 1024,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
  } catch (err) {
    // HttpError messages carry the redacted URL only.
    return { outcome: 'retry', error: `${what}: ${errorMessage(err)}` };
  }
  return judge(res, what, ctx.now());
}

export function judge(res: HttpResponse, what: string, now: number): Delivery {
  const kind = classifySignalStatus(res.statusCode);
  if (kind === 'sent') return { outcome: 'sent', status: res.statusCode };
  const detail = res.body.toString('utf8', 0, Math.min(res.body.length, 200)).replace(/\s+/g, ' ').trim();
  const error = `${what} at ${res.redactedUrl} answered ${res.statusCode}${detail ? ` (${detail})` : ''}`;
  if (kind === 'final') return { outcome: 'final', status: res.statusCode, error };
  const retryAfter = parseRetryAfter(res.headers['retry-after'], now);
  return {
    outcome: 'retry',
    status: res.statusCode,
    error,
    ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
  };
}
