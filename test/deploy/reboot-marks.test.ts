import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { deploymentsAwaitBoot } from '../../src/deploy/reboot.js';
import { REBOOT_MARKS_DIR } from '../../src/state/reboot-marks.js';
import { storeFor, type StateStore } from '../../src/state/store.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { captureLog } from '../helpers/log-capture.js';

// The agent's start asks whether a deployment awaits this boot at every run: with the reboot marks it reads only the
// records they name (src/state/reboot-marks.ts), not every record; a state directory from before them is read in
// full once, and the marks are made from that reading.

const BOOT = '22222222-2222-4222-8222-222222222222';

async function instance(t: TapTest) {
  const root = t.testdir();
  const bootFile = path.join(root, 'proc/sys/kernel/random/boot_id');
  mkdirSync(path.dirname(bootFile), { recursive: true });
  writeFileSync(bootFile, `${BOOT}\n`);
  const loaded = await deployConfig(root);
  const captured = captureLog('debug');
  const store = storeFor(loaded.config, captured.log);
  await store.init();
  const marks = path.join(loaded.config.agent.state_dir, REBOOT_MARKS_DIR);
  const marked = () => (existsSync(marks) ? readdirSync(marks).sort() : undefined);
  return { loaded, log: captured.log, store, marks, marked };
}

/** A record of `id` moved to awaiting-reboot, asked in another boot. */
async function awaitingReboot(store: StateStore, id: string) {
  const pending = await store.create({ id, name: id, group: 'script', action: 'CREATE' });
  const running = await store.transition(pending, 'hook-started');
  return store.transition(running, 'reboot-requested', { bootId: '11111111-1111-4111-8111-111111111111' });
}

t.test('a state directory without marks is read in full once, and the marks are made from it', async (t) => {
  const { loaded, log, store, marked } = await instance(t);
  await awaitingReboot(store, 'a');
  await store.create({ id: 'b', name: 'b', group: 'script', action: 'CREATE' });
  t.equal(marked(), undefined, 'no marks while the folder was never made: no record is marked');
  t.equal(await deploymentsAwaitBoot(loaded, log), true, 'the record was found by reading every record');
  t.same(marked(), ['a'], 'the marks name the record awaiting a reboot');
});

t.test('with the marks, only the marked records are read', async (t) => {
  const { loaded, log, store, marks, marked } = await instance(t);
  t.equal(await deploymentsAwaitBoot(loaded, log), false, 'nothing awaits a reboot');
  t.same(marked(), [], 'the (empty) marks are made');
  await awaitingReboot(store, 'a');
  t.same(marked(), ['a'], 'a record entering awaiting-reboot is marked');
  t.equal(await deploymentsAwaitBoot(loaded, log), true, 'the marked record is found');
  rmSync(path.join(marks, 'a'));
  t.equal(
    await deploymentsAwaitBoot(loaded, log),
    false,
    'a record without a mark is not read: the start reads the marked records only',
  );
});

t.test('a record leaving awaiting-reboot, or forgotten, is unmarked; a stale mark is harmless', async (t) => {
  const { loaded, log, store, marks, marked } = await instance(t);
  await deploymentsAwaitBoot(loaded, log);
  const a = await awaitingReboot(store, 'a');
  await awaitingReboot(store, 'b');
  t.same(marked(), ['a', 'b']);
  await store.transition(a, 'rerun-after-reboot');
  t.same(marked(), ['b'], 'rerun-after-reboot: unmarked after the record was written');
  const batch = store.batch();
  const b = await store.read('b');
  await batch.transition(b!, 'reboot-failed', {});
  t.same(marked(), ['b'], 'a batched move changes nothing before its commit');
  await batch.commit();
  t.same(marked(), [], 'the batch unmarks at its commit');
  await awaitingReboot(store, 'c');
  await store.forget('c');
  t.same(marked(), [], 'a forgotten record is unmarked');
  writeFileSync(path.join(marks, 'gone'), '');
  t.equal(await deploymentsAwaitBoot(loaded, log), false, 'a mark without its record finds nothing');
});
