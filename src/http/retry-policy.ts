import type { ClientRequest } from 'node:http';
import type { RetryOptions } from 'got';
import type { Logger } from '../log/logger.js';

// When a request goes again within one poll, and after how long: network errors and 5xx only (a 4xx never: the
// request itself is wrong), with a capped, jittered exponential delay so a fleet that failed together does not retry
// together; and once at once, beyond the limit, when a kept-alive connection turns out to have been closed.

/** Statuses worth another try within one poll; a 4xx never is (the request itself is wrong). */
export const RETRY_STATUS_CODES: readonly number[] = [500, 502, 503, 504];
/** Network errors worth another try: the request may never have reached the server, or its answer was lost. */
export const RETRY_ERROR_CODES: readonly string[] = [
  'ETIMEDOUT',
  'ECONNRESET',
  'EADDRINUSE',
  'ECONNREFUSED',
  'EPIPE',
  'ENOTFOUND',
  'ENETUNREACH',
  'EAI_AGAIN',
];
const RETRY_METHODS = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE'] as const;
const RETRY_CAP_MS = 5000;

/**
 * Delay before retry number `attempt` (1-based): exponential from `baseMs`, capped at 5 s, then scaled by a random
 * factor in [0.5, 1) so a fleet that failed together does not retry together.
 */
export function retryDelayMs(attempt: number, baseMs: number, random: number): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, attempt - 1), RETRY_CAP_MS);
  return Math.round(exp * (0.5 + Math.min(Math.max(random, 0), 1) / 2));
}

export interface RequestRetry {
  readonly limit: number;
  readonly baseMs: number;
  readonly random: () => number;
  /** The request's redacted URL, for the log. */
  readonly shown: string;
  readonly log?: Logger | undefined;
  /** The request on the wire now (got sends a new one per attempt and redirect). */
  readonly current: () => ClientRequest | undefined;
  /** A kept-alive connection of this agent was found closed when it was reused. */
  readonly closedOnReuse?: ((agent: unknown) => void) | undefined;
  /** What is left of the whole request's timeout: no retry is started that could not begin within it. */
  readonly remainingMs?: () => number;
}

/** got's retry options for one request. */
export function retryOptions(retry: RequestRetry): Partial<RetryOptions> {
  let staleRetried = false;
  return {
    limit: retry.limit,
    methods: [...RETRY_METHODS],
    statusCodes: [...RETRY_STATUS_CODES],
    errorCodes: [...RETRY_ERROR_CODES],
    calculateDelay: ({ attemptCount, computedValue, error }) => {
      // A kept-alive connection that the server or proxy closed just as it was reused (tinyproxy closes after every
      // answer without saying so) fails with ECONNRESET before any answer: the request never reached the other side,
      // so it goes again at once on a new connection, once, whatever the retry limit.
      const request = retry.current();
      if (!staleRetried && request?.reusedSocket === true && error.code === 'ECONNRESET' && !error.response) {
        staleRetried = true;
        retry.closedOnReuse?.((request as ClientRequest & { agent?: unknown }).agent);
        return 1;
      }
      // got computes 0 when the error or status is not retryable (or the limit is reached).
      if (computedValue === 0) return 0;
      const delay = retryDelayMs(attemptCount, retry.baseMs, retry.random());
      // The request's timeout bounds its retries too: one that could not start in time is not made, and the error
      // of the last attempt is what the caller gets.
      if (retry.remainingMs !== undefined && delay >= retry.remainingMs()) return 0;
      retry.log?.debug(
        { url: retry.shown, attempt: attemptCount, delayMs: delay, reason: error.code ?? error.response?.statusCode },
        'retrying request',
      );
      return delay;
    },
  };
}
