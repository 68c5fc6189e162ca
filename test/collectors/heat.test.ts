import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { heatCollector } from '../../src/collectors/heat.js';
import type { CliOverrides } from '../../src/config/load.js';
import { SourceNotConfiguredError, SourceUnavailableError } from '../../src/errors.js';
import { startHeatServer, type HeatServer } from '../helpers/heat-server.js';
import {
  ALL_FAULTS,
  collectBesideHeatLocal,
  collectorContext,
  refusedUrl,
  type TapTest,
  type TestContext,
} from '../helpers/http-test-server.js';
import { startKeystoneServer, type KeystoneServer } from '../helpers/keystone-server.js';
import { failure } from '../helpers/assertions.js';

// The heat collector against a loopback Keystone (issuing and expiring tokens) and Heat API (checking them).

const METADATA = {
  'os-collect-config': { collectors: ['heat', 'local'] },
  deployments: [
    { id: 'a', name: 'settings', group: 'os-apply-config', config: { app: { port: 80 } } },
    { id: 'b', name: 'ungrouped', config: { u: 1 } },
    { id: 'c', name: 'script-one', group: 'script', config: '#!/bin/sh\n' },
  ],
};

async function setup(t: TapTest, over: Record<string, string | number> = {}, opts: { maxBytes?: number } = {}) {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const heat = await startHeatServer(ks, opts.maxBytes ? { capBytes: opts.maxBytes } : {});
  t.teardown(() => heat.close());
  ks.catalog = [
    { type: 'identity', endpoints: [{ interface: 'public', region: 'RegionOne', url: ks.authUrl }] },
    {
      type: 'orchestration',
      endpoints: [
        { interface: 'internal', region: 'RegionOne', url: 'http://192.0.2.1/never' },
        { interface: 'public', region: 'RegionOne', region_id: 'RegionOne', url: heat.endpoint },
      ],
    },
  ];
  heat.resources.set('server', METADATA);
  const root = t.testdir();
  const cli: CliOverrides = {
    heat: {
      auth_url: ks.authUrl,
      user_id: ks.userId,
      password: ks.password,
      project_id: ks.projectId,
      stack_id: `${heat.stackName}/${heat.stackId}`,
      resource_name: 'server',
      region_name: 'RegionOne',
      timeout: 0.5,
      ...over,
    },
  };
  const tc = await collectorContext('heat', { root, cli, ...(opts.maxBytes ? { maxBytes: opts.maxBytes } : {}) });
  return { ks, heat, root, cli, tc };
}

function assertNoSecrets(
  t: TapTest,
  tc: TestContext,
  ks: KeystoneServer,
  heat: HeatServer,
  extra: string[] = [],
): void {
  const tokens = heat.requests.map((r) => String(r.headers['x-auth-token'] ?? '')).filter(Boolean);
  for (const secret of [ks.password, ...tokens, ...extra]) {
    t.notOk(tc.captured.text().includes(secret), 'no password or token in the captured log');
    t.notOk(tc.raw.text().includes(secret), 'no password or token even without log scrubbing');
  }
}

t.test(
  'metadata fetched with a token; deployments exploded with [DEFAULT] deployment_key; one login for many polls',
  async (t) => {
    const { ks, heat, tc } = await setup(t);
    const first = await heatCollector.collect(tc.ctx);
    t.same(
      first.pairs.map((p) => p.key),
      ['heat', 'settings', 'ungrouped'],
    );
    t.same(first.pairs[0]?.value, METADATA);
    await heatCollector.collect(tc.ctx);
    await heatCollector.collect(tc.ctx);
    t.equal(ks.tokensIssued(), 1, 'the token is kept across polls (upstream logged in every poll, B11)');
    t.equal(heat.served(), 3);
    t.equal(heat.requests[0]?.headers.accept, 'application/json');
    assertNoSecrets(t, tc, ks, heat);
  },
);

