import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import { HttpError } from '../../src/http/http-error.js';
import { failure } from '../helpers/assertions.js';
import { captureLog } from '../helpers/log-capture.js';
import { refusedUrl, sendFault, startTestServer } from '../helpers/http-test-server.js';

// The client's download(): a body written to a file as it arrives, against real loopback servers. The same rules as
// request() (client.test.ts): retries of network errors and 5xx only, one timeout for the whole of it, the size cap,
// abort; and each attempt writes the file from the start.

const client = (over: Partial<Parameters<typeof createHttpClient>[0]> = {}) =>
  createHttpClient({ defaultMaxBytes: 4096, defaultRetries: 2, retryBaseMs: 5, ...over });
const rejection = (p: Promise<unknown>) => failure<HttpError>(p);

t.test('the body goes to the file (0600); status, headers, size and the redacted final URL come back', async (t) => {
  const server = await startTestServer((req, res) => {
    if (req.url === '/start') return void res.writeHead(302, { location: '/final?temp_url_sig=deadbeef99' }).end();
    res.writeHead(200, { 'x-kind': 'archive' }).end('archive bytes');
  });
  t.teardown(() => server.close());
  const file = path.join(t.testdir(), 'download');
  const res = await client().download({ url: `${server.url}/start` }, file);
  t.match(res, { statusCode: 200, bytes: 13, redactedUrl: `${server.url}/final?temp_url_sig=[REDACTED]` });
  t.equal(res.headers['x-kind'], 'archive');
  t.equal(readFileSync(file, 'utf8'), 'archive bytes');
  t.equal(statSync(file).mode & 0o777, 0o600);
});

t.test('a 5xx then a 200: retried, and the file holds the last answer only', async (t) => {
  let n = 0;
  const server = await startTestServer((_req, res) => {
    if (n++ === 0) return void res.writeHead(503).end('a long error page that must not stay in the file');
    res.writeHead(200).end('ok');
  });
  t.teardown(() => server.close());
  const file = path.join(t.testdir(), 'download');
  const captured = captureLog();
  t.equal((await client({ log: captured.log }).download({ url: server.url }, file)).statusCode, 200);
  t.equal(readFileSync(file, 'utf8'), 'ok');
  t.equal(server.requests.length, 2);
  t.equal(captured.lines.filter((l) => l.msg === 'retrying request').length, 1, 'the retry is logged as request()');
});

t.test('5xx up to the limit returns the last answer; a 4xx is not retried', async (t) => {
  let status = 500;
  const server = await startTestServer((_req, res) => void res.writeHead(status).end(`status ${status}`));
  t.teardown(() => server.close());
  const dir = t.testdir();
  t.equal((await client().download({ url: server.url }, path.join(dir, 'first'))).statusCode, 500);
  t.equal(server.requests.length, 3, 'one try and two retries');
  status = 404;
  const file = path.join(dir, 'second');
  t.equal((await client().download({ url: server.url, retries: 5 }, file)).statusCode, 404);
  t.equal(server.requests.length, 4, 'a 4xx is asked once');
  t.equal(readFileSync(file, 'utf8'), 'status 404');
});

t.test('connection refused: retried, then a clear ERR_HTTP', async (t) => {
  const url = await refusedUrl();
  const err = await rejection(client().download({ url: `${url}/a?password=hunter2x` }, path.join(t.testdir(), 'f')));
  t.type(err, HttpError);
  t.match(err, { code: 'ERR_HTTP', message: /failed: connection refused/ });
  t.notOk(err.message.includes('hunter2x'));
});

t.test(
  'size cap: a body streaming past the cap, and a declared length over it, fail and are not retried',
  async (t) => {
    const streaming = await startTestServer((req, res) => sendFault('oversize', req, res, { wrongType: '' }, 4096));
    t.teardown(() => streaming.close());
    const file = path.join(t.testdir(), 'download');
    t.match(await rejection(client().download({ url: streaming.url }, file)), {
      code: 'ERR_HTTP_TOO_LARGE',
      message: /over the 4096-byte limit/,
    });
    t.equal(streaming.requests.length, 1);
    t.ok(statSync(file).size <= 4096 + 65536, 'the download stopped near the cap');

    const declared = await startTestServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(50 * 1024 * 1024) });
      res.write(Buffer.alloc(100));
    });
    t.teardown(() => declared.close());
    t.match(await rejection(client().download({ url: declared.url, timeoutSeconds: 30 }, `${file}-2`)), {
      code: 'ERR_HTTP_TOO_LARGE',
      message: /52428800 bytes/,
    });
  },
);

