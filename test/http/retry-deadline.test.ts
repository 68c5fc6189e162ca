import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import { HttpError } from '../../src/http/http-error.js';
import { startHostileServer } from '../helpers/hostile-server.js';

// One rule for `timeout`: it bounds the request as its caller sees it, every retry and the waits between them
// included. Counted by connections, not by a clock: an attempt that used up the timeout leaves no time for another.

t.test('a trickled body that uses up the timeout is not retried: one attempt, a timeout error', async (t) => {
  const server = await startHostileServer({ kind: 'trickle', bytes: 1000, everyMs: 50 });
  t.teardown(() => server.close());
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 3, retryBaseMs: 5 });
  const err = await http.request({ url: server.url, timeoutSeconds: 0.5 }).catch((e: unknown) => e);
  t.type(err, HttpError);
  t.match((err as HttpError).message, /no answer within 0\.5 s \(ETIMEDOUT; the timeout covers the whole response/);
  t.equal(server.connections(), 1, 'three retries allowed, none made: the timeout was spent');
});

t.test('quick failures are still retried within the timeout', async (t) => {
  const server = await startHostileServer({ kind: 'reset-mid-body', declared: 100, sent: 10 });
  t.teardown(() => server.close());
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 2, retryBaseMs: 5 });
  const err = await http.request({ url: server.url, timeoutSeconds: 30 }).catch((e: unknown) => e);
  t.match((err as HttpError).message, /connection closed before the whole response arrived/);
  t.equal(server.connections(), 3, 'the first attempt and two retries');
});

t.test('a retry whose wait would outlast the timeout is not made: the last error is reported', async (t) => {
  const server = await startHostileServer({ kind: 'reset-mid-body', declared: 100, sent: 10 });
  t.teardown(() => server.close());
  // The first retry would wait 2.5 to 5 s; the whole request has 1 s.
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 2, retryBaseMs: 5000 });
  const err = await http.request({ url: server.url, timeoutSeconds: 1 }).catch((e: unknown) => e);
  t.match((err as HttpError).message, /connection closed before the whole response arrived/);
  t.equal(server.connections(), 1);
});
