import t from 'tap';
import { createHttpClient } from '../../../src/http/client.js';
import { decideAttempt, type PendingSignal } from '../../../src/signals/engine/attempt.js';
import type { EngineDeps } from '../../../src/signals/engine/policy.js';
import { SIGNAL_HISTORY_MAX, type SignalAttempt } from '../../../src/state/store.js';
import { startTestServer, type TestServer } from '../../helpers/http-test-server.js';
import { captureLog } from '../../helpers/log-capture.js';

// One attempt's decision, whoever stored the signal, against a loopback server that answers what it is told: the
// signal table's event, the next attempt's time, and a history that stays small however long a signal is retried.

let server: TestServer;
let answer = 503;
t.before(async () => {
  server = await startTestServer((_req, res) => {
    res.writeHead(answer);
    res.end('x'.repeat(1000));
  });
});
t.teardown(() => server.close());

const NOW = Date.parse('2026-01-01T00:00:00Z');
const captured = captureLog('debug');

function deps(maxAttempts = 50, signal?: AbortSignal): EngineDeps {
  return {
    http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
    log: captured.log,
    policy: { timeoutSeconds: 2, maxBackoffSeconds: 60, maxAttempts, now: () => NOW, random: () => 1, signal },
  };
}

function pending(attempts: number, history: SignalAttempt[] = []): PendingSignal {
  const url = `${server.url}/${'long-path/'.repeat(30)}signal`;
  return { target: { transport: 'WAIT_CONDITION_URL', url }, text: '{}', attempts, history };
}

t.test('a failed attempt: retried after the backoff, its history entry added and its error cut short', async (t) => {
  answer = 503;
  const old = Array.from({ length: SIGNAL_HISTORY_MAX }, (_, i): SignalAttempt => ({
    at: `old-${i}`,
    outcome: 'retry',
  }));
  const decision = await decideAttempt(pending(3, old), 'unsendable', deps(), captured.log);
  t.match(decision, {
    event: 'attempt-failed',
    at: '2026-01-01T00:00:00.000Z',
    attempts: 4,
    status: 503,
    retryInMs: 16_000,
    nextAttemptAt: '2026-01-01T00:00:16.000Z',
  });
  const history = decision && 'history' in decision ? decision.history : [];
  t.equal(history.length, SIGNAL_HISTORY_MAX, 'the history stays bounded');
  t.equal(history[0]?.at, 'old-1', 'the oldest entry went');
  t.match(history.at(-1), { at: '2026-01-01T00:00:00.000Z', outcome: 'retry', status: 503 });
  t.equal(history.at(-1)?.error?.length, 300, 'the stored error is cut to 300 characters');
  t.ok(decision && 'lastError' in decision && decision.lastError.length > 300, 'lastError is whole');
});

t.test('the last allowed attempt, and a final answer, give up', async (t) => {
  answer = 502;
  t.match(await decideAttempt(pending(1), 'unsendable', deps(2), captured.log), {
    event: 'gave-up',
    attempts: 2,
    lastError: /answered 502.*gave up after 2 attempts$/,
    history: [{ outcome: 'failed', status: 502 }],
  });
  answer = 404;
  t.match(await decideAttempt(pending(0), 'unsendable', deps(), captured.log), {
    event: 'gave-up',
    attempts: 1,
    lastError: /answered 404.*the answer is final, not retried$/,
  });
  answer = 204;
  t.match(await decideAttempt(pending(0), 'unsendable', deps(), captured.log), {
    event: 'delivered',
    status: 204,
    history: [{ outcome: 'sent', status: 204 }],
  });
});

t.test('no target or no body: unsendable, without a request', async (t) => {
  const before = server.requests.length;
  t.same(await decideAttempt({ target: undefined, text: '{}', attempts: 2 }, 'no target', deps(), captured.log), {
    event: 'unsendable',
    at: '2026-01-01T00:00:00.000Z',
    attempts: 3,
    lastError: 'no target',
  });
  t.match(await decideAttempt({ ...pending(0), text: undefined }, 'no body', deps(), captured.log), {
    event: 'unsendable',
    lastError: 'no body',
  });
  t.equal(server.requests.length, before);
});

t.test('an attempt cut short by a shutdown decides nothing', async (t) => {
  const controller = new AbortController();
  controller.abort();
  t.equal(await decideAttempt(pending(0), 'unsendable', deps(50, controller.signal), captured.log), undefined);
});
