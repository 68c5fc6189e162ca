import t from 'tap';
import { moveTo } from '../helpers/state-path.js';
import { formatDeployments } from '../../src/status/format.js';
import { readStatusAll, toStatus } from '../../src/status/status.js';
import { queuedSignal } from '../../src/signals/outbox.js';
import { storeFor } from '../../src/state/store.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';

// What `status` shows: every record, no credentials, no signal bodies.

async function fixture(t: Parameters<Parameters<typeof import('tap').test>[0]>[0]) {
  const root = t.testdir();
  const loaded = await deployConfig(root);
  let clock = Date.parse('2026-02-01T10:00:00Z');
  const store = storeFor(loaded.config, captureLog().log, () => (clock += 1000));
  await store.init();
  const f = (id: string, name: string) => ({ id, name, group: 'script', action: 'CREATE' });
  const a = await store.create(f('a-id', 'alpha'));
  await moveTo(store, a, 'signalled', {
    startedAt: '2026-02-01T10:00:01.000Z',
    endedAt: '2026-02-01T10:00:02.000Z',
    exitCode: 0,
    statusCode: '0',
    failed: false,
    hookStarts: 1,
    hook: '/var/lib/heat-config/hooks/script',
    signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1, sentAt: '2026-02-01T10:00:03.000Z' },
  });
  const b = await store.create(f('b-id', 'beta'));
  const target = {
    transport: 'HEAT_SIGNAL',
    authUrl: 'http://ks/v3',
    userId: 'u',
    password: 'hunter2-secret',
    projectId: 'p',
    stackId: 's/1',
    resourceName: 'r',
  } as const;
  await moveTo(store, b, 'done', {
    exitCode: 2,
    statusCode: '2',
    failed: true,
    lastError: 'deploy_status_code 2',
    signal: {
      ...queuedSignal(target, '{"deploy_stdout": "big body"}'),
      attempts: 3,
      nextAttemptAt: '2026-02-01T11:00:00.000Z',
    },
  });
  await store.create(f('c-id', 'gamma'));
  const d = await store.create({ ...f('d-id', 'delta'), group: 'os-apply-config' });
  await store.transition(d, 'nothing-to-run', {});
  const e = await store.create(f('e-id', 'old'));
  await store.transition(e, 'left-metadata', {
    removedAt: '2026-02-01T12:00:00.000Z',
    stateBeforeRemoval: 'signalled',
    adopted: true,
    signal: { state: 'none', transport: 'NO_SIGNAL', attempts: 0 },
  });
  return { loaded };
}

t.test('readStatusAll lists every record oldest first, without signal targets or bodies', async (t) => {
  const { loaded } = await fixture(t);
  const list = (await readStatusAll(loaded.config, captureLog().log)).deployments;
  t.same(
    list.map((s) => [s.id, s.state]),
    [
      ['a-id', 'signalled'],
      ['b-id', 'done'],
      ['c-id', 'pending'],
      ['d-id', 'skipped'],
      ['e-id', 'removed'],
    ],
  );
  const text = JSON.stringify(list);
  t.notMatch(text, 'hunter2-secret');
  t.notMatch(text, 'big body');
  const beta = list[1]!;
  t.same(beta.signal, {
    state: 'pending',
    transport: 'HEAT_SIGNAL',
    attempts: 3,
    nextAttemptAt: '2026-02-01T11:00:00.000Z',
  });
  t.equal(beta.lastError, 'deploy_status_code 2');
  t.equal(list[0]?.signal.sentAt, '2026-02-01T10:00:03.000Z');
  t.equal(list[4]?.adopted, true);
});

t.test('the table: one line per deployment, times without milliseconds, result and hook exit apart', async (t) => {
  const { loaded } = await fixture(t);
  const table = formatDeployments((await readStatusAll(loaded.config, captureLog().log)).deployments);
  const lines = table.trimEnd().split('\n');
  t.equal(lines.length, 6);
  t.match(lines[0], /^ID\s+NAME\s+GROUP\s+ACTION\s+STATE\s+STARTED\s+ENDED\s+RESULT\s+HOOK EXIT\s+SIGNAL\s+ERROR$/);
  t.match(
    lines[1],
    /^a-id\s+alpha\s+script\s+CREATE\s+signalled\s+2026-02-01T10:00:01Z\s+2026-02-01T10:00:02Z\s+ok\s+0\s+sent CFN_SIGNAL\s+-$/,
  );
  t.match(
    lines[2],
    /^b-id\s+beta\s+.*done\s+-\s+-\s+failed: 2\s+2\s+pending HEAT_SIGNAL \(3 tries, next 2026-02-01T11:00:00Z\)\s+deploy_status_code 2$/,
  );
  t.match(lines[3], /^c-id\s+gamma\s+.*pending\s+-\s+-\s+-\s+-\s+-\s+-$/);
  t.match(lines[5], /removed \(adopted\)\s+-\s+2026-02-01T12:00:00Z\s+\S+\s+\S+\s+none/);
  t.equal(formatDeployments([]), 'no deployments known\n');
});

t.test('toStatus flattens long errors and scrubs credential-shaped text', async (t) => {
  const long = `line one\n${'x'.repeat(200)} https://h/v1/signal/a?Signature=abcdef&x=1`;
  const s = toStatus({
    version: 1,
    id: 'i',
    name: 'n',
    group: 'g',
    action: 'CREATE',
    state: 'done',
    hookStarts: 1,
    firstSeenAt: 'x',
    updatedAt: 'x',
    lastError: long,
    exitCode: null,
    statusCode: '1',
    signal: { state: 'failed', transport: 'CFN_SIGNAL', attempts: 1, lastError: 'e' },
  });
  t.notMatch(s.lastError, 'abcdef');
  const table = formatDeployments([s]);
  t.match(
    table,
    /line one x{200} https:\/\/h\/v1\/signal\/a\?Signature=\[REDACTED\]&x=1\n$/,
    'no width: the whole error',
  );
  t.match(formatDeployments([s], 120), /line one x+…\n$/, 'a terminal 120 wide: cut to fit');
  t.ok(
    formatDeployments([s], 120)
      .split('\n')
      .every((l) => l.length <= 120),
    'every line fits',
  );
  t.match(table, /\s-\s+failed CFN_SIGNAL/, 'no hook exit code: "-", never the status code in its place');
});
