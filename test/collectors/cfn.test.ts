import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { cfnCollector } from '../../src/collectors/cfn.js';
import type { CliOverrides } from '../../src/config/load.js';
import { SourceNotConfiguredError, SourceUnavailableError } from '../../src/errors.js';
import { startCfnServer, xmlFor, type CfnServer } from '../helpers/cfn-server.js';
import {
  ALL_FAULTS,
  collectBesideHeatLocal,
  collectorContext,
  refusedUrl,
  type TapTest,
  type TestContext,
} from '../helpers/http-test-server.js';
import { failure } from '../helpers/assertions.js';

// The cfn collector against a loopback heat-api-cfn that recomputes every signature from the secret.

const METADATA = {
  'os-collect-config': { collectors: ['cfn', 'local'] },
  deployments: [
    { id: 'd1', name: 'dep-oac', group: 'os-apply-config', config: { app: { port: 80 } } },
    { id: 'd2', name: 'dep-script', group: 'script', config: '#!/bin/sh\n' },
  ],
  plain: 'value',
};

async function setup(
  t: TapTest,
  extra: Partial<Record<string, string | number | string[]>> = {},
  opts: { maxBytes?: number; retries?: number } = {},
) {
  const server = await startCfnServer({ capBytes: opts.maxBytes ?? 4096 });
  t.teardown(() => server.close());
  server.resources.set('server', JSON.stringify(METADATA));
  const root = t.testdir();
  const cli: CliOverrides = {
    cfn: {
      metadata_url: server.metadataUrl,
      access_key_id: server.accessKey,
      secret_access_key: server.secret,
      stack_name: server.stackName,
      path: ['server.Metadata'],
      timeout: 0.5,
      ...extra,
    },
  };
  const tc = await collectorContext('cfn', {
    root,
    cli,
    ...(opts.maxBytes ? { maxBytes: opts.maxBytes } : {}),
    ...(opts.retries !== undefined ? { retries: opts.retries } : {}),
  });
  return { server, root, tc, cli };
}

/** No secret, no signature in any log line (scrubbed or raw) nor in an error message. */
function assertNoSecrets(t: TapTest, tc: TestContext, server: CfnServer, extra: string[] = []): void {
  const signatures = server.requests
    .map((r) => new URL(r.url, 'http://x').searchParams.get('Signature'))
    .filter((s): s is string => !!s);
  for (const secret of [server.secret, ...signatures, ...extra]) {
    t.notOk(tc.captured.text().includes(secret), 'no secret or signature in the captured log');
    t.notOk(tc.raw.text().includes(secret), 'no secret or signature even without log scrubbing');
  }
}

t.test('one path: the document, then deployments exploded with [cfn] deployment_key', async (t) => {
  const { server, tc } = await setup(t);
  const result = await cfnCollector.collect(tc.ctx);
  t.same(
    result.pairs.map((p) => p.key),
    ['cfn', 'dep-oac'],
  );
  t.same(result.pairs[0]?.value, METADATA);
  t.same(result.pairs[1]?.value, { app: { port: 80 } });
  t.same(server.verdicts, [true]);
  const req = server.requests[0]!;
  t.equal(req.headers['content-type'], 'application/json', 'same header as upstream');
  assertNoSecrets(t, tc, server);
});

t.test('[cfn] deployment_key decides the explosion, not [DEFAULT] deployment_key', async (t) => {
  const { server, tc: _ } = await setup(t);
  server.resources.set(
    'server',
    JSON.stringify({ mine: [{ name: 'x', config: { a: 1 } }], deployments: [{ name: 'y', config: { b: 2 } }] }),
  );
  const tc = await collectorContext('cfn', {
    root: t.testdir(),
    cli: {
      DEFAULT: { deployment_key: ['deployments'] },
      cfn: {
        metadata_url: server.metadataUrl,
        access_key_id: server.accessKey,
        secret_access_key: server.secret,
        stack_name: server.stackName,
        path: ['server.Metadata'],
        deployment_key: ['mine'],
      },
    },
  });
  const result = await cfnCollector.collect(tc.ctx);
  t.same(
    result.pairs.map((p) => p.key),
    ['cfn', 'x'],
  );
});

