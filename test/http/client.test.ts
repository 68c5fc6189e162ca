import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { createHttpClient } from '../../src/http/client.js';
import { HttpError } from '../../src/http/http-error.js';
import { captureLog } from '../helpers/log-capture.js';
import { refusedUrl, sendFault, startTestServer } from '../helpers/http-test-server.js';
import { failure } from '../helpers/assertions.js';

// The one HTTP client, against real loopback servers: retries (and their absence), timeouts, the size cap, abort,
// TLS CA handling, redaction.

const client = (over: Partial<Parameters<typeof createHttpClient>[0]> = {}) =>
  createHttpClient({ defaultMaxBytes: 4096, defaultRetries: 2, retryBaseMs: 5, ...over });

/** The HttpError a request rejects with. */
const rejection = (p: Promise<unknown>) => failure<HttpError>(p);

t.test('a 200 body, headers and final URL come back; methods and bodies are sent', async (t) => {
  const server = await startTestServer((req, res, body) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-echo': req.method ?? '' });
    res.end(JSON.stringify({ method: req.method, body }));
  });
  t.teardown(() => server.close());
  const http = client();
  const res = await http.request({ url: `${server.url}/x`, method: 'PUT', body: 'hello', headers: { 'x-test': '1' } });
  t.equal(res.statusCode, 200);
  t.same(JSON.parse(res.body.toString()), { method: 'PUT', body: 'hello' });
  t.equal(res.headers['x-echo'], 'PUT');
  t.equal(res.redactedUrl, `${server.url}/x`);
  t.equal(server.requests[0]?.headers['x-test'], '1');
  t.equal(server.requests[0]?.headers['user-agent'], `os-config-agent/${pkg.version}`, 'the project and its version');
  t.notOk(
    server.requests[0]?.headers['accept-encoding']?.includes('gzip'),
    'no compression asked for (it would defeat the size cap)',
  );
  const bin = await http.request({ url: `${server.url}/y`, method: 'POST', body: new Uint8Array([104, 105]) });
  t.same(JSON.parse(bin.body.toString()), { method: 'POST', body: 'hi' });
});

t.test('5xx is retried up to the limit, then the last answer is returned', async (t) => {
  const server = await startTestServer((_req, res) => {
    res.writeHead(503);
    res.end('busy');
  });
  t.teardown(() => server.close());
  const captured = captureLog();
  const res = await client({ log: captured.log }).request({
    url: `${server.url}/?temp_url_sig=abcdef0123&temp_url_expires=1`,
  });
  t.equal(res.statusCode, 503);
  t.equal(server.requests.length, 3, 'one try and two retries');
  const retries = captured.lines.filter((l) => l.msg === 'retrying request');
  t.equal(retries.length, 2);
  t.notOk(captured.text().includes('abcdef0123'), 'retry log lines carry the redacted URL');
});

t.test('a 5xx then a 200: the retry succeeds', async (t) => {
  let n = 0;
  const server = await startTestServer((_req, res) => {
    res.writeHead(n++ === 0 ? 502 : 200);
    res.end('ok');
  });
  t.teardown(() => server.close());
  const res = await client().request({ url: server.url });
  t.equal(res.statusCode, 200);
  t.equal(server.requests.length, 2);
});

t.test('4xx is never retried', async (t) => {
  for (const status of [400, 401, 403, 404, 429]) {
    const server = await startTestServer((_req, res) => {
      res.writeHead(status);
      res.end('no');
    });
    const res = await client().request({ url: server.url });
    t.equal(res.statusCode, status);
    t.equal(server.requests.length, 1, `${status} asked once`);
    await server.close();
  }
});

t.test('per-request retries override the default', async (t) => {
  const server = await startTestServer((_req, res) => {
    res.writeHead(500);
    res.end();
  });
  t.teardown(() => server.close());
  await client().request({ url: server.url, retries: 0 });
  t.equal(server.requests.length, 1);
});

