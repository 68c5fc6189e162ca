import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { zaqarCollector } from '../../src/collectors/zaqar.js';
import type { CliOverrides } from '../../src/config/load.js';
import { SourceNotConfiguredError, SourceUnavailableError } from '../../src/errors.js';
import type { HttpRequest } from '../../src/http/types.js';
import {
  ALL_FAULTS,
  collectBesideHeatLocal,
  collectorContext,
  refusedUrl,
  type TapTest,
  type TestContext,
} from '../helpers/http-test-server.js';
import { startKeystoneServer, type KeystoneServer } from '../helpers/keystone-server.js';
import { startZaqarServer, type ZaqarServer } from '../helpers/zaqar-server.js';
import { failure } from '../helpers/assertions.js';

// The zaqar collector against loopback Keystone and Zaqar servers: pop one message per poll, as upstream.

const QUEUE = 'server-queue-1';
const doc = (n: number) => ({
  'os-collect-config': { collectors: ['zaqar', 'local'] },
  deployments: [{ id: String(n), name: `dep-${n}`, group: 'os-apply-config', config: { n } }],
});

async function setup(
  t: TapTest,
  over: Record<string, string | number | boolean> = {},
  opts: { maxBytes?: number } = {},
) {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const zaqar = await startZaqarServer(ks, opts.maxBytes ? { capBytes: opts.maxBytes } : {});
  t.teardown(() => zaqar.close());
  ks.catalog = [{ type: 'messaging', endpoints: [{ interface: 'public', region: 'RegionOne', url: zaqar.endpoint }] }];
  const root = t.testdir();
  const cli: CliOverrides = {
    zaqar: {
      auth_url: ks.authUrl,
      user_id: ks.userId,
      password: ks.password,
      project_id: ks.projectId,
      queue_id: QUEUE,
      timeout: 0.5,
      ...over,
    },
  };
  const tc = await collectorContext('zaqar', { root, cli, ...(opts.maxBytes ? { maxBytes: opts.maxBytes } : {}) });
  return { ks, zaqar, root, cli, tc };
}

function assertNoSecrets(t: TapTest, tc: TestContext, ks: KeystoneServer, zaqar: ZaqarServer): void {
  const tokens = zaqar.requests.map((r) => String(r.headers['x-auth-token'] ?? '')).filter(Boolean);
  for (const secret of [ks.password, ...tokens]) {
    t.notOk(tc.captured.text().includes(secret), 'no password or token in the captured log');
    t.notOk(tc.raw.text().includes(secret), 'no password or token even without log scrubbing');
  }
}

t.test('one message popped per poll; deployments exploded; one Client-ID and one login throughout', async (t) => {
  const { ks, zaqar, tc } = await setup(t);
  zaqar.post(QUEUE, doc(1));
  zaqar.post(QUEUE, doc(2));
  const first = await zaqarCollector.collect(tc.ctx);
  t.same(
    first.pairs.map((p) => p.key),
    ['zaqar', 'dep-1'],
  );
  t.equal(zaqar.queues.get(QUEUE)?.length, 1, 'popped one, as upstream');
  const second = await zaqarCollector.collect(tc.ctx);
  t.same(
    second.pairs.map((p) => p.key),
    ['zaqar', 'dep-2'],
  );
  const [a, b] = zaqar.requests;
  t.equal(a?.method, 'DELETE');
  t.equal(a?.url, `/v2/queues/${QUEUE}/messages?pop=1`);
  t.equal(a?.headers['client-id'], b?.headers['client-id']);
  t.equal(a?.headers['x-project-id'], ks.projectId);
  t.equal(ks.tokensIssued(), 1);
  assertNoSecrets(t, tc, ks, zaqar);
});

t.test('an empty queue keeps the last document (memory, then the cache file) marked unchanged', async (t) => {
  const { zaqar, root, cli, tc } = await setup(t);
  t.match(await failure(zaqarCollector.collect(tc.ctx)), {
    code: 'ERR_SOURCE_UNAVAILABLE',
    message: /queue server-queue-1 is empty and no earlier message is known/,
  });
  zaqar.post(QUEUE, doc(1));
  const fresh = await zaqarCollector.collect(tc.ctx);
  const idle = await zaqarCollector.collect(tc.ctx);
  t.equal(idle.unchanged, true);
  t.same(idle.pairs, fresh.pairs);
  // After a restart the memory is empty; the cached zaqar.json stands in.
  const restarted = await collectorContext('zaqar', { root, cli });
  mkdirSync(restarted.ctx.config.DEFAULT.cachedir, { recursive: true });
  writeFileSync(path.join(restarted.ctx.config.DEFAULT.cachedir, 'zaqar.json'), JSON.stringify(doc(7)));
  const fromCache = await zaqarCollector.collect(restarted.ctx);
  t.equal(fromCache.unchanged, true);
  t.same(
    fromCache.pairs.map((p) => p.key),
    ['zaqar', 'dep-7'],
  );
});

t.test('Keystone expired the token: 401 from Zaqar, one new login, the message is still popped', async (t) => {
  const { ks, zaqar, tc } = await setup(t);
  zaqar.post(QUEUE, doc(1));
  await zaqarCollector.collect(tc.ctx);
  ks.expireAll();
  zaqar.post(QUEUE, doc(2));
  const result = await zaqarCollector.collect(tc.ctx);
  t.equal(result.pairs[1]?.key, 'dep-2');
  t.equal(ks.tokensIssued(), 2);
  assertNoSecrets(t, tc, ks, zaqar);
});

