import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import type { HttpError } from '../../src/http/http-error.js';
import { failure } from '../helpers/assertions.js';
import { startHostileServer, type HostileBehaviour } from '../helpers/hostile-server.js';
import type { TapTest } from '../helpers/http-test-server.js';

// The one HTTP client against a server that misbehaves on purpose (test/helpers/hostile-server.ts). Each request ends
// with a clear error (or, where HTTP allows it, a bounded answer), never hangs: the test's own timeout is the bound.

const client = (over: Partial<Parameters<typeof createHttpClient>[0]> = {}) =>
  createHttpClient({ defaultMaxBytes: 64 * 1024, defaultRetries: 0, retryBaseMs: 5, ...over });

async function hostile(t: TapTest, behaviour: HostileBehaviour) {
  const server = await startHostileServer(behaviour);
  t.teardown(() => server.close());
  return server;
}

t.test(
  'a body trickled a byte every 100 ms: the timeout bounds the whole request, body included',
  { timeout: 20_000 },
  async (t) => {
    // 100 bytes at one per 100 ms would take 10 s; no single read ever waits longer than 100 ms.
    const server = await hostile(t, { kind: 'trickle', bytes: 100, everyMs: 100 });
    const err = await failure<HttpError>(client().request({ url: `${server.url}/meta`, timeoutSeconds: 0.5 }));
    t.equal(err.code, 'ERR_HTTP');
    t.match(err.message, /no answer within 0\.5 s \(ETIMEDOUT; the timeout covers the whole response, body included\)/);
    t.ok(server.bodyBytesSent() < 100, 'the client gave up before the body was complete');
  },
);

t.test(
  'a trickled body with retries: the deadline covers the retries, so the one attempt that used it is the last',
  async (t) => {
    const server = await hostile(t, { kind: 'trickle', bytes: 100, everyMs: 100 });
    const err = await failure<HttpError>(
      client({ defaultRetries: 2 }).request({ url: `${server.url}/meta`, timeoutSeconds: 0.3 }),
    );
    t.match(err.message, /no answer within 0\.3 s/);
    t.equal(server.connections(), 1, 'two retries allowed, none made: the first attempt spent the whole timeout');
  },
);

t.test('a reset mid-body is a transport error naming the cut, never a partial body', async (t) => {
  const server = await hostile(t, { kind: 'reset-mid-body', declared: 1000, sent: 100 });
  const err = await failure<HttpError>(client().request({ url: server.url, timeoutSeconds: 5 }));
  t.equal(err.code, 'ERR_HTTP');
  t.match(err.message, /connection closed before the whole response arrived/);
});

t.test('a Content-Length longer than the body sent: an error, not a short body', async (t) => {
  const server = await hostile(t, { kind: 'wrong-length', declared: 1000, sent: 10 });
  const err = await failure<HttpError>(client().request({ url: server.url, timeoutSeconds: 5 }));
  t.equal(err.code, 'ERR_HTTP');
  t.match(err.message, /connection closed before the whole response arrived/);
});

t.test(
  'a Content-Length shorter than the body sent: refused as malformed, not cut to the declared length',
  async (t) => {
    const server = await hostile(t, { kind: 'wrong-length', declared: 5, sent: 50 });
    const err = await failure<HttpError>(client().request({ url: server.url, timeoutSeconds: 5 }));
    t.equal(err.code, 'ERR_HTTP');
    t.match(err.message, /not well-formed HTTP \(HPE_/);
  },
);

t.test('headers that never end: refused at the header size limit, or at the deadline', async (t) => {
  const fast = await hostile(t, { kind: 'endless-headers', everyMs: 1, maxLines: 2000 });
  const big = await failure<HttpError>(client().request({ url: fast.url, timeoutSeconds: 10 }));
  t.equal(big.code, 'ERR_HTTP');
  t.match(big.message, /headers are over the size limit \(HPE_HEADER_OVERFLOW\)/);
  const slow = await hostile(t, { kind: 'endless-headers', everyMs: 50, maxLines: 1000 });
  const late = await failure<HttpError>(client().request({ url: slow.url, timeoutSeconds: 0.5 }));
  t.match(late.message, /within 0\.5 s/);
});

t.test('a redirect loop stops after the redirect limit with a clear error', async (t) => {
  const server = await hostile(t, { kind: 'redirect-loop' });
  const err = await failure<HttpError>(client().request({ url: server.url, timeoutSeconds: 5 }));
  t.equal(err.code, 'ERR_HTTP');
  t.match(err.message, /redirected too many times \(a loop\?\) \(more than 5 redirects\)/);
  t.ok(server.connections() <= 6, `${server.connections()} connections: the first and five redirects at most`);
});

t.test('a gigabyte body is cut off at the size cap, streamed, never held', async (t) => {
  const server = await hostile(t, { kind: 'huge-body', totalBytes: 1024 ** 3 });
  const err = await failure<HttpError>(
    client().request({ url: server.url, timeoutSeconds: 30, maxBytes: 1024 * 1024 }),
  );
  t.equal(err.code, 'ERR_HTTP_TOO_LARGE');
  t.ok(server.bodyBytesSent() < 64 * 1024 * 1024, `${server.bodyBytesSent()} bytes sent before the client hung up`);
});

t.test('a TLS handshake that never finishes ends at the timeout', async (t) => {
  const server = await hostile(t, { kind: 'silent' });
  const url = server.url.replace('http:', 'https:');
  const err = await failure<HttpError>(client().request({ url, timeoutSeconds: 0.5 }));
  t.equal(err.code, 'ERR_HTTP');
  t.match(err.message, /within 0\.5 s/);
  t.equal(server.connections(), 1);
});
