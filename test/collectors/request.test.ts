import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { requestCollector } from '../../src/collectors/request.js';
import { Agent } from '../../src/daemon/agent.js';
import { createHttpClient } from '../../src/http/client.js';
import { SourceNotConfiguredError, SourceUnavailableError } from '../../src/errors.js';
import { makeAgentRoot, recordingCommand } from '../helpers/agent-root.js';
import {
  ALL_FAULTS,
  collectBesideHeatLocal,
  collectorContext,
  refusedUrl,
  startTestServer,
  type TapTest,
  type TestContext,
} from '../helpers/http-test-server.js';
import { startSwiftServer, type SwiftServer } from '../helpers/swift-server.js';
import { failure } from '../helpers/assertions.js';

// The request collector against a Swift TempURL server that checks signatures and expiry and answers conditional
// GETs: an unchanged document costs one 304 and nothing else.

const DOC = {
  'os-collect-config': { collectors: ['request', 'local'], request: { metadata_url: 'x' } },
  deployments: [
    { id: '1', name: 'dep-oac', group: 'os-apply-config', config: { a: 1 } },
    { id: '2', name: 'dep-script', group: 'script', config: 'echo' },
  ],
};

async function setup(t: TapTest, opts: { maxBytes?: number; url?: (s: SwiftServer) => string } = {}) {
  const swift = await startSwiftServer(opts.maxBytes ? { capBytes: opts.maxBytes } : {});
  t.teardown(() => swift.close());
  swift.put(JSON.stringify(DOC));
  const url = opts.url ? opts.url(swift) : swift.signedUrl();
  const root = t.testdir();
  const tc = await collectorContext('request', {
    root,
    cli: { request: { metadata_url: url, timeout: 0.5 } },
    ...(opts.maxBytes ? { maxBytes: opts.maxBytes } : {}),
  });
  return { swift, url, root, tc };
}

function assertNoSecrets(t: TapTest, tc: TestContext, swift: SwiftServer, urls: string[]): void {
  const sigs = urls.map((u) => new URL(u).searchParams.get('temp_url_sig') ?? '').filter(Boolean);
  for (const secret of [swift.key, ...sigs]) {
    t.notOk(tc.captured.text().includes(secret), 'no TempURL signature or key in the captured log');
    t.notOk(tc.raw.text().includes(secret), 'no TempURL signature or key even without log scrubbing');
  }
}

t.test('first poll: one GET; the document and its exploded deployments', async (t) => {
  const { swift, url, tc } = await setup(t);
  const result = await requestCollector.collect(tc.ctx);
  t.same(
    result.pairs.map((p) => p.key),
    ['request', 'dep-oac'],
  );
  t.same(result.pairs[0]?.value, DOC);
  t.notOk(result.unchanged);
  t.same(
    swift.requests.map((r) => r.method),
    ['GET'],
    'no HEAD (upstream sent HEAD + GET every poll, B10)',
  );
  t.notOk(swift.requests[0]?.headers['if-none-match'], 'nothing to be conditional on yet');
  assertNoSecrets(t, tc, swift, [url]);
});

t.test('unchanged document: a conditional GET answered 304 returns the previous pairs, marked unchanged', async (t) => {
  const { swift, url, tc } = await setup(t);
  const first = await requestCollector.collect(tc.ctx);
  const second = await requestCollector.collect(tc.ctx);
  const third = await requestCollector.collect(tc.ctx);
  t.equal(second.unchanged, true);
  t.equal(second.pairs, first.pairs, 'the very same pairs, nothing parsed');
  t.equal(third.unchanged, true);
  t.same(swift.answers, { 200: 1, 304: 2 });
  t.equal(swift.requests.length, 3, 'one request per poll');
  const conditional = swift.requests[1]!;
  t.match(conditional.headers['if-none-match'], /^"[0-9a-f]{32}"$/);
  t.ok(conditional.headers['if-modified-since'], 'If-Modified-Since sent as well');
  swift.put(JSON.stringify({ ...DOC, changed: true }));
  const fourth = await requestCollector.collect(tc.ctx);
  t.notOk(fourth.unchanged);
  t.match(fourth.pairs[0]?.value, { changed: true });
  t.same(swift.answers, { 200: 2, 304: 2 });
  assertNoSecrets(t, tc, swift, [url]);
});