t.test('a server that never answers: one timeout for the whole download, no retry after it', async (t) => {
  const server = await startTestServer((req, res) => sendFault('hang', req, res, { wrongType: '' }));
  t.teardown(() => server.close());
  const err = await rejection(
    client({ defaultRetries: 1 }).download({ url: server.url, timeoutSeconds: 0.2 }, path.join(t.testdir(), 'f')),
  );
  t.match(err, { code: 'ERR_HTTP', message: /no answer within 0.2 s/ });
  t.equal(server.requests.length, 1);
});

t.test('abort: a hanging download and a retry wait end at once; an aborted signal sends nothing', async (t) => {
  const hang = await startTestServer((req, res) => sendFault('hang', req, res, { wrongType: '' }));
  t.teardown(() => hang.close());
  const file = path.join(t.testdir(), 'download');
  const ac = new AbortController();
  const pending = client().download({ url: hang.url, timeoutSeconds: 60, signal: ac.signal }, file);
  setTimeout(() => ac.abort(), 50);
  t.match(await rejection(pending), { code: 'ERR_HTTP', message: /aborted/ });

  const failing = await startTestServer((_req, res) => void res.writeHead(500).end());
  t.teardown(() => failing.close());
  const ac2 = new AbortController();
  // A retry wait of minutes: only the abort can end it within the test's time.
  const waiting = client({ retryBaseMs: 100_000, defaultRetries: 5 }).download(
    { url: failing.url, signal: ac2.signal },
    `${file}-2`,
  );
  setTimeout(() => ac2.abort(), 100);
  t.match(await rejection(waiting), { message: /aborted/ });
  t.equal(failing.requests.length, 1);

  const ac3 = new AbortController();
  ac3.abort();
  const unsent = path.join(t.testdir(), 'unsent');
  t.match(await rejection(client().download({ url: hang.url, signal: ac3.signal }, unsent)), {
    message: /not sent: shutting down/,
  });
  t.notOk(existsSync(unsent), 'no file is made');
});

t.test(
  'the file must be new: a file or link already at the name is refused, and nothing is written through it',
  async (t) => {
    const server = await startTestServer((_req, res) => void res.end('planted?'));
    t.teardown(() => server.close());
    const dir = t.testdir({ victim: 'keep me', existing: 'old' });
    symlinkSync(path.join(dir, 'victim'), path.join(dir, 'link'));
    for (const name of ['link', 'existing'])
      t.match(await failure(client().download({ url: server.url }, path.join(dir, name))), { code: 'EEXIST' });
    t.equal(readFileSync(path.join(dir, 'victim'), 'utf8'), 'keep me');
    t.equal(readFileSync(path.join(dir, 'existing'), 'utf8'), 'old');
    t.equal(server.requests.length, 0, 'nothing was asked for');
  },
);

// A 1 MiB tmpfs the test mounts (root only): the disk's error, not a request failure, and no retry.
t.test(
  'a full disk fails the download with the system error, once',
  { skip: process.getuid?.() !== 0 && 'mounting a tmpfs needs root' },
  async (t) => {
    const server = await startTestServer((_req, res) => void res.end(Buffer.alloc(4 * 1024 * 1024)));
    t.teardown(() => server.close());
    // Not t.testdir(): tap removes that before the teardown below has unmounted the tmpfs.
    const dir = mkdtempSync(path.join(tmpdir(), 'oca-download-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'oca-download-full', dir]);
    t.teardown(() => {
      execFileSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    });
    const err = await failure(
      client({ defaultMaxBytes: 8 * 1024 * 1024 }).download({ url: server.url }, path.join(dir, 'f')),
    );
    t.match(err, { code: 'ENOSPC' });
    t.equal(server.requests.length, 1, 'not retried');
  },
);
