import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { MetadataCache } from '../../src/cache/metadata-cache.js';
import { ec2Collector, tokenUrl } from '../../src/collectors/ec2.js';
import { loadConfig } from '../../src/config/load.js';
import { collectAll } from '../../src/daemon/collect-all.js';
import { SourceNotConfiguredError, SourceUnavailableError } from '../../src/errors.js';
import { startEc2Server, type Ec2Server, type Ec2Tree } from '../helpers/ec2-server.js';
import {
  ALL_FAULTS,
  collectBesideHeatLocal,
  collectorContext,
  refusedUrl,
  startTestServer,
  type TapTest,
  type TestContext,
} from '../helpers/http-test-server.js';
import { failure } from '../helpers/assertions.js';

// The ec2 collector against a loopback metadata service with a realistic tree and IMDSv2.

const EXPECTED = {
  'ami-id': 'ami-00000002',
  'ami-launch-index': '0',
  'ami-manifest-path': '(unknown)',
  'block-device-mapping': { ami: 'vda', root: '/dev/vda' },
  hostname: 'server-1.novalocal',
  'instance-action': 'none',
  'instance-id': 'i-0000000a',
  'instance-type': 'm1.small',
  'local-hostname': 'server-1.novalocal',
  'local-ipv4': '10.0.0.5',
  placement: { 'availability-zone': 'nova' },
  'public-hostname': 'server-1.novalocal',
  'public-ipv4': '172.24.4.10',
  'public-keys': { '0': { 'openssh-key': 'ssh-rsa AAAAB3NzaC1yc2E test@example' } },
  'reservation-id': 'r-3i0z5b2c',
  'security-groups': 'default',
};

async function setup(t: TapTest, opts: Parameters<typeof startEc2Server>[0] = {}) {
  const server = await startEc2Server(opts);
  t.teardown(() => server.close());
  const root = t.testdir();
  const tc = await collectorContext('ec2', {
    root,
    cli: { ec2: { metadata_url: server.metadataUrl, timeout: 0.5 } },
    ...(opts.capBytes ? { maxBytes: opts.capBytes } : {}),
  });
  return { server, root, tc };
}

function assertNoTokens(t: TapTest, tc: TestContext, server: Ec2Server): void {
  const tokens = server.requests.map((r) => String(r.headers['x-aws-ec2-metadata-token'] ?? '')).filter(Boolean);
  for (const token of tokens) {
    t.notOk(tc.captured.text().includes(token), 'no IMDSv2 token in the captured log');
    t.notOk(tc.raw.text().includes(token), 'no IMDSv2 token even without log scrubbing');
  }
}

t.test('IMDSv2: one token PUT, then the tree walked in listing order with the token on every GET', async (t) => {
  const { server, tc } = await setup(t, { requireToken: true });
  const result = await ec2Collector.collect(tc.ctx);
  t.same(result.pairs, [{ key: 'ec2', value: EXPECTED }]);
  t.equal(server.tokensIssued(), 1);
  const [put, ...gets] = server.requests;
  t.equal(put?.method, 'PUT');
  t.equal(put?.url, '/latest/api/token');
  t.equal(put?.headers['x-aws-ec2-metadata-token-ttl-seconds'], '21600');
  t.ok(gets.every((r) => r.method === 'GET' && typeof r.headers['x-aws-ec2-metadata-token'] === 'string'));
  t.same(
    gets.slice(0, 6).map((r) => r.url),
    [
      '/latest/meta-data/',
      '/latest/meta-data/ami-id',
      '/latest/meta-data/ami-launch-index',
      '/latest/meta-data/ami-manifest-path',
      '/latest/meta-data/block-device-mapping/',
      '/latest/meta-data/block-device-mapping/ami',
    ],
  );
  t.ok(
    gets.some((r) => r.url === '/latest/meta-data/public-keys/0/openssh-key'),
    '"0=heat_key" is walked as 0/',
  );
  assertNoTokens(t, tc, server);
});

t.test('IMDSv1 fallback: a service without the token API (OpenStack) is walked without a token', async (t) => {
  const { server, tc } = await setup(t, { imdsv2: false });
  const result = await ec2Collector.collect(tc.ctx);
  t.same(result.pairs[0]?.value, EXPECTED);
  t.equal(server.tokensIssued(), 0);
  t.notOk(server.requests.slice(1).some((r) => r.headers['x-aws-ec2-metadata-token']));
});

t.test('the cache is read first: ec2 metadata is fetched once and then treated as immutable', async (t) => {
  const { server, root, tc } = await setup(t);
  const loaded = await loadConfig({
    root,
    configFiles: [],
    cli: { DEFAULT: { collectors: ['ec2'] }, ec2: { metadata_url: server.metadataUrl } },
  });
  const cache = new MetadataCache(loaded.config.DEFAULT.cachedir, tc.ctx.log);
  const deps = {
    config: loaded.config,
    paths: loaded.paths,
    log: tc.ctx.log,
    http: tc.http,
    signal: new AbortController().signal,
    memory: new Map(),
    failing: new Set<string>(),
  };
  const first = await collectAll(deps, cache);
  t.same(first.changedKeys, ['ec2']);
  const count = server.requests.length;
  const second = await collectAll(deps, cache);
  t.same(second.pairs, [{ key: 'ec2', value: EXPECTED }]);
  t.equal(server.requests.length, count, 'no request once ec2.json exists');
});