t.test('If-Modified-Since alone (a server without ETag) also gives 304', async (t) => {
  let modified = new Date(Date.now() - 10_000).toUTCString();
  const server = await startTestServer((req, res) => {
    const ims = req.headers['if-modified-since'];
    if (ims && Date.parse(ims) >= Date.parse(modified)) {
      res.writeHead(304);
      return void res.end();
    }
    res.writeHead(200, { 'last-modified': modified, 'content-type': 'application/json' });
    res.end('{"x": 1}');
  });
  t.teardown(() => server.close());
  const tc = await collectorContext('request', {
    root: t.testdir(),
    cli: { request: { metadata_url: `${server.url}/doc` } },
  });
  await requestCollector.collect(tc.ctx);
  t.equal((await requestCollector.collect(tc.ctx)).unchanged, true);
  t.notOk(server.requests[1]?.headers['if-none-match']);
  modified = new Date().toUTCString();
  const changed = await requestCollector.collect(tc.ctx);
  t.notOk(changed.unchanged);
});

t.test('through the agent: an unchanged document means no cache write and no command run', async (t) => {
  const swift = await startSwiftServer();
  t.teardown(() => swift.close());
  swift.put(JSON.stringify(DOC));
  const dir = t.testdir();
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = request\n[request]\nmetadata_url = ${swift.signedUrl().replace(/\$/g, '$$$$')}\n[agent]\nwatch = false\n`,
  );
  const agent = await Agent.create({
    sources: { root: root.root },
    log: (await collectorContext('request', { root: root.root, cli: {} })).ctx.log,
    mode: 'collect',
    createHttp: () => createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
  });
  const signal = new AbortController().signal;
  const first = await agent.cycle(signal);
  t.same(first.changedKeys, ['request', 'dep-oac']);
  const cacheFile = path.join(root.root, 'var/lib/os-collect-config/request.json');
  const before = statSync(cacheFile).mtimeMs;
  const second = await agent.cycle(signal);
  t.same(second.changedKeys, []);
  t.equal(second.ran, false);
  t.equal(statSync(cacheFile).mtimeMs, before, 'request.json not rewritten');
  t.equal(readFileSync(cmd.record, 'utf8').trim().split('\n').length, 1, 'the command ran once');
  t.same(swift.answers, { 200: 1, 304: 1 });
});

t.test('an expired or wrongly signed TempURL is refused (401) and reported without the signature', async (t) => {
  const { swift } = await setup(t);
  const expired = swift.signedUrl(-10);
  const tampered = swift.signedUrl().replace(/temp_url_sig=[0-9a-f]{6}/, 'temp_url_sig=000000');
  for (const url of [expired, tampered]) {
    const tc = await collectorContext('request', { root: t.testdir(), cli: { request: { metadata_url: url } } });
    const err = await failure(requestCollector.collect(tc.ctx));
    t.type(err, SourceUnavailableError);
    t.match(err.message, /refused the request \(401\); a TempURL may have expired/);
    t.equal((err as SourceUnavailableError).statusCode, 401, 'the status is a field of the error');
    t.match(err.message, /temp_url_sig=\[REDACTED\]/);
    assertNoSecrets(t, tc, swift, [url]);
  }
  t.equal(swift.answers[401], 2);
});

t.test('a new URL (rotated TempURL) starts over with an unconditional GET', async (t) => {
  const { swift, tc } = await setup(t);
  await requestCollector.collect(tc.ctx);
  const next = await collectorContext('request', {
    root: t.testdir(),
    cli: { request: { metadata_url: swift.signedUrl(7200) } },
    memory: tc.ctx.memory,
  });
  const result = await requestCollector.collect(next.ctx);
  t.notOk(result.unchanged);
  t.notOk(swift.requests[1]?.headers['if-none-match']);
});

t.test('not configured: no URL, or not a URL', async (t) => {
  for (const url of ['', 'not a url']) {
    const tc = await collectorContext('request', { root: t.testdir(), cli: { request: { metadata_url: url } } });
    t.type(await failure(requestCollector.collect(tc.ctx)), SourceNotConfiguredError, JSON.stringify(url));
  }
});

t.test('a malformed Last-Modified is ignored with a warning (upstream crashed, B8)', async (t) => {
  const server = await startTestServer((_req, res) => {
    res.writeHead(200, { 'last-modified': 'Mon, 32 Foo 2020 99:99:99 +0000', 'content-type': 'application/json' });
    res.end('{"ok": true}');
  });
  t.teardown(() => server.close());
  const tc = await collectorContext('request', { root: t.testdir(), cli: { request: { metadata_url: server.url } } });
  t.same((await requestCollector.collect(tc.ctx)).pairs, [{ key: 'request', value: { ok: true } }]);
  t.ok(tc.captured.lines.some((l) => l.msg === 'ignoring a malformed Last-Modified header'));
  await requestCollector.collect(tc.ctx);
  t.notOk(server.requests[1]?.headers['if-modified-since'], 'never echoed back');
});

t.test('a 304 to an unconditional request is a server fault', async (t) => {
  const server = await startTestServer((_req, res) => {
    res.writeHead(304);
    res.end();
  });
  t.teardown(() => server.close());
  const tc = await collectorContext('request', { root: t.testdir(), cli: { request: { metadata_url: server.url } } });
  t.match(await failure(requestCollector.collect(tc.ctx)), {
    code: 'ERR_HTTP',
    message: /304 Not Modified to an unconditional request/,
  });
});

t.test('every fault is reported as unavailable with a clear message; earlier pairs are not touched', async (t) => {
  const expected: Record<string, RegExp> = {
    refuse: /connection refused/,
    '500': /answered 500/,
    '403': /refused the request \(403\)/,
    hang: /no answer within 0.5 s/,
    truncate: /connection closed before the whole response arrived/,
    'non-json': /did not return valid JSON/,
    'wrong-type': /JSON that is not an object/,
    oversize: /over the 4096-byte limit/,
  };
  for (const fault of ALL_FAULTS) {
    const refused =
      fault === 'refuse' ? `${await refusedUrl()}/x?temp_url_sig=abcdef123456&temp_url_expires=1` : undefined;
    const { swift, url, tc } = await setup(t, { maxBytes: 4096, ...(refused ? { url: () => refused } : {}) });
    if (!refused) swift.fault = fault;
    const err = await failure(requestCollector.collect(tc.ctx));
    t.type(err, SourceUnavailableError, fault);
    t.match(err.message, expected[fault]!, `${fault}: ${err.message}`);
    if (fault === 'oversize') t.equal((err as SourceUnavailableError).code, 'ERR_HTTP_TOO_LARGE');
    if (fault === 'non-json' || fault === 'wrong-type')
      t.equal((err as SourceUnavailableError).code, 'ERR_SOURCE_INVALID_DATA');
    t.same(tc.ctx.memory, {}, 'nothing remembered from a failed poll');
    assertNoSecrets(t, tc, swift, [url]);
  }
});

t.test('a failing request source does not stop the other collectors', async (t) => {
  const { swift, url, root } = await setup(t);
  swift.fault = '500';
  const { outcome, tc } = await collectBesideHeatLocal('request', root, { request: { metadata_url: url } });
  t.same(
    outcome.pairs.map((p) => p.key),
    ['heat_local'],
  );
  t.match(outcome.failures, [{ collector: 'request', code: 'ERR_HTTP' }]);
  assertNoSecrets(t, tc, swift, [url]);
});
