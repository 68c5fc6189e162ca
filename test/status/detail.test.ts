import { readFileSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { moveTo } from '../helpers/state-path.js';
import { storeFor } from '../../src/state/store.js';
import { formatDetail, MASK, readDetail } from '../../src/status/detail.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';

// `status <id|name>`: one deployment's report from its record and upstream files; bad keys and bad records.

type Test = Parameters<Parameters<typeof import('tap').test>[0]>[0];

async function fixture(t: Test) {
  const root = t.testdir();
  const loaded = await deployConfig(root);
  const store = storeFor(loaded.config, captureLog().log);
  await store.init();
  const a = await store.create({ id: 'a-id', name: 'web', group: 'script', action: 'CREATE' });
  await moveTo(store, a, 'signalled', {
    hook: '/var/lib/heat-config/hooks/script',
    hookStarts: 1,
    startedAt: '2026-02-01T10:00:01.000Z',
    endedAt: '2026-02-01T10:00:03.500Z',
    exitCode: 0,
    statusCode: '0',
    failed: false,
    signal: {
      state: 'sent',
      transport: 'HEAT_SIGNAL',
      attempts: 2,
      sentAt: '2026-02-01T10:00:09.000Z',
      history: [
        {
          at: '2026-02-01T10:00:04.000Z',
          outcome: 'retry',
          status: 503,
          error: 'HTTP 503 from http://u:topsecret@heat/',
        },
        { at: '2026-02-01T10:00:09.000Z', outcome: 'sent', status: 200 },
      ],
    },
  });
  await store.writeDeployed('a-id', {
    id: 'a-id',
    name: 'web',
    group: 'script',
    options: { timeout: 60 },
    inputs: [
      { name: 'greeting', value: 'hello' },
      { name: 'deploy_signal_id', value: 'http://heat/signal?Signature=sig-value' },
      { name: 'db_password', value: 'hunter2' },
      { name: 'big', value: 'x'.repeat(5000) },
    ],
    config: 'echo hi',
  });
  const stdout = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
  await store.writeNotify('a-id', {
    deploy_stdout: stdout,
    deploy_stderr: 'warn\n',
    deploy_status_code: 0,
    result: 'ok',
  });
  return { loaded, store, detail: (key: string) => readDetail(loaded.config, captureLog().log, key) };
}

t.test('by id and by name: inputs masked, options, timings, tails, outputs, attempts', async (t) => {
  const { detail } = await fixture(t);
  const byName = await detail('web');
  const found = await detail('a-id');
  t.same(byName, found);
  if (!found.ok) throw new Error(found.message);
  const d = found.detail;
  t.same(d.inputs.slice(0, 3), [
    { name: 'greeting', value: 'hello' },
    { name: 'deploy_signal_id', value: MASK },
    { name: 'db_password', value: MASK },
  ]);
  t.match(d.inputs[3]?.value, /^x{2000}… \(5000 characters\)$/, 'long values are cut');
  t.same(d.options, { timeout: 60 });
  t.equal(d.durationSeconds, 2.5);
  t.equal(d.stdoutTail, Array.from({ length: 20 }, (_, i) => `line ${i + 11}`).join('\n') + '\n', 'the last 20 lines');
  t.equal(d.stderrTail, 'warn\n');
  t.same(d.outputs, { result: 'ok' });
  t.same(
    d.signalAttempts.map((a) => [a.outcome, a.status]),
    [
      ['retry', 503],
      ['sent', 200],
    ],
  );
  const text = formatDetail(d);
  const json = JSON.stringify(d);
  for (const secret of ['hunter2', 'sig-value', 'topsecret']) {
    t.notMatch(json, secret, `no ${secret} in JSON`);
    t.notMatch(text, secret, `no ${secret} in text`);
  }
  t.notMatch(json, 'echo hi', 'the config itself is not shown');
  t.match(text, /^deployment a-id \(web\)$/m);
  t.match(text, /^ {2}db_password = \*{6}$/m);
  t.match(text, /^ {2}2026-02-01T10:00:04.000Z {2}retry \(HTTP 503\): HTTP 503 from/m);
  t.match(text, /^ {2}\| line 30$/m);
});

t.test('unknown, ambiguous, unsafe keys and a corrupt record: a clear message, nothing changed', async (t) => {
  const { store, detail } = await fixture(t);
  t.match(await detail('nope'), { ok: false, message: /no deployment with id or name "nope" is known/ });
  t.match(await detail('../../etc/passwd'), { ok: false, message: /no deployment with id or name/ });
  await store.create({ id: 'b-id', name: 'web', group: 'script', action: 'CREATE' });
  t.match(await detail('web'), {
    ok: false,
    message: /2 deployments are named "web": (a-id, b-id|b-id, a-id); give the id/,
  });
  const file = store.recordPath('b-id');
  writeFileSync(file, '{"version": 0, "id": "b-id"}');
  t.match(await detail('b-id'), {
    ok: false,
    message:
      /record of deployment b-id .* cannot be used: it has version 0, and this agent reads version 1 .*deploy --forget b-id/,
  });
  t.equal(readFileSync(file, 'utf8'), '{"version": 0, "id": "b-id"}', 'left as it was');
});

t.test('one secret rule: key and private inputs masked; tails and outputs scrubbed of the secret inputs', async (t) => {
  const { store, detail } = await fixture(t);
  await store.writeDeployed('a-id', {
    id: 'a-id',
    name: 'web',
    group: 'script',
    options: {},
    inputs: [
      { name: 'ssh_private_key', value: '-----BEGIN KEY-----abcdef' },
      { name: 'api_key', value: 'ak-1234567890' },
      { name: 'keystone_region', value: 'RegionOne' },
      { name: 'db_password', value: 'hunter2-pw' },
    ],
    config: 'echo hi',
  });
  await store.writeNotify('a-id', {
    deploy_stdout: 'connecting with hunter2-pw\n',
    deploy_stderr: 'key ak-1234567890 refused\n',
    deploy_status_code: 0,
    result: { dsn: 'postgres://app:hunter2-pw@db/app' },
    admin_password: 'chosen-by-the-hook',
  });
  const found = await detail('a-id');
  if (!found.ok) throw new Error(found.message);
  const d = found.detail;
  t.same(
    d.inputs.map((i) => i.value),
    [MASK, MASK, 'RegionOne', MASK],
  );
  const text = formatDetail(d) + JSON.stringify(d);
  for (const secret of ['hunter2-pw', 'ak-1234567890', 'BEGIN KEY', 'chosen-by-the-hook'])
    t.notMatch(text, secret, `${secret} is not shown`);
  t.match(d.stdoutTail, /connecting with \[REDACTED\]/);
  t.equal(d.outputs.admin_password, MASK);
});