t.test('an unusable cache file (invalid JSON, empty object) is ignored and the service walked', async (t) => {
  for (const content of ['{not json', '{}', 'null']) {
    const { server, tc } = await setup(t);
    mkdirSync(tc.ctx.config.DEFAULT.cachedir, { recursive: true });
    writeFileSync(path.join(tc.ctx.config.DEFAULT.cachedir, 'ec2.json'), content);
    t.same((await ec2Collector.collect(tc.ctx)).pairs[0]?.value, EXPECTED, content);
    t.ok(server.requests.length > 1);
    if (content === '{not json')
      t.ok(tc.captured.lines.some((l) => l.msg === 'cached ec2 metadata unusable; fetching it again'));
  }
});

t.test('"__proto__" in a listing is plain data, not a prototype', async (t) => {
  const tree = { a: '1' } as Ec2Tree;
  Object.defineProperty(tree, '__proto__', { value: 'proto-text', enumerable: true });
  const { tc } = await setup(t, { tree });
  const value = (await ec2Collector.collect(tc.ctx)).pairs[0]?.value as Record<string, unknown>;
  t.equal(Object.getPrototypeOf(value), Object.prototype);
  t.equal(Object.getOwnPropertyDescriptor(value, '__proto__')?.value, 'proto-text');
  t.equal(value.a, '1');
});

t.test('blank and trailing listing lines are skipped (upstream crashed on them)', async (t) => {
  const pages: Record<string, string> = {
    '/latest/meta-data/': 'a\n\nb/\n\n',
    '/latest/meta-data/a': '1',
    '/latest/meta-data/b/': 'c\r\n',
    '/latest/meta-data/b/c': '3',
  };
  const server = await startTestServer((req, res) => {
    const page = pages[req.url ?? ''];
    res.writeHead(page === undefined ? 404 : 200);
    res.end(page ?? 'Not Found');
  });
  t.teardown(() => server.close());
  const tc = await collectorContext('ec2', {
    root: t.testdir(),
    cli: { ec2: { metadata_url: `${server.url}/latest/meta-data/` } },
  });
  t.same((await ec2Collector.collect(tc.ctx)).pairs[0]?.value, { a: '1', b: { c: '3' } });
  t.same(
    server.requests.filter((r) => r.method === 'GET').map((r) => r.url),
    ['/latest/meta-data/', '/latest/meta-data/a', '/latest/meta-data/b/', '/latest/meta-data/b/c'],
  );
});

t.test('a tree nested too deeply is refused', async (t) => {
  let tree: Ec2Tree = { leaf: 'x' };
  for (let i = 0; i < 20; i++) tree = { d: tree };
  const { tc } = await setup(t, { tree });
  t.match(await failure(ec2Collector.collect(tc.ctx)), {
    code: 'ERR_SOURCE_INVALID_DATA',
    message: /deeper than 12 levels/,
  });
});

t.test('not configured: no URL, or not a URL', async (t) => {
  for (const url of ['', 'nope nope']) {
    const tc = await collectorContext('ec2', { root: t.testdir(), cli: { ec2: { metadata_url: url } } });
    t.type(await failure(ec2Collector.collect(tc.ctx)), SourceNotConfiguredError, JSON.stringify(url));
  }
});

t.test('tokenUrl: the service root is what precedes /latest', async (t) => {
  t.equal(tokenUrl('http://169.254.169.254/latest/meta-data'), 'http://169.254.169.254/latest/api/token');
  t.equal(tokenUrl('http://h:81/proxy/latest/meta-data/'), 'http://h:81/proxy/latest/api/token');
  t.equal(tokenUrl('http://h/custom'), 'http://h/latest/api/token');
});

t.test('every fault is reported as unavailable; there is never a partial result', async (t) => {
  const expected: Record<string, RegExp> = {
    refuse: /connection refused/,
    '500': /answered 500/,
    '403': /answered 403/,
    hang: /no answer within 0.5 s/,
    truncate: /connection closed before the whole response arrived/,
    'non-json': /unusable entry/,
    'wrong-type': /unusable entry/,
    oversize: /over the 4096-byte limit/,
  };
  for (const fault of ALL_FAULTS) {
    const { server, root, tc } = await setup(t, { capBytes: 4096 });
    let ctx = tc;
    if (fault === 'refuse')
      ctx = await collectorContext('ec2', {
        root,
        cli: { ec2: { metadata_url: `${await refusedUrl()}/latest/meta-data` } },
      });
    else server.fault = fault;
    const err = await failure(ec2Collector.collect(ctx.ctx));
    t.type(err, SourceUnavailableError, fault);
    t.match(err.message, expected[fault]!, `${fault}: ${err.message}`);
    assertNoTokens(t, ctx, server);
  }
  // One broken leaf in an otherwise healthy tree fails the whole walk.
  const { server, tc } = await setup(t);
  server.fault = '500';
  server.faultPath = /public-keys\/0\/openssh-key$/;
  t.match(await failure(ec2Collector.collect(tc.ctx)), {
    message: /answered 500 for .*openssh-key; no partial result/,
  });
});

t.test('a failing ec2 source does not stop the other collectors', async (t) => {
  const { server, root } = await setup(t);
  server.fault = '500';
  const { outcome } = await collectBesideHeatLocal('ec2', root, {
    ec2: { metadata_url: server.metadataUrl, timeout: 0.5 },
  });
  t.same(
    outcome.pairs.map((p) => p.key),
    ['heat_local'],
  );
  t.match(outcome.failures, [{ collector: 'ec2', code: 'ERR_HTTP' }]);
});
