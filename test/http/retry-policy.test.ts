import t from 'tap';
import { retryDelayMs, RETRY_STATUS_CODES } from '../../src/http/retry-policy.js';

t.test('retryDelayMs: exponential, capped, jittered into [0.5, 1) of the step', async (t) => {
  t.equal(retryDelayMs(1, 500, 0), 250);
  t.equal(retryDelayMs(1, 500, 1), 500);
  t.equal(retryDelayMs(2, 500, 0), 500);
  t.equal(retryDelayMs(3, 500, 0.5), 1500);
  t.equal(retryDelayMs(20, 500, 1), 5000, 'capped at 5 s');
  t.equal(retryDelayMs(1, 500, 7), 500, 'random is clamped');
  t.notOk(
    RETRY_STATUS_CODES.some((c) => c < 500),
    'no 4xx is ever retried',
  );
});