t.test(
  'several paths: each signed afresh and accepted (B3), merged shallowly in order, sub-keys followed',
  async (t) => {
    const { server, tc } = await setup(t, { path: ['server.Metadata', 'other.Metadata', 'third.Metadata.inner'] });
    server.resources.set('other', JSON.stringify({ plain: 'overridden', extra: 1 }));
    server.resources.set('third', JSON.stringify({ inner: { deep: true }, ignored: 1 }));
    const result = await cfnCollector.collect(tc.ctx);
    t.same(server.verdicts, [true, true, true], 'every signature verified by the server');
    t.match(result.pairs[0]?.value, { plain: 'overridden', extra: 1, deep: true, deployments: Array });
    t.notOk('ignored' in (result.pairs[0]?.value as object));
  },
);

t.test('a wrong secret is refused by the server and reported as unavailable', async (t) => {
  const { server, root, cli } = await setup(t);
  const tc = await collectorContext('cfn', {
    root,
    cli: { cfn: { ...cli.cfn, secret_access_key: 'wrong-secret-value' } },
  });
  const err = await failure(cfnCollector.collect(tc.ctx));
  t.type(err, SourceUnavailableError);
  t.match(err, {
    code: 'ERR_HTTP',
    statusCode: 403,
    message: /refused the request \(403\).*access_key_id and secret_access_key/,
  });
  t.same(server.verdicts, [false]);
  t.notMatch(err.message, /Signature=[A-Za-z0-9%]/, 'the signed URL is not in the message');
  assertNoSecrets(t, tc, server, ['wrong-secret-value']);
});

t.test('the hint file names the server when metadata_url is unset (contents + /v1/)', async (t) => {
  const { server, root, cli } = await setup(t);
  const hint = path.join(root, 'var/lib/heat-cfntools/cfn-metadata-server');
  mkdirSync(path.dirname(hint), { recursive: true });
  writeFileSync(hint, `${server.url}/\n`);
  const { metadata_url: _m, ...rest } = cli.cfn!;
  const tc = await collectorContext('cfn', { root, cli: { cfn: rest } });
  const result = await cfnCollector.collect(tc.ctx);
  t.equal(result.pairs[0]?.key, 'cfn');
  t.match(server.requests[0]?.url, /^\/v1\/\?/);
});

t.test('not configured: each missing setting is named', async (t) => {
  const root = t.testdir();
  const full = {
    metadata_url: 'http://127.0.0.1:9/v1/',
    access_key_id: 'k',
    secret_access_key: 'secret-x',
    stack_name: 's',
    path: ['server.Metadata'],
  };
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ metadata_url: '' }, /metadata_url and no heat_metadata_hint/],
    [{ access_key_id: '' }, /access_key_id/],
    [{ secret_access_key: '' }, /secret_access_key/],
    [{ path: [] }, /no \[cfn\] path/],
    [{ stack_name: '' }, /stack_name/],
    [{ path: ['nodot'] }, /not of the form/],
    [{ path: ['server.'] }, /not of the form/],
    // Refused when the configuration is read (test/config/url-options.test.ts): left unset.
    [{ metadata_url: 'not a url' }, /no \[cfn\] metadata_url/],
  ];
  for (const [change, message] of cases) {
    const tc = await collectorContext('cfn', { root, cli: { cfn: { ...full, ...change } as CliOverrides['cfn'] } });
    const err = await failure(cfnCollector.collect(tc.ctx));
    t.type(err, SourceNotConfiguredError, JSON.stringify(change));
    t.match(err.message, message);
  }
});

