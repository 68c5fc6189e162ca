import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type tap from 'tap';
import { StateStore, storeFor, deployLockFile, type DeploymentRecord } from '../../src/state/store.js';
import {
  BEFORE_RECONVERGE,
  BEFORE_REMOVAL,
  DEPLOYMENT_STATES,
  EVENTS,
  TRANSITION_EVENTS,
  type CreationEvent,
  type DeploymentState,
  type TransitionEvent,
} from '../../src/state/machine.js';
import type { RecordPatch } from '../../src/state/store.js';
import { captureLog } from '../helpers/log-capture.js';
import { moveTo } from '../helpers/state-path.js';
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

const SENT = { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 } as const;
const PENDING = { state: 'pending', transport: 'CFN_SIGNAL', attempts: 0, text: '{}' } as const;

/** What the agent writes with `event` for the signal of `record`: sent, cancelled on removal, dropped by a rerun. */
function patchFor(event: TransitionEvent, record: DeploymentRecord): RecordPatch {
  if (event === 'signal-delivered') return { signal: SENT };
  if (event === 'rerun') return { signal: { state: 'none', transport: record.signal.transport, attempts: 0 } };
  if (event === 'left-metadata' && record.signal.state === 'pending')
    return { signal: { ...record.signal, state: 'cancelled' } };
  return {};
}

/** How a test puts a record in `state`: done with its signal pending, removed from skipped, re-run from signalled. */
function fixturePatch(state: DeploymentState): RecordPatch {
  if (state === 'done') return { signal: PENDING };
  if (state === 'removed') return { stateBeforeRemoval: 'skipped' };
  if (state === 'reconverging') return { reconverge: { runs: 1, from: 'signalled' } };
  return {};
}

t.test(
  "every event from every state: the table's state, written and logged; else refused, nothing written",
  async (t) => {
    const calls: string[] = [];
    const { store, captured } = setup(t, (r, from) => void calls.push(`${from ?? '(new)'}>${r.state}`));
    await store.init();
    for (const [i, state] of DEPLOYMENT_STATES.entries()) {
      for (const [j, event] of TRANSITION_EVENTS.entries()) {
        const id = `r-${i}-${j}`;
        const r = await moveTo(store, await store.create({ ...fields, id }), state, fixturePatch(state));
        const before = readFileSync(store.recordPath(id), 'utf8');
        const seen = calls.length;
        const rule = EVENTS[event];
        const patch = patchFor(event, r);
        // A re-run never starts while the signal of the run is pending: reconverging does not hold a signal.
        const pendingSignalStays = event === 'reconverge-started' && r.signal.state === 'pending';
        if (!rule.from.includes(state) || pendingSignalStays) {
          await t.rejects(
            store.transition(r, event, patch),
            { code: 'ERR_DEPLOYMENT_TRANSITION', deploymentId: id, from: state, event },
            `${state} --${event}--> refused`,
          );
          t.equal(readFileSync(store.recordPath(id), 'utf8'), before, `${state} --${event}: the record is unchanged`);
          t.equal(calls.length, seen, `${state} --${event}: no listener call`);
          continue;
        }
        const to = rule.to === BEFORE_REMOVAL ? 'skipped' : rule.to === BEFORE_RECONVERGE ? 'signalled' : rule.to;
        const next = await store.transition(r, event, patch);
        t.equal(next.state, to, `${state} --${event}--> ${to}`);
        t.equal((await store.read(id))?.state, to, `${state} --${event}: on disk`);
        t.match(captured.lines.at(-1), { msg: 'deployment state changed', event, from: state, to });
        t.equal(calls.at(-1), `${state}>${to}`);
      }
    }
  },
);

t.test('create takes its event: seen is pending, adopted signalled; any other is refused, no record', async (t) => {
  const { store, captured } = setup(t);
  await store.init();
  t.equal((await store.create({ ...fields, id: 'c-seen' }, 'seen')).state, 'pending');
  const adopted = await store.create({ ...fields, id: 'c-adopted' }, 'adopted', { adopted: true });
  t.equal(adopted.state, 'signalled');
  t.match(captured.lines.at(-1), { event: 'adopted', from: null, to: 'signalled' });
  for (const event of TRANSITION_EVENTS.filter((e) => e !== 'seen' && e !== 'adopted')) {
    await t.rejects(store.create({ ...fields, id: 'c-other' }, event as CreationEvent), {
      code: 'ERR_DEPLOYMENT_TRANSITION',
      from: undefined,
      event,
    });
  }
  t.equal(await store.read('c-other'), undefined, 'no record written');
  await t.rejects(store.create({ ...fields, id: 'c-signal' }, 'seen', { signal: PENDING }), {
    code: 'ERR_DEPLOYMENT_TRANSITION',
    signal: { from: 'none', to: 'pending' },
  });
});