t.test('a token Keystone expired early gets 401 from Heat; the collector logs in again and succeeds', async (t) => {
  const { ks, heat, tc } = await setup(t);
  await heatCollector.collect(tc.ctx);
  ks.expireAll();
  const again = await heatCollector.collect(tc.ctx);
  t.equal(again.pairs[0]?.key, 'heat');
  t.equal(ks.tokensIssued(), 2);
  t.equal(heat.requests.filter((r) => r.url.endsWith('/metadata')).length, 3, 'ok, 401, ok');
  t.ok(tc.captured.lines.some((l) => l.msg === 'Heat refused the cached token; authenticating again'));
  assertNoSecrets(t, tc, ks, heat);
});

t.test('a token near its expiry is renewed before use', async (t) => {
  const { ks, heat, tc } = await setup(t);
  ks.lifetimeMs = 30_000; // inside the one-minute safety margin
  await heatCollector.collect(tc.ctx);
  await heatCollector.collect(tc.ctx);
  t.equal(ks.tokensIssued(), 2);
  t.equal(heat.served(), 2);
});

t.test("a stack named without its id is resolved by Heat's redirect", async (t) => {
  const { heat, root, cli } = await setup(t);
  for (const stack of [heat.stackName, heat.stackId]) {
    const tc = await collectorContext('heat', { root, cli: { heat: { ...cli.heat, stack_id: stack } } });
    const result = await heatCollector.collect(tc.ctx);
    t.equal(result.pairs[0]?.key, 'heat', stack);
  }
  t.ok(
    heat.requests.some(
      (r) =>
        r.url ===
        `/v1/${(cli.heat as { project_id: string }).project_id}/stacks/${heat.stackName}/resources/server/metadata`,
    ),
  );
});

t.test('region: "null" (as Heat rendered it) means none; an unknown region is reported', async (t) => {
  const { root, cli } = await setup(t);
  const nullRegion = await collectorContext('heat', { root, cli: { heat: { ...cli.heat, region_name: 'null' } } });
  t.equal((await heatCollector.collect(nullRegion.ctx)).pairs[0]?.key, 'heat');
  const other = await collectorContext('heat', { root, cli: { heat: { ...cli.heat, region_name: 'Elsewhere' } } });
  const err = await failure(heatCollector.collect(other.ctx));
  t.type(err, SourceUnavailableError);
  t.match(err.message, /no public "orchestration" endpoint in region Elsewhere/);
});

t.test('not configured: options checked in upstream order', async (t) => {
  const root = t.testdir();
  const full = {
    auth_url: 'http://127.0.0.1:9/v3',
    user_id: 'u',
    password: 'p-secret',
    project_id: 'p',
    stack_id: 's/i',
    resource_name: 'server',
  };
  for (const key of Object.keys(full)) {
    const tc = await collectorContext('heat', { root, cli: { heat: { ...full, [key]: '' } } });
    const err = await failure(heatCollector.collect(tc.ctx));
    t.type(err, SourceNotConfiguredError, key);
    t.match(err.message, new RegExp(`no \\[heat\\] ${key}`));
  }
});

t.test('a wrong password: unavailable, password never logged', async (t) => {
  const { ks, heat, root, cli } = await setup(t);
  const tc = await collectorContext('heat', { root, cli: { heat: { ...cli.heat, password: 'not-the-password-1' } } });
  const err = await failure(heatCollector.collect(tc.ctx));
  t.type(err, SourceUnavailableError);
  t.match(err.message, /refused the credentials \(401\)/);
  assertNoSecrets(t, tc, ks, heat, ['not-the-password-1']);
});

t.test('an unknown resource is a 404, reported as unavailable', async (t) => {
  const { root, cli } = await setup(t);
  const tc = await collectorContext('heat', { root, cli: { heat: { ...cli.heat, resource_name: 'nope' } } });
  t.match(await failure(heatCollector.collect(tc.ctx)), { code: 'ERR_HTTP', message: /no resource nope in stack/ });
});