t.test(
  'missing field, missing sub-key, non-JSON metadata, non-object metadata, malformed XML: unavailable',
  async (t) => {
    const { server, tc } = await setup(t);
    const expectInvalid = async (what: string, message: RegExp) => {
      const err = await failure(cfnCollector.collect(tc.ctx));
      t.type(err, SourceUnavailableError, what);
      t.match(err, { code: 'ERR_SOURCE_INVALID_DATA', message }, what);
    };
    server.rawBody =
      '<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail><Other>1</Other></StackResourceDetail></DescribeStackResourceResult></DescribeStackResourceResponse>';
    await expectInvalid('field missing', /path server\.Metadata does not exist/);
    server.rawBody = xmlFor('not json at all');
    await expectInvalid('not JSON', /not valid JSON/);
    server.rawBody = xmlFor('[1, 2]');
    await expectInvalid('a list', /not a JSON object/);
    server.rawBody = '<DescribeStackResourceResponse><DescribeStackResourceResult>';
    await expectInvalid('truncated XML', /malformed XML/);
    server.rawBody = '<a></b>';
    await expectInvalid('mismatched tags', /malformed XML/);
    server.rawBody = undefined;
    const sub = await collectorContext('cfn', {
      root: t.testdir(),
      cli: {
        cfn: {
          metadata_url: server.metadataUrl,
          access_key_id: server.accessKey,
          secret_access_key: server.secret,
          stack_name: server.stackName,
          path: ['server.Metadata.nope'],
        },
      },
    });
    const err = await failure(cfnCollector.collect(sub.ctx));
    t.match(err, { code: 'ERR_SOURCE_INVALID_DATA', message: /no key "nope"/ });
  },
);

t.test('every transport fault is reported as unavailable, with a clear code', async (t) => {
  for (const fault of ALL_FAULTS) {
    const { server, root, cli, tc } = await setup(t, {}, { maxBytes: 4096 });
    let ctx = tc;
    if (fault === 'refuse')
      ctx = await collectorContext('cfn', {
        root,
        cli: { cfn: { ...cli.cfn, metadata_url: `${await refusedUrl()}/v1/` } },
      });
    else server.fault = fault;
    const err = await failure(cfnCollector.collect(ctx.ctx));
    t.type(err, SourceUnavailableError, fault);
    const expected: Record<string, RegExp> = {
      refuse: /connection refused/,
      '500': /answered 500/,
      '403': /refused the request \(403\)/,
      hang: /no answer within 0.5 s/,
      truncate: /failed/,
      'non-json': /malformed XML/,
      'wrong-type': /not a JSON object/,
      oversize: /over the 4096-byte limit/,
    };
    t.match(err.message, expected[fault]!, `${fault}: ${err.message}`);
    if (fault === 'oversize') t.equal((err as SourceUnavailableError).code, 'ERR_HTTP_TOO_LARGE');
    assertNoSecrets(t, ctx, server);
  }
});

t.test('a 500 is retried within the poll; a 403 is not', async (t) => {
  const { server, tc } = await setup(t, {}, { retries: 2 });
  server.fault = '500';
  await failure(cfnCollector.collect(tc.ctx));
  t.equal(server.requests.length, 3, 'first try plus two retries');
  server.fault = '403';
  await failure(cfnCollector.collect(tc.ctx));
  t.equal(server.requests.length, 4, 'a 4xx is final');
});

t.test('an unreadable CA file is reported as unavailable', async (t) => {
  const { root, cli } = await setup(t);
  const tc = await collectorContext('cfn', { root, cli: { cfn: { ...cli.cfn, ca_certificate: '/no/such/ca.pem' } } });
  const err = await failure(cfnCollector.collect(tc.ctx));
  t.match(err, { code: 'ERR_HTTP', message: /cannot read CA file/ });
});

t.test('a failing cfn source does not stop the other collectors', async (t) => {
  const { server, root, cli } = await setup(t);
  server.fault = '500';
  const { outcome, tc } = await collectBesideHeatLocal('cfn', root, cli);
  t.same(
    outcome.pairs.map((p) => p.key),
    ['heat_local'],
  );
  t.match(outcome.failures, [{ collector: 'cfn', code: 'ERR_HTTP' }]);
  t.ok(
    tc.captured.lines.some((l) => l.msg === 'source unavailable' && l.collector === 'cfn'),
    'logged as unavailable',
  );
  assertNoSecrets(t, tc, server);
});
