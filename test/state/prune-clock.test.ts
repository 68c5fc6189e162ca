import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { pruneState } from '../../src/state/prune.js';
import { storeFor, type DeploymentRecord } from '../../src/state/store.js';
import { WallDeadlines } from '../../src/util/wall-deadlines.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { captureLog } from '../helpers/log-capture.js';

// The grace period before a removed deployment's state is pruned, under clock steps: measured on the monotonic clock
// once a process has seen it, so a step forward does not prune at once (a deployment listed again after a metadata
// blip would then run again as new), and a step back does not keep the state for a year.

const DAY = 86_400_000;
const YEAR = 365 * DAY;

async function setup(t: TapTest, removedAt: number) {
  const loaded = await deployConfig(t.testdir());
  const log = captureLog().log;
  const store = storeFor(loaded.config, log, () => removedAt);
  await store.init();
  const record = await store.transition(
    await store.create({ id: 'gone', name: 'gone', group: 'script', action: 'CREATE' }),
    'left-metadata',
    { removedAt: new Date(removedAt).toISOString(), stateBeforeRemoval: 'signalled' },
  );
  let mono = 0;
  const deadlines = new WallDeadlines(() => mono);
  const prune = (now: number, records: DeploymentRecord[] = [record]) =>
    pruneState({ store, records, current: new Set(), pruneAfterDays: 3, now, log, deadlines });
  return { store, prune, advance: (ms: number) => (mono += ms) };
}

t.test(
  'clock stepped forward a year during the grace period: pruned only when the grace has really passed',
  async (t) => {
    const removed = Date.parse('2026-05-01T00:00:00Z');
    const { store, prune, advance } = await setup(t, removed);
    t.same(await prune(removed + DAY), [], 'a day after removal: kept');
    advance(60_000);
    t.same(await prune(removed + YEAR), [], 'the clock jumps a year ahead: still kept');
    t.ok(await store.read('gone'));
    advance(2 * DAY);
    t.same(await prune(removed + YEAR + 2 * DAY), ['gone'], 'three days after removal by the monotonic clock: pruned');
  },
);

t.test('removal recorded while the clock was a year ahead, then stepped back: pruned after the grace', async (t) => {
  const now = Date.parse('2026-05-01T00:00:00Z');
  const { store, prune, advance } = await setup(t, now + YEAR);
  mkdirSync(store.deployedDir, { recursive: true });
  const ghost = `${store.deployedDir}/ghost.json`;
  writeFileSync(ghost, '{}');
  utimesSync(ghost, new Date(now + YEAR), new Date(now + YEAR));
  t.same(await prune(now), [], 'first seen: the whole grace is left');
  advance(3 * DAY - 1);
  t.same(await prune(now + 3 * DAY - 1), [], 'just before the grace ends: kept');
  advance(1);
  t.same((await prune(now + 3 * DAY)).sort(), ['ghost', 'gone'], 'the grace is over: pruned, not a year later');
  t.notOk(existsSync(ghost));
});

t.test('a removal already older than the grace when first seen is pruned at once', async (t) => {
  const removed = Date.parse('2026-05-01T00:00:00Z');
  const { prune } = await setup(t, removed);
  t.same(await prune(removed + 4 * DAY), ['gone']);
});
