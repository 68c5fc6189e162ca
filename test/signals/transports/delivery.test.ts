import t from 'tap';
import { judge, sendOnce } from '../../../src/signals/transports/delivery.js';
import type { HttpClient } from '../../../src/http/types.js';
import { createHttpClient } from '../../../src/http/client.js';
import { startTestServer } from '../../helpers/http-test-server.js';
import { captureLog } from '../../helpers/log-capture.js';

// One attempt, no client retries, and the judgement of the answer.

t.test('judge: status classes, a short detail and Retry-After', async (t) => {
  const res = (statusCode: number, body = '', headers: Record<string, string> = {}) => ({
    statusCode,
    headers,
    body: Buffer.from(body),
    redactedUrl: 'http://h/x',
  });
  t.same(judge(res(204), 'S', 0), { outcome: 'sent', status: 204 });
  const final = judge(res(403, 'forbidden\n  because'), 'S', 0);
  t.same(final, { outcome: 'final', status: 403, error: 'S at http://h/x answered 403 (forbidden because)' });
  const retry = judge(res(429, 'x'.repeat(500), { 'retry-after': '12' }), 'S', 0);
  t.equal(retry.outcome, 'retry');
  if (retry.outcome === 'retry') {
    t.equal(retry.retryAfterSeconds, 12);
    t.ok(retry.error.length < 300, 'the detail is short');
  }
  t.same(judge(res(500), 'S', 0), { outcome: 'retry', status: 500, error: 'S at http://h/x answered 500' });
});

t.test('sendOnce: exactly one request, with the timeout, even for 5xx', async (t) => {
  const server = await startTestServer((_req, res) => {
    res.writeHead(502);
    res.end('bad gateway');
  });
  t.teardown(() => server.close());
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 5, retryBaseMs: 1 });
  const out = await sendOnce(
    { http, log: captureLog().log, timeoutSeconds: 1, now: Date.now },
    { url: `${server.url}/s`, method: 'POST', body: '{}' },
    'Signal',
  );
  t.equal(out.outcome, 'retry');
  t.equal(server.requests.length, 1);
});

t.test('sendOnce: a hanging server times out and is retried later', async (t) => {
  const server = await startTestServer(() => undefined);
  t.teardown(() => server.close());
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 });
  const out = await sendOnce(
    { http, log: captureLog().log, timeoutSeconds: 0.3, now: Date.now },
    { url: `${server.url}/s`, method: 'POST', body: '{}' },
    'Signal',
  );
  t.equal(out.outcome, 'retry');
  if (out.outcome === 'retry') t.match(out.error, 'no answer within 0.3 s');
});

t.test('sendOnce passes the abort signal', async (t) => {
  const seen: unknown[] = [];
  const http: HttpClient = {
    request: async (req) => {
      seen.push(req.signal, req.retries, req.timeoutSeconds);
      throw new Error('aborted');
    },
  };
  const controller = new AbortController();
  const out = await sendOnce(
    { http, log: captureLog().log, timeoutSeconds: 3, now: Date.now, signal: controller.signal },
    { url: 'http://127.0.0.1:1/', method: 'PUT' },
    'Signal',
  );
  t.same(seen, [controller.signal, 0, 3]);
  t.equal(out.outcome, 'retry');
});
