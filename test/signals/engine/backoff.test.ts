import t from 'tap';
import {
  classifySignalStatus,
  parseRetryAfter,
  SIGNAL_BACKOFF_BASE_MS,
  signalRetryDelayMs,
} from '../../../src/signals/engine/backoff.js';

// The outbox's retry policy, without timers.

t.test('2xx delivered; 408, 429 and 5xx retried; any other 4xx final', async (t) => {
  for (const s of [200, 201, 202, 204]) t.equal(classifySignalStatus(s), 'sent', String(s));
  for (const s of [408, 429, 500, 502, 503, 504]) t.equal(classifySignalStatus(s), 'retry', String(s));
  for (const s of [400, 401, 403, 404, 405, 409, 413, 422]) t.equal(classifySignalStatus(s), 'final', String(s));
  for (const s of [100, 302, 304]) t.equal(classifySignalStatus(s), 'retry', String(s));
});

t.test('doubling from the base, capped, with jitter in [0.5, 1]', async (t) => {
  t.equal(signalRetryDelayMs(1, 300_000, 1), SIGNAL_BACKOFF_BASE_MS);
  t.equal(signalRetryDelayMs(1, 300_000, 0), SIGNAL_BACKOFF_BASE_MS / 2);
  t.equal(signalRetryDelayMs(3, 300_000, 1), SIGNAL_BACKOFF_BASE_MS * 4);
  t.equal(signalRetryDelayMs(30, 300_000, 1), 300_000, 'capped');
  t.equal(signalRetryDelayMs(30, 300_000, 0), 150_000);
  t.equal(signalRetryDelayMs(0, 300_000, 1), SIGNAL_BACKOFF_BASE_MS, 'attempt 0 is treated as the first');
  t.equal(signalRetryDelayMs(1, 300_000, 7), SIGNAL_BACKOFF_BASE_MS, 'random clamped');
  let previous = 0;
  for (let a = 1; a < 20; a++) {
    const d = signalRetryDelayMs(a, 300_000, 0.5);
    t.ok(d >= previous, `non-decreasing at attempt ${a}`);
    previous = d;
  }
});

t.test('Retry-After is honoured when longer, within the cap', async (t) => {
  t.equal(signalRetryDelayMs(1, 300_000, 1, 30), 30_000);
  t.equal(
    signalRetryDelayMs(1, 300_000, 1, 1),
    SIGNAL_BACKOFF_BASE_MS,
    'a shorter Retry-After does not shorten the backoff',
  );
  t.equal(signalRetryDelayMs(1, 60_000, 1, 3600), 60_000, 'capped');
  t.equal(signalRetryDelayMs(1, 60_000, 1, Number.NaN), SIGNAL_BACKOFF_BASE_MS);
  const now = Date.parse('2026-01-01T00:00:00Z');
  t.equal(parseRetryAfter('120', now), 120);
  t.equal(parseRetryAfter(['7'], now), 7);
  t.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now), 60);
  t.equal(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now), 0);
  t.equal(parseRetryAfter('soon', now), undefined);
  t.equal(parseRetryAfter(undefined, now), undefined);
  t.equal(parseRetryAfter('  ', now), undefined);
});