t.test('every Heat fault is reported as unavailable with a clear message', async (t) => {
  const expected: Record<string, RegExp> = {
    refuse: /connection refused/,
    '500': /answered 500/,
    '403': /refused access \(403\)/,
    hang: /no answer within 0.5 s/,
    truncate: /connection closed before the whole response arrived/,
    'non-json': /not JSON/,
    'wrong-type': /no "metadata" object/,
    oversize: /over the 4096-byte limit/,
  };
  for (const fault of ALL_FAULTS) {
    const { ks, heat, tc } = await setup(t, {}, { maxBytes: 4096 });
    if (fault === 'refuse')
      ks.catalog = [
        { type: 'orchestration', endpoints: [{ interface: 'public', region: 'RegionOne', url: await refusedUrl() }] },
      ];
    else heat.fault = fault;
    const err = await failure(heatCollector.collect(tc.ctx));
    t.type(err, SourceUnavailableError, fault);
    t.match(err.message, expected[fault]!, `${fault}: ${err.message}`);
    assertNoSecrets(t, tc, ks, heat);
  }
});

t.test('Keystone down or broken: unavailable', async (t) => {
  for (const fault of ['500', 'hang', 'non-json'] as const) {
    const { ks, heat, tc } = await setup(t);
    ks.fault = fault;
    const err = await failure(heatCollector.collect(tc.ctx));
    t.type(err, SourceUnavailableError, fault);
    t.match(err.message, /Keystone/);
    assertNoSecrets(t, tc, ks, heat);
  }
});

t.test('a failing heat source does not stop the other collectors', async (t) => {
  const { ks, heat, root, cli } = await setup(t);
  heat.fault = '500';
  const { outcome, tc } = await collectBesideHeatLocal('heat', root, cli);
  t.same(
    outcome.pairs.map((p) => p.key),
    ['heat_local'],
  );
  t.match(outcome.failures, [{ collector: 'heat', code: 'ERR_HTTP' }]);
  assertNoSecrets(t, tc, ks, heat);
});

t.test(
  '[keystone] cache_dir under --root: a restarted collector (fresh memory) makes no login; a 401 on the cached token means one login',
  async (t) => {
    const { ks, heat, root, cli } = await setup(t);
    const withCache: CliOverrides = {
      ...cli,
      heat: { ...cli.heat, auth_url: ks.rootUrl },
      keystone: { cache_dir: '/var/lib/os-collect-config/keystone' },
    };
    const first = await collectorContext('heat', { root, cli: withCache });
    await heatCollector.collect(first.ctx);
    t.equal(ks.tokensIssued(), 1);
    t.equal(ks.discoveries(), 2, 'the unversioned auth_url was discovered (the root, and the v3 URL its 300 names)');
    const dir = path.join(root, 'var/lib/os-collect-config/keystone');
    const files = readdirSync(dir);
    t.equal(files.length, 1, 'one token file, under the root');
    t.equal(statSync(dir).mode & 0o777, 0o700);
    t.equal(statSync(path.join(dir, files[0]!)).mode & 0o777, 0o600);

    const restarted = await collectorContext('heat', { root, cli: withCache });
    const result = await heatCollector.collect(restarted.ctx);
    t.equal(result.pairs[0]?.key, 'heat');
    t.equal(ks.tokensIssued(), 1, 'no login after the restart');
    t.equal(ks.requests.length, 3, 'Keystone saw nothing from the restarted collector');

    ks.expireAll();
    const again = await collectorContext('heat', { root, cli: withCache });
    const renewed = await heatCollector.collect(again.ctx);
    t.equal(renewed.pairs[0]?.key, 'heat');
    t.equal(ks.tokensIssued(), 2, 'Heat refused the cached token: one login');
    t.ok(again.captured.lines.some((l) => l.msg === 'Heat refused the cached token; authenticating again'));
    const last = await collectorContext('heat', { root, cli: withCache });
    await heatCollector.collect(last.ctx);
    t.equal(ks.tokensIssued(), 2, 'the renewed token was stored for the next restart');
    for (const c of [first, restarted, again, last]) assertNoSecrets(t, c, ks, heat);
  },
);
