import path from 'node:path';
import t from 'tap';
import { checkDeploymentRecord } from '../../src/state/record.js';
import { canReconverge, reconvergeDueAt } from '../../src/state/reconverge-record.js';
import { StateStore, type DeploymentRecord } from '../../src/state/store.js';
import { captureLog } from '../helpers/log-capture.js';
import { moveTo } from '../helpers/state-path.js';

// What a record keeps of its re-runs on a reconverge interval, when one may start, and when the next is due.

const base: DeploymentRecord = {
  version: 1,
  id: 'd-1',
  name: 'web',
  group: 'puppet',
  action: 'CREATE',
  state: 'signalled',
  hookStarts: 1,
  firstSeenAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:05:00.000Z',
  endedAt: '2026-01-01T00:01:00.000Z',
  exitCode: 0,
  failed: false,
  signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 },
};

t.test('a re-run starts only from a finished, successful run whose signal no longer waits', async (t) => {
  t.ok(canReconverge(base), 'signalled');
  t.ok(canReconverge({ ...base, state: 'done', signal: { ...base.signal, state: 'failed' } }), 'done, signal gave up');
  t.ok(canReconverge({ ...base, state: 'done', signal: { state: 'none', transport: 'NO_SIGNAL', attempts: 0 } }));
  t.ok(canReconverge({ ...base, adopted: true, failed: undefined, endedAt: undefined }), 'adopted');
  t.notOk(canReconverge({ ...base, state: 'done', signal: { ...base.signal, state: 'pending' } }), 'signal pending');
  t.notOk(canReconverge({ ...base, failed: true }), 'its run failed: Heat has the failure');
  t.notOk(canReconverge({ ...base, action: 'DELETE' }), 'a deletion is not repeated');
  t.notOk(canReconverge({ ...base, action: 'SUSPEND' }), 'nor a suspension');
  t.ok(canReconverge({ ...base, action: 'UPDATE' }));
  for (const state of [
    'pending',
    'running',
    'awaiting-reboot',
    'applied',
    'skipped',
    'removed',
    'reconverging',
  ] as const)
    t.notOk(canReconverge({ ...base, state }), `not from ${state}`);
});

t.test('the next re-run is due an interval after the last one ended, else after the run ended', async (t) => {
  const now = Date.parse('2026-06-01T00:00:00.000Z');
  t.equal(reconvergeDueAt(base, 60, now), Date.parse('2026-01-01T00:02:00.000Z'), 'after the run');
  const rerun = {
    ...base,
    reconverge: { runs: 2, startedAt: '2026-01-02T00:00:00.000Z', endedAt: '2026-01-02T00:10:00.000Z' },
  };
  t.equal(reconvergeDueAt(rerun, 60, now), Date.parse('2026-01-02T00:11:00.000Z'), 'after the last re-run ended');
  const adopted = { ...base, endedAt: undefined };
  t.equal(reconvergeDueAt(adopted, 1.5, now), Date.parse('2026-01-01T00:05:01.500Z'), 'adopted: after adoption');
  t.equal(reconvergeDueAt({ ...base, endedAt: 'garbage' }, 10, now), now + 10_000, 'an unreadable time: from now');
});

t.test('the re-run fields are checked on read, naming the field and never a value', async (t) => {
  const record = {
    ...base,
    reconverge: {
      runs: 3,
      endedAt: '2026-01-02T00:00:00.000Z',
      last: { outcome: 'changed', startedAt: 'a', endedAt: 'b', exitCode: 0, statusCode: '0', changes: 2 },
    },
  };
  t.ok(checkDeploymentRecord(JSON.stringify(record), 'd-1').ok, 'a whole one');
  const cases: Array<[unknown, string]> = [
    ['yes', 'field reconverge should be an object, not a string'],
    [{ runs: -1 }, 'field reconverge.runs should be a count, not the number -1'],
    [{ runs: 1, from: 'elsewhere' }, 'field reconverge.from should be a deployment state, not a string'],
    [
      { runs: 1, last: { outcome: 'drifted', startedAt: 'a', endedAt: 'b' } },
      'field reconverge.last.outcome should be converged, changed, failed, not a string',
    ],
    [{ runs: 1, last: { outcome: 'failed', startedAt: 'a' } }, 'field reconverge.last.endedAt is missing'],
    [
      { runs: 1, last: { outcome: 'failed', startedAt: 'a', endedAt: 'b', reason: 7 } },
      'field reconverge.last.reason should be a string, not the number 7',
    ],
  ];
  for (const [reconverge, problem] of cases)
    t.same(checkDeploymentRecord(JSON.stringify({ ...base, reconverge }), 'd-1'), { ok: false, problem });
});

t.test("a re-run's hook pid is noted while reconverging, as a run's while running", async (t) => {
  const dir = t.testdir();
  const store = new StateStore(path.join(dir, 'state'), path.join(dir, 'deployed'), captureLog().log);
  await store.init();
  const created = await store.create({ id: 'd-1', name: 'web', group: 'puppet', action: 'CREATE' });
  const done = await moveTo(store, created, 'done');
  await t.rejects(store.note(done, { hookPid: 42, hookPidStart: '7' }), { code: 'ERR_DEPLOYMENT_TRANSITION' });
  const rerunning = await store.transition(done, 'reconverge-started', { reconverge: { runs: 1, from: 'done' } });
  const noted = await store.note(rerunning, { hookPid: 42, hookPidStart: '7' });
  t.match(await store.read('d-1'), { state: 'reconverging', hookPid: 42 });
  await t.rejects(store.note(noted, { rebootCommandRanAt: 'now' }), { code: 'ERR_DEPLOYMENT_TRANSITION' });
  const back = await store.transition(noted, 'reconverge-finished', { reconverge: { runs: 1 } });
  t.equal(back.state, 'done', 'back where it started');
});

t.test('a re-run never moves the signal: a write that would queue one is refused, nothing written', async (t) => {
  const dir = t.testdir();
  const store = new StateStore(path.join(dir, 'state'), path.join(dir, 'deployed'), captureLog().log);
  await store.init();
  const created = await store.create({ id: 'd-1', name: 'web', group: 'puppet', action: 'CREATE' });
  const signalled = await moveTo(store, created, 'signalled');
  const pending = { state: 'pending' as const, transport: 'CFN_SIGNAL' as const, attempts: 0, text: '{}' };
  await t.rejects(store.transition(signalled, 'reconverge-started', { signal: pending }), {
    code: 'ERR_DEPLOYMENT_TRANSITION',
    event: 'reconverge-started',
  });
  const rerunning = await store.transition(signalled, 'reconverge-started', {
    reconverge: { runs: 1, from: 'signalled' },
  });
  for (const signal of [pending, { ...signalled.signal, state: 'failed' as const }])
    await t.rejects(store.transition(rerunning, 'reconverge-finished', { signal }), {
      code: 'ERR_DEPLOYMENT_TRANSITION',
    });
  t.equal((await store.read('d-1'))?.state, 'reconverging', 'the record is as it was');
  const back = await store.transition(rerunning, 'reconverge-finished');
  t.match(back, { state: 'signalled', signal: { state: 'sent' } });
});
