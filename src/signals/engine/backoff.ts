// Pure retry policy of the signal outbox: which answers are worth another attempt, and when.

/** Wait before the second attempt, before jitter. */
export const SIGNAL_BACKOFF_BASE_MS = 2000;

export type StatusClass = 'sent' | 'retry' | 'final';

/**
 * 2xx: delivered. 408 (timeout), 429 (throttled) and 5xx: try again later. Any other status is final: a 4xx means
 * the request itself is refused (real Heat answers 403 to a pre-signed URL whose timestamp expired; Swift 401 to an
 * expired TempURL), and repeating it cannot succeed.
 */
export function classifySignalStatus(status: number): StatusClass {
  if (status >= 200 && status < 300) return 'sent';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  if (status >= 400) return 'final';
  // 1xx/3xx as a final answer (redirects are followed by the client): unusual, not conclusive.
  return 'retry';
}

/**
 * Delay before the next attempt after `attempts` failed ones (1-based): doubling from the base, capped at `maxMs`,
 * scaled by a random factor in [0.5, 1] so instances that failed together do not retry together. A Retry-After the
 * server sent is honoured when longer, still within the cap.
 */
export function signalRetryDelayMs(
  attempts: number,
  maxMs: number,
  random: number,
  retryAfterSeconds?: number,
): number {
  const exp = Math.min(SIGNAL_BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1), maxMs);
  const jittered = Math.round(exp * (0.5 + Math.min(Math.max(random, 0), 1) / 2));
  const asked =
    retryAfterSeconds !== undefined && Number.isFinite(retryAfterSeconds) && retryAfterSeconds > 0
      ? Math.min(retryAfterSeconds * 1000, maxMs)
      : 0;
  return Math.max(jittered, asked);
}

/** Retry-After as seconds (delta-seconds or an HTTP date), when present and sensible. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim());
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, (at - now) / 1000) : undefined;
}
