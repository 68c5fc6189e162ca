import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type tap from 'tap';
import { StateStore, storeFor, deployLockFile, type DeploymentRecord } from '../../src/state/store.js';
import type { CreationEvent } from '../../src/state/machine.js';
import { captureLog } from '../helpers/log-capture.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';

// Durable records and the upstream-compatible deployed/ files.

function setup(
  t: Parameters<Parameters<typeof tap.test>[0]>[0],
  onTransition?: ConstructorParameters<typeof StateStore>[4],
) {
  const dir = t.testdir();
  const captured = captureLog('debug');
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const store = new StateStore(
    path.join(dir, 'state'),
    path.join(dir, 'deployed'),
    captured.log,
    () => clock,
    onTransition,
  );
  return { dir, store, captured, tick: (ms: number) => (clock += ms) };
}

const fields = { id: 'dep-1', name: 'first', group: 'script', action: 'CREATE' };

t.test('records go pending -> running -> done -> signalled, each durable and logged once', async (t) => {
  const seen: Array<[string | undefined, string]> = [];
  const { store, captured, tick } = setup(t, (r, from) => void seen.push([from, r.state]));
  await store.init();
  t.equal(statSync(store.recordsDir).mode & 0o777, 0o700);
  let r = await store.create(fields);
  t.equal(r.state, 'pending');
  tick(1000);
  r = await store.transition(r, 'hook-started', { hookStarts: 1, startedAt: store.timestamp() });
  r = await store.transition(r, 'hook-finished', {
    exitCode: 0,
    signal: { state: 'pending', transport: 'CFN_SIGNAL', attempts: 0, text: '{}' },
  });
  r = await store.transition(r, 'signal-delivered', {
    signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 },
  });
  t.same(seen, [
    [undefined, 'pending'],
    ['pending', 'running'],
    ['running', 'done'],
    ['done', 'signalled'],
  ]);
  const lines = captured.lines.filter((l) => l.msg === 'deployment state changed');
  t.equal(lines.length, 4, 'one line per transition');
  t.same(
    lines.map((l) => [l.from, l.to]),
    [
      [null, 'pending'],
      ['pending', 'running'],
      ['running', 'done'],
      ['done', 'signalled'],
    ],
  );
  t.same(
    lines.map((l) => [l.event, l.signalEvent]),
    [
      ['seen', undefined],
      ['hook-started', undefined],
      ['hook-finished', 'queued'],
      ['signal-delivered', 'delivered'],
    ],
    'each line names the event, and the signal move that went with it',
  );
  t.ok(
    lines.every((l) => l.deploymentId === 'dep-1' && l.deploymentName === 'first'),
    'id and name on every line',
  );
  const file = store.recordPath('dep-1');
  t.equal(statSync(file).mode & 0o777, 0o600);
  const onDisk = JSON.parse(readFileSync(file, 'utf8')) as DeploymentRecord;
  t.equal(onDisk.state, 'signalled');
  t.equal(onDisk.startedAt, '2026-01-01T00:00:01.000Z');
  t.same(await store.read('dep-1'), onDisk);
  t.equal(readdirSync(store.recordsDir).filter((n) => n.startsWith('.')).length, 0, 'no temp files left');
});

t.test('list() reads every usable record; one that cannot be used is reported, held and left as it is', async (t) => {
  const { store, captured } = setup(t);
  await store.init();
  await store.create(fields);
  await store.create({ ...fields, id: 'dep-2' });
  writeFileSync(store.recordPath('broken'), '{"version": 1, "id": "bro');
  writeFileSync(
    store.recordPath('wrong-id'),
    JSON.stringify({ version: 1, id: 'other', state: 'done', signal: {}, hookStarts: 0, name: 'x', group: 'g' }),
  );
  writeFileSync(path.join(store.recordsDir, '.tmp-file.json'), 'junk');
  writeFileSync(path.join(store.recordsDir, 'notes.txt'), 'junk');
  const readOnly = await store.list(true);
  t.same(readOnly.map((r) => r.id).sort(), ['dep-1', 'dep-2']);
  const warned = captured.lines.filter((l) => l.msg === 'deployment record cannot be used; ignored');
  t.same(warned.map((l) => l.deploymentId).sort(), ['broken', 'wrong-id'], 'a reader warns once per unusable record');
  t.ok(
    warned.every(
      (l) =>
        l.level === 'warn' &&
        l.code === 'ERR_DEPLOYMENT_RECORD' &&
        l.recovery === `os-config-agent deploy --forget ${String(l.deploymentId)}`,
    ),
  );
  const { records, unusable } = await store.listAll();
  t.same(records.map((r) => r.id).sort(), ['dep-1', 'dep-2']);
  t.same(unusable.map((e) => [e.deploymentId, e.code]).sort(), [
    ['broken', 'ERR_DEPLOYMENT_RECORD'],
    ['wrong-id', 'ERR_DEPLOYMENT_RECORD'],
  ]);
  t.match(
    unusable.find((e) => e.deploymentId === 'broken')?.message,
    /the record of deployment broken \(.*broken\.json\) cannot be used: it is not JSON .*held.*deploy --forget broken/,
  );
  t.match(
    unusable.find((e) => e.deploymentId === 'wrong-id')?.problem,
    'its id is "other", not the "wrong-id" of its file name',
  );
  t.ok(
    captured.lines.some((l) => l.msg === 'deployment record cannot be used; deployment held' && l.level === 'error'),
    'the pass logs an error',
  );
  const quiet = captured.lines.length;
  await store.listAll('quiet');
  t.equal(captured.lines.length, quiet, 'the outbox lists quietly');
  t.same(
    readdirSync(store.recordsDir).sort(),
    ['.tmp-file.json', 'broken.json', 'dep-1.json', 'dep-2.json', 'notes.txt', 'wrong-id.json'],
    'nothing moved or deleted',
  );
  await t.rejects(store.read('broken'), { code: 'ERR_DEPLOYMENT_RECORD', name: 'DeploymentRecordError' });
  t.equal(await store.read('never'), undefined);
});