t.test('connection refused: retried, then a clear ERR_HTTP', async (t) => {
  const url = await refusedUrl();
  const err = await rejection(client().request({ url: `${url}/path?password=hunter2x` }));
  t.type(err, HttpError);
  t.match(err, { code: 'ERR_HTTP', message: /failed: connection refused/, reason: 'connection refused' });
  t.notOk(err.message.includes('hunter2x'), 'secret query values redacted in the message');
});

t.test('a server that never answers times out, once: the timeout covers the retries too', async (t) => {
  const server = await startTestServer((req, res) => sendFault('hang', req, res, { wrongType: '' }));
  t.teardown(() => server.close());
  const err = await rejection(client({ defaultRetries: 1 }).request({ url: server.url, timeoutSeconds: 0.2 }));
  t.match(err, { code: 'ERR_HTTP', message: /no answer within 0.2 s/ });
  t.equal(server.requests.length, 1, 'the attempt used the whole timeout: no time is left for a retry');
});

t.test('a truncated body is an error, not a short document', async (t) => {
  const server = await startTestServer((req, res) => sendFault('truncate', req, res, { wrongType: '' }));
  t.teardown(() => server.close());
  const err = await rejection(client({ defaultRetries: 0 }).request({ url: server.url }));
  t.match(err, { code: 'ERR_HTTP', message: /connection closed before the whole response arrived/ });
});

t.test('size cap: a streamed body over the cap fails with ERR_HTTP_TOO_LARGE and is not retried', async (t) => {
  const server = await startTestServer((req, res) => sendFault('oversize', req, res, { wrongType: '' }, 4096));
  t.teardown(() => server.close());
  const err = await rejection(client().request({ url: server.url }));
  t.match(err, { code: 'ERR_HTTP_TOO_LARGE', message: /over the 4096-byte limit/ });
  t.equal(server.requests.length, 1);
});

t.test('size cap: a declared Content-Length over the cap fails before the body is read', async (t) => {
  const server = await startTestServer((_req, res) => {
    res.writeHead(200, { 'content-length': String(50 * 1024 * 1024) });
    res.write(Buffer.alloc(100));
    // The rest never comes: only the declared length can end this request.
  });
  t.teardown(() => server.close());
  const err = await rejection(client().request({ url: server.url, timeoutSeconds: 30 }));
  t.match(err, { code: 'ERR_HTTP_TOO_LARGE', message: /at least 52428800 bytes/ });
});

t.test('size cap: per-request maxBytes; exactly at the cap is accepted', async (t) => {
  const server = await startTestServer((_req, res) => {
    res.writeHead(200, { 'content-length': '10' });
    res.end('0123456789');
  });
  t.teardown(() => server.close());
  t.equal((await client().request({ url: server.url, maxBytes: 10 })).body.toString(), '0123456789');
  const err = await rejection(client().request({ url: server.url, maxBytes: 9 }));
  t.equal(err.code, 'ERR_HTTP_TOO_LARGE');
});

t.test('abort: a hanging request and a retry wait both end at once; an aborted signal sends nothing', async (t) => {
  const hang = await startTestServer((req, res) => sendFault('hang', req, res, { wrongType: '' }));
  t.teardown(() => hang.close());
  const ac = new AbortController();
  const pending = client().request({ url: hang.url, timeoutSeconds: 60, signal: ac.signal });
  setTimeout(() => ac.abort(), 50);
  t.match(await rejection(pending), { code: 'ERR_HTTP', message: /aborted/ });

  const failing = await startTestServer((_req, res) => {
    res.writeHead(500);
    res.end();
  });
  t.teardown(() => failing.close());
  const ac2 = new AbortController();
  // A 5-second retry wait: the abort must cut it short (the test's own timeout would fail otherwise).
  const waiting = client({ retryBaseMs: 100_000, defaultRetries: 5 }).request({ url: failing.url, signal: ac2.signal });
  setTimeout(() => ac2.abort(), 100);
  t.match(await rejection(waiting), { message: /aborted/ });
  t.equal(failing.requests.length, 1);

  const before = hang.requests.length;
  const ac3 = new AbortController();
  ac3.abort();
  t.match(await rejection(client().request({ url: hang.url, signal: ac3.signal })), {
    message: /not sent: shutting down/,
  });
  t.equal(hang.requests.length, before);
});