t.test(
  'TLS to Zaqar: unverified by default (upstream), the CA file when validation is on; a pop is never retried',
  async (t) => {
    const { zaqar, root, cli, tc } = await setup(t);
    const seen: HttpRequest[] = [];
    const recording = (ctx: TestContext['ctx']) => ({
      ...ctx,
      http: { request: (req: HttpRequest) => (seen.push(req), ctx.http.request(req)) },
    });
    zaqar.post(QUEUE, doc(1));
    await zaqarCollector.collect(recording(tc.ctx));
    const pop = seen.find((r) => r.method === 'DELETE');
    t.equal(pop?.insecure, true);
    t.equal(pop?.retries, 0);
    t.notOk(seen.find((r) => r.method === 'POST')?.insecure, 'Keystone is verified');
    const verified = await collectorContext('zaqar', {
      root,
      cli: { zaqar: { ...cli.zaqar, ssl_certificate_validation: true, ca_file: '/etc/ssl/zaqar-ca.pem' } },
    });
    seen.length = 0;
    await failure(zaqarCollector.collect(recording(verified.ctx)));
    t.equal(
      seen.find((r) => r.method === 'DELETE')?.caFile,
      path.join(root, 'etc/ssl/zaqar-ca.pem'),
      'ca_file mapped under --root',
    );
  },
);

t.test('not configured: required options in upstream order; validation without ca_file', async (t) => {
  const root = t.testdir();
  const full = {
    auth_url: 'http://127.0.0.1:9/v3',
    user_id: 'u',
    password: 'p-secret',
    project_id: 'p',
    queue_id: 'q',
  };
  for (const key of Object.keys(full)) {
    const tc = await collectorContext('zaqar', { root, cli: { zaqar: { ...full, [key]: '' } } });
    const err = await failure(zaqarCollector.collect(tc.ctx));
    t.type(err, SourceNotConfiguredError, key);
    t.match(err.message, new RegExp(`no \\[zaqar\\] ${key}`));
  }
  const tc = await collectorContext('zaqar', { root, cli: { zaqar: { ...full, ssl_certificate_validation: true } } });
  t.match(await failure(zaqarCollector.collect(tc.ctx)), { message: /needs ca_file/ });
});

t.test(
  'use_websockets = true never uses the HTTP API (test/collectors/zaqar-websocket.test.ts has the rest)',
  async (t) => {
    const { tc: _tc, root, cli, zaqar } = await setup(t);
    zaqar.post(QUEUE, doc(1));
    const tc = await collectorContext('zaqar', { root, cli: { zaqar: { ...cli.zaqar, use_websockets: true } } });
    const err = await failure(zaqarCollector.collect(tc.ctx));
    t.type(err, SourceUnavailableError);
    t.match(err.message, /no public "messaging-websocket" endpoint in the Keystone catalog/);
    t.equal(zaqar.requests.length, 0);
  },
);

t.test('every fault is reported as unavailable with a clear message', async (t) => {
  const expected: Record<string, RegExp> = {
    refuse: /connection refused/,
    '500': /answered 500/,
    '403': /refused access \(403\)/,
    hang: /no answer within 0.5 s/,
    truncate: /connection closed before the whole response arrived/,
    'non-json': /not JSON/,
    'wrong-type': /message body is not a JSON object/,
    oversize: /over the 4096-byte limit/,
  };
  for (const fault of ALL_FAULTS) {
    const { ks, zaqar, tc } = await setup(t, {}, { maxBytes: 4096 });
    if (fault === 'refuse')
      ks.catalog = [{ type: 'messaging', endpoints: [{ interface: 'public', url: await refusedUrl() }] }];
    else zaqar.fault = fault;
    const err = await failure(zaqarCollector.collect(tc.ctx));
    t.type(err, SourceUnavailableError, fault);
    t.match(err.message, expected[fault]!, `${fault}: ${err.message}`);
    assertNoSecrets(t, tc, ks, zaqar);
  }
  const { zaqar, tc } = await setup(t);
  zaqar.fault = '500';
  await failure(zaqarCollector.collect(tc.ctx));
  t.equal(zaqar.requests.length, 1, 'a failed pop is not retried (a retry could lose a message)');
});

t.test('a failing zaqar source does not stop the other collectors', async (t) => {
  const { ks, zaqar, root, cli } = await setup(t);
  zaqar.fault = '500';
  const { outcome, tc } = await collectBesideHeatLocal('zaqar', root, cli);
  t.same(
    outcome.pairs.map((p) => p.key),
    ['heat_local'],
  );
  t.match(outcome.failures, [{ collector: 'zaqar', code: 'ERR_HTTP' }]);
  assertNoSecrets(t, tc, ks, zaqar);
});

t.test(
  '[keystone] cache_dir: a restarted zaqar collector (fresh memory) pops with the stored token, no login',
  async (t) => {
    const { ks, zaqar, root, cli } = await setup(t);
    const withCache: CliOverrides = { ...cli, keystone: { cache_dir: '/var/lib/os-collect-config/keystone' } };
    zaqar.post(QUEUE, doc(1));
    zaqar.post(QUEUE, doc(2));
    const first = await collectorContext('zaqar', { root, cli: withCache });
    await zaqarCollector.collect(first.ctx);
    const restarted = await collectorContext('zaqar', { root, cli: withCache });
    const second = await zaqarCollector.collect(restarted.ctx);
    t.same(
      second.pairs.map((p) => p.key),
      ['zaqar', 'dep-2'],
    );
    t.equal(ks.tokensIssued(), 1, 'one login across the restart');
    assertNoSecrets(t, restarted, ks, zaqar);
  },
);
