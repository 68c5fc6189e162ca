import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { pruneState } from '../../src/state/prune.js';
import { storeFor, type DeploymentRecord } from '../../src/state/store.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';

// Bounded state: removed records and unknown deployed/ files go after prune_after days, nothing else does.

const DAY = 86_400_000;

t.test('removed records older than prune_after go with their upstream files; the rest stay', async (t) => {
  const root = t.testdir();
  const loaded = await deployConfig(root);
  const captured = captureLog();
  const start = Date.parse('2026-05-01T00:00:00Z');
  let clock = start;
  const store = storeFor(loaded.config, captured.log, () => clock);
  await store.init();
  const fields = (id: string) => ({ id, name: `n-${id}`, group: 'script', action: 'CREATE' });
  const old = await store.transition(await store.create(fields('old')), 'left-metadata', {
    removedAt: new Date(start).toISOString(),
    stateBeforeRemoval: 'signalled',
  });
  await store.writeDeployed('old', { id: 'old' });
  await store.writeNotify('old', {});
  const recent = await store.transition(await store.create(fields('recent')), 'left-metadata', {
    removedAt: new Date(start + 5 * DAY).toISOString(),
  });
  const undated = await store.transition(await store.create(fields('undated')), 'left-metadata', {});
  const live = await store.create(fields('live'));
  const back = await store.transition(await store.create(fields('back')), 'left-metadata', {
    removedAt: new Date(start).toISOString(),
  });
  mkdirSync(store.deployedDir, { recursive: true });
  for (const name of ['ghost.json', 'ghost.notify.json', 'fresh-ghost.json', 'live.json', 'README', '.hidden.json'])
    writeFileSync(`${store.deployedDir}/${name}`, '{}');
  for (const name of ['ghost.json', 'ghost.notify.json', 'live.json', 'README', '.hidden.json'])
    utimesSync(`${store.deployedDir}/${name}`, new Date(start), new Date(start));
  clock = start + 7 * DAY;
  const records: DeploymentRecord[] = [old, recent, undated, live, back];
  const pruned = await pruneState({
    store,
    records,
    current: new Set(['live', 'back']),
    pruneAfterDays: 3,
    now: clock,
    log: captured.log,
  });
  t.same(pruned.sort(), ['ghost', 'old']);
  t.equal(await store.read('old'), undefined);
  t.notOk(existsSync(store.deployedPath('old')) || existsSync(store.notifyPath('old')));
  t.ok(await store.read('recent'), 'removed 2 days ago: kept');
  t.ok(await store.read('undated'), 'no removal time: kept');
  t.ok(await store.read('back'), 'listed again: kept');
  t.notOk(existsSync(`${store.deployedDir}/ghost.json`) || existsSync(`${store.deployedDir}/ghost.notify.json`));
  for (const name of ['fresh-ghost.json', 'live.json', 'README', '.hidden.json'])
    t.ok(existsSync(`${store.deployedDir}/${name}`), `${name} kept`);
  t.ok(captured.lines.some((l) => l.msg === 'deployment state pruned' && l.deploymentId === 'old'));
});

t.test('prune_after 0 prunes at once; a missing deployed directory is fine', async (t) => {
  const root = t.testdir();
  const loaded = await deployConfig(root);
  const store = storeFor(loaded.config, captureLog().log);
  await store.init();
  const r = await store.create({ id: 'x', name: 'x', group: 'g', action: 'CREATE' });
  const removed = await store.transition(r, 'left-metadata', { removedAt: store.timestamp() });
  t.same(
    await pruneState({
      store,
      records: [removed],
      current: new Set(),
      pruneAfterDays: 0,
      now: Date.now() + 1,
      log: captureLog().log,
    }),
    ['x'],
  );
});

t.test('an unreadable deployed directory is a state error', async (t) => {
  const root = t.testdir({ var: { lib: { 'heat-config': { deployed: 'a file' } } } });
  const loaded = await deployConfig(root);
  const store = storeFor(loaded.config, captureLog().log);
  await t.rejects(
    pruneState({ store, records: [], current: new Set(), pruneAfterDays: 1, now: Date.now(), log: captureLog().log }),
    { code: 'ERR_DEPLOYMENT_STATE' },
  );
});
