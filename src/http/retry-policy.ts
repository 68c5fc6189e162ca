// When a request goes again within one poll, and after how long: network errors and 5xx only (a 4xx never: the
// request itself is wrong), with a capped, jittered exponential delay so a fleet that failed together does not retry
// together. retry-loop.ts applies it.

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
const RETRY_CAP_MS = 5000;

/**
 * Delay before retry number `attempt` (1-based): exponential from `baseMs`, capped at 5 s, then scaled by a random
 * factor in [0.5, 1) so a fleet that failed together does not retry together.
 */
export function retryDelayMs(attempt: number, baseMs: number, random: number): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, attempt - 1), RETRY_CAP_MS);
  return Math.round(exp * (0.5 + Math.min(Math.max(random, 0), 1) / 2));
}