t.test('redirects are followed and the final URL is reported redacted', async (t) => {
  const server = await startTestServer((req, res) => {
    if (req.url === '/start') {
      res.writeHead(302, { location: '/final?temp_url_sig=deadbeef99&temp_url_expires=9' });
      return void res.end();
    }
    res.end('done');
  });
  t.teardown(() => server.close());
  const res = await client().request({ url: `${server.url}/start` });
  t.equal(res.body.toString(), 'done');
  t.equal(res.redactedUrl, `${server.url}/final?temp_url_sig=[REDACTED]&temp_url_expires=9`);
});

t.test('a redirect to another origin does not carry credentials on; one to the same origin does', async (t) => {
  const other = await startTestServer((_req, res) => void res.end('other'));
  t.teardown(() => other.close());
  const server = await startTestServer((req, res) => {
    if (req.url === '/away') return void res.writeHead(302, { location: `${other.url}/there` }).end();
    if (req.url === '/near') return void res.writeHead(301, { location: '/here' }).end();
    res.end('here');
  });
  t.teardown(() => server.close());
  const headers = {
    authorization: 'Basic c2VjcmV0',
    cookie: 'session=1',
    'x-auth-token': 'gAAAAtoken',
    'x-keep': 'kept',
  };
  await client().request({ url: `${server.url}/away`, headers });
  t.match(other.requests[0]?.headers, { 'x-keep': 'kept' });
  for (const name of ['authorization', 'cookie', 'x-auth-token'])
    t.equal(other.requests[0]?.headers[name], undefined, `${name} is not sent to another origin`);
  await client().request({ url: `${server.url}/near`, headers });
  t.match(server.requests.at(-1)?.headers, headers, 'the same origin gets them all');
});

t.test('a 303 is followed with a GET and no body; a 307 repeats the method and body', async (t) => {
  const server = await startTestServer((req, res) => {
    if (req.url === '/see-other') return void res.writeHead(303, { location: '/result' }).end();
    if (req.url === '/temporary') return void res.writeHead(307, { location: '/result' }).end();
    res.end(req.method);
  });
  t.teardown(() => server.close());
  const seeOther = await client().request({ url: `${server.url}/see-other`, method: 'POST', body: 'data' });
  t.equal(seeOther.body.toString(), 'GET');
  t.equal(server.requests[1]?.body, '');
  const temporary = await client().request({ url: `${server.url}/temporary`, method: 'POST', body: 'data' });
  t.equal(temporary.body.toString(), 'POST');
  t.equal(server.requests[3]?.body, 'data');
});

t.test('a redirect to a scheme other than http and https is an error, not followed', async (t) => {
  const server = await startTestServer(
    (_req, res) => void res.writeHead(302, { location: 'file:///etc/passwd' }).end(),
  );
  t.teardown(() => server.close());
  const err = await rejection(client().request({ url: server.url }));
  t.match(err, { code: 'ERR_HTTP', reason: 'a redirect to a file: URL, not followed' });
  t.equal(server.requests.length, 1, 'not retried');
});

let openssl = true;
try {
  execFileSync('openssl', ['version'], { stdio: 'ignore' });
} catch {
  openssl = false;
}

t.test(
  'TLS: a private CA is refused by default, accepted with caFile, skipped with insecure',
  { skip: !openssl && 'openssl is not installed' },
  async (t) => {
    const dir = t.testdir();
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const server = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_req, res) =>
      res.end('secure'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const http = client({ defaultRetries: 0 });
    t.match(await rejection(http.request({ url })), { code: 'ERR_HTTP', message: /TLS verification failed/ });
    t.equal((await http.request({ url, caFile: cert })).body.toString(), 'secure');
    t.equal((await http.request({ url, insecure: true })).body.toString(), 'secure');
    t.match(await rejection(http.request({ url, caFile: path.join(dir, 'missing.pem') })), {
      code: 'ERR_HTTP',
      message: /cannot read CA file .*missing\.pem: ENOENT/,
    });
  },
);
