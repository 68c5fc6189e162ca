import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { StateStore, type DeploymentRecord } from '../../src/state/store.js';
import { writeFilesAtomic } from '../../src/util/atomic-write.js';
import { captureLog } from '../helpers/log-capture.js';

// Moves made durable together: checked at once, written at commit (the last record of each deployment), then logged
// and announced in order.

function setup(dir: string) {
  const captured = captureLog('debug');
  const announced: Array<[string, string | undefined, string]> = [];
  const store = new StateStore(
    path.join(dir, 'state'),
    path.join(dir, 'deployed'),
    captured.log,
    () => Date.parse('2026-01-01T00:00:00Z'),
    (record, from) => void announced.push([record.id, from, record.state]),
  );
  return { store, captured, announced };
}

const fields = (id: string) => ({ id, name: id, group: 'os-apply-config', action: 'CREATE' });

t.test(
  'nothing is written or logged before commit; then the last record of each, and every move in order',
  async (t) => {
    const { store, captured, announced } = setup(t.testdir());
    await store.init();
    const batch = store.batch();
    const a = await batch.create(fields('a'), 'seen');
    const applied = await batch.transition(a, 'applied-by-cycle');
    const b = await batch.create(fields('b'), 'seen');
    await batch.transition(b, 'nothing-to-run');
    t.equal(applied.state, 'applied', 'the state comes from the event, as the store gives it');
    t.equal(batch.size, 4);
    t.same(readdirSync(store.recordsDir), [], 'no record on disk before commit');
    t.same(announced, [], 'no listener call before commit');
    t.notOk(
      captured.lines.some((l) => l.msg === 'deployment state changed'),
      'no transition logged before commit',
    );
    await batch.commit();
    t.equal(batch.size, 0, 'the batch is empty after commit');
    const onDisk = (id: string) => (JSON.parse(readFileSync(store.recordPath(id), 'utf8')) as DeploymentRecord).state;
    t.equal(onDisk('a'), 'applied');
    t.equal(onDisk('b'), 'skipped');
    t.same(readdirSync(store.recordsDir).sort(), ['a.json', 'b.json'], 'no temp file left');
    t.same(announced, [
      ['a', undefined, 'pending'],
      ['a', 'pending', 'applied'],
      ['b', undefined, 'pending'],
      ['b', 'pending', 'skipped'],
    ]);
    t.same(
      captured.lines.filter((l) => l.msg === 'deployment state changed').map((l) => [l.deploymentId, l.event]),
      [
        ['a', 'seen'],
        ['a', 'applied-by-cycle'],
        ['b', 'seen'],
        ['b', 'nothing-to-run'],
      ],
    );
  },
);

t.test('a move the state machine refuses throws at once and joins nothing', async (t) => {
  const { store } = setup(t.testdir());
  await store.init();
  const batch = store.batch();
  const a = await batch.create(fields('a'), 'seen');
  await t.rejects(batch.transition(a, 'signal-delivered'), { code: 'ERR_DEPLOYMENT_TRANSITION' });
  t.equal(batch.size, 1, 'only the allowed move waits');
  await batch.commit();
  t.equal((await store.read('a'))?.state, 'pending');
});

t.test('writeFilesAtomic: a file that cannot be staged leaves every target as it was and no temp file', async (t) => {
  const dir = t.testdir();
  const keep = path.join(dir, 'keep.json');
  writeFileSync(keep, 'old');
  const files = [
    { target: keep, data: 'new' },
    { target: path.join(dir, 'missing', 'x.json'), data: 'x' },
  ];
  await t.rejects(writeFilesAtomic(files), { code: 'ENOENT' });
  t.equal(readFileSync(keep, 'utf8'), 'old', 'the other target is unchanged');
  t.same(readdirSync(dir).sort(), ['keep.json'], 'no temp file left');
  mkdirSync(path.join(dir, 'missing'));
  await writeFilesAtomic(files);
  t.equal(readFileSync(keep, 'utf8'), 'new');
  t.ok(existsSync(path.join(dir, 'missing', 'x.json')));
});