t.test('an event the state machine does not allow is refused before anything is written', async (t) => {
  const seen: string[] = [];
  const { store, captured } = setup(t, (r) => void seen.push(r.state));
  await store.init();
  const r = await store.create(fields);
  const before = readFileSync(store.recordPath('dep-1'), 'utf8');
  await t.rejects(store.transition(r, 'signal-delivered'), {
    code: 'ERR_DEPLOYMENT_TRANSITION',
    name: 'DeploymentTransitionError',
    message:
      'deployment dep-1 cannot take the event signal-delivered in state pending: the state machine has no such transition; the record was not changed',
  });
  await t.rejects(store.transition(r, 'reboot-requested'), {
    code: 'ERR_DEPLOYMENT_TRANSITION',
    from: 'pending',
    event: 'reboot-requested',
  });
  await t.rejects(store.create({ ...fields, id: 'dep-9' }, 'hook-finished' as CreationEvent), {
    code: 'ERR_DEPLOYMENT_TRANSITION',
    message: /dep-9 cannot take the event hook-finished in state \(new\)/,
  });
  t.equal(readFileSync(store.recordPath('dep-1'), 'utf8'), before, 'the record is unchanged');
  t.notOk(readdirSync(store.recordsDir).includes('dep-9.json'), 'no record created');
  t.same(seen, ['pending'], 'no listener call for a refused transition');
  t.equal(captured.lines.filter((l) => l.msg === 'deployment state changed').length, 1);
  const running = await store.transition(r, 'hook-started', { hookStarts: 1 });
  await t.rejects(
    store.transition(running, 'rerun'),
    { code: 'ERR_DEPLOYMENT_TRANSITION' },
    '--rerun never takes a running deployment',
  );
  t.equal(
    (await store.transition(running, 'hook-restarted', { hookStarts: 2 })).hookStarts,
    2,
    'an interrupted hook starts again',
  );
});

t.test('a missing records directory lists as empty', async (t) => {
  const { store } = setup(t);
  t.same(await store.list(), []);
});

t.test('deployed/<id>.json and <id>.notify.json: upstream format, 0600, rewritten whole', async (t) => {
  const { store } = setup(t);
  await store.init();
  t.equal(statSync(store.deployedDir).mode & 0o777, 0o700);
  t.notOk(await store.hasDeployed('dep-1'));
  await store.writeDeployed('dep-1', { id: 'dep-1', name: 'caf\u00e9', inputs: [], config: { a: [1, 2] } });
  t.ok(await store.hasDeployed('dep-1'));
  const text = readFileSync(store.deployedPath('dep-1'), 'utf8');
  t.equal(
    text,
    '{\n  "id": "dep-1",\n  "name": "caf\\u00e9",\n  "inputs": [],\n  "config": {\n    "a": [\n      1,\n      2\n    ]\n  }\n}',
  );
  t.equal(statSync(store.deployedPath('dep-1')).mode & 0o777, 0o600);
  await store.writeNotify('dep-1', { deploy_stdout: 'a much longer first answer', deploy_status_code: 0 });
  await store.writeNotify('dep-1', { deploy_status_code: 1 });
  t.same(
    JSON.parse(readFileSync(store.notifyPath('dep-1'), 'utf8')),
    { deploy_status_code: 1 },
    'no stale tail of the longer file',
  );
  await store.create(fields);
  await store.forget('dep-1');
  t.notOk(await store.hasDeployed('dep-1'));
  t.equal(await store.read('dep-1'), undefined);
  await store.forget('dep-1');
});

t.test('write failures are DeploymentStateErrors naming the file', async (t) => {
  const { dir, store } = setup(t);
  writeFileSync(path.join(dir, 'state'), 'a file where the state directory should be');
  await t.rejects(store.init(), {
    code: 'ERR_DEPLOYMENT_STATE',
    message: /cannot create the directory .*state\/deployments: (ENOTDIR|EEXIST)/,
  });
  await t.rejects(store.create(fields), { code: 'ERR_DEPLOYMENT_STATE' });
  await t.rejects(store.list(), { code: 'ERR_DEPLOYMENT_STATE' });
  await t.rejects(store.read('x'), { code: 'ERR_DEPLOYMENT_STATE' });
  writeFileSync(path.join(dir, 'deployed'), 'file');
  await t.rejects(store.writeDeployed('x', {}), { code: 'ERR_DEPLOYMENT_STATE' });
  await t.rejects(store.writeNotify('x', {}), { code: 'ERR_DEPLOYMENT_STATE' });
});

t.test('storeFor and deployLockFile use the configured directories', async (t) => {
  const root = t.testdir();
  const loaded = await deployConfig(root);
  const store = storeFor(loaded.config, captureLog().log);
  t.equal(store.recordsDir, path.join(root, 'var/lib/os-config-agent/deployments'));
  t.equal(store.deployedDir, path.join(root, 'var/lib/heat-config/deployed'));
  t.equal(deployLockFile(loaded.config), path.join(root, 'var/lib/os-config-agent/deploy.lock'));
});