t.test('the signal moves only as the event allows; anything else is refused, nothing written', async (t) => {
  const { store, captured } = setup(t);
  await store.init();
  const running = await store.transition(await store.create(fields), 'hook-started', { hookStarts: 1 });
  const before = readFileSync(store.recordPath('dep-1'), 'utf8');
  await t.rejects(store.transition(running, 'hook-finished', { signal: SENT }), {
    code: 'ERR_DEPLOYMENT_TRANSITION',
    event: 'hook-finished',
    signal: { from: 'none', to: 'sent' },
    message: /cannot take the event hook-finished in state running with its signal going from none to sent/,
  });
  await t.rejects(store.transition(running, 'reboot-requested', { signal: PENDING }), {
    code: 'ERR_DEPLOYMENT_TRANSITION',
    signal: { from: 'none', to: 'pending' },
  });
  t.equal(readFileSync(store.recordPath('dep-1'), 'utf8'), before, 'the record is unchanged');
  const done = await store.transition(running, 'hook-finished', { signal: PENDING });
  t.match(captured.lines.at(-1), { event: 'hook-finished', signalEvent: 'queued', signalState: 'pending' });
  await t.rejects(store.transition(done, 'signal-delivered'), {
    signal: { from: 'pending', to: 'pending' },
    message: /signal-delivered in state done with its signal going from pending to pending/,
  });
  await t.rejects(store.transition(done, 'signal-delivered', { signal: { ...SENT, state: 'none' } }), {
    code: 'ERR_DEPLOYMENT_TRANSITION',
    signal: { from: 'pending', to: 'none' },
  });
  await t.rejects(
    store.transition(done, 'left-metadata', { stateBeforeRemoval: 'done' }),
    { code: 'ERR_DEPLOYMENT_TRANSITION', signal: { from: 'pending', to: 'pending' } },
    'a pending signal is never left where the outbox does not send it',
  );
  const removed = await store.transition(done, 'left-metadata', {
    stateBeforeRemoval: 'done',
    signal: { ...PENDING, state: 'cancelled' },
  });
  t.match(captured.lines.at(-1), { event: 'left-metadata', signalEvent: 'cancelled' });
  const back = await store.transition(removed, 'listed-again', { stateBeforeRemoval: undefined });
  t.equal(back.state, 'done', 'back where it left from');
  const again = await store.transition(back, 'rerun', {
    signal: { state: 'none', transport: 'CFN_SIGNAL', attempts: 0 },
  });
  t.match(captured.lines.at(-1), { event: 'rerun', signalEvent: 'reset', from: 'done', to: 'pending' });
  t.equal(again.signal.state, 'none');
});

t.test("moveSignal: the outbox's moves, only while the deployment holds its signal; not a transition", async (t) => {
  const calls: string[] = [];
  const { store, captured } = setup(t, (r) => void calls.push(r.state));
  await store.init();
  const pending = await store.create(fields);
  const done = await store.transition(pending, 'hook-failed-to-run', { signal: PENDING });
  const changes = captured.lines.filter((l) => l.msg === 'deployment state changed').length;
  const seen = calls.length;
  const retried = await store.moveSignal(done, 'attempt-failed', {
    ...done.signal,
    attempts: 1,
    lastError: 'HTTP 503',
  });
  t.match(retried, { state: 'done', signal: { state: 'pending', attempts: 1, lastError: 'HTTP 503', text: '{}' } });
  const failed = await store.moveSignal(
    retried,
    'gave-up',
    { transport: 'CFN_SIGNAL', attempts: 2, lastError: 'HTTP 403' },
    { lastError: 'HTTP 403' },
  );
  t.match(failed, { state: 'done', lastError: 'HTTP 403', signal: { state: 'failed', attempts: 2 } });
  t.equal(failed.signal.text, undefined, 'the signal is replaced as given');
  t.same(await store.read('dep-1'), failed, 'on disk');
  t.equal(captured.lines.filter((l) => l.msg === 'deployment state changed').length, changes, 'no transition line');
  t.equal(calls.length, seen, 'no listener call');
  const before = readFileSync(store.recordPath('dep-1'), 'utf8');
  for (const event of ['delivered', 'cancelled', 'reset', 'queued'] as const)
    await t.rejects(
      store.moveSignal(retried, event, retried.signal),
      {
        code: 'ERR_DEPLOYMENT_TRANSITION',
        from: 'done',
        event,
        signal: { from: 'pending' },
      },
      `${event} goes with a move of the deployment, never alone`,
    );
  await t.rejects(
    store.moveSignal(failed, 'attempt-failed', failed.signal),
    { code: 'ERR_DEPLOYMENT_TRANSITION', event: 'attempt-failed' },
    'not from failed',
  );
  await t.rejects(
    store.moveSignal(pending, 'unsendable', pending.signal),
    {
      message: /cannot take the event unsendable in state pending with its signal none/,
    },
    'only in a state that holds its signal',
  );
  t.equal(readFileSync(store.recordPath('dep-1'), 'utf8'), before, 'nothing written by a refusal');
});

t.test(
  "note: the hook pid while running, the reboot command's time while awaiting the reboot; nothing else",
  async (t) => {
    const calls: string[] = [];
    const { store } = setup(t, (r) => void calls.push(r.state));
    await store.init();
    const pending = await store.create(fields);
    await t.rejects(store.note(pending, { hookPid: 42, hookPidStart: '7' }), {
      code: 'ERR_DEPLOYMENT_TRANSITION',
      from: 'pending',
      event: 'note of hookPid',
    });
    const running = await store.transition(pending, 'hook-started', { hookStarts: 1 });
    const noted = await store.note(running, { hookPid: 42, hookPidStart: '7' });
    t.match(await store.read('dep-1'), { state: 'running', hookPid: 42, hookPidStart: '7' });
    await t.rejects(store.note(noted, { rebootCommandRanAt: store.timestamp() }), {
      code: 'ERR_DEPLOYMENT_TRANSITION',
      event: 'note of rebootCommandRanAt',
    });
    const awaiting = await store.transition(noted, 'reboot-requested', { hookPid: undefined, hookPidStart: undefined });
    t.equal((await store.note(awaiting, { rebootCommandRanAt: 'now' })).rebootCommandRanAt, 'now');
    await t.rejects(
      store.note(awaiting, { state: 'done' } as never),
      { code: 'ERR_DEPLOYMENT_TRANSITION', event: 'note of state' },
      'never a state',
    );
    t.equal((await store.read('dep-1'))?.state, 'awaiting-reboot');
    t.same(calls, ['pending', 'running', 'awaiting-reboot'], 'notes are not transitions');
  },
);
