import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { LockFileError, LockHeldError, lockFile, withFileLock } from '../../src/util/file-lock.js';
import { holdFlock } from '../helpers/flock-holder.js';

// The one lock of the agent: flock(2) on a descriptor opened without following links. Its users (deployments,
// queued signals, os-refresh-config, the daemon) have their own tests; these are the cases common to them.

t.test('held by another process: refused; its line names it only when that process runs', async (t) => {
  const file = path.join(t.testdir(), 'x.lock');
  writeFileSync(file, '');
  const named = await holdFlock(file, { named: true });
  t.teardown(() => named.kill());
  const first = await lockFile(file).catch((e: unknown) => e);
  t.ok(first instanceof LockHeldError);
  t.equal((first as LockHeldError).holder?.pid, named.pid);
  await named.kill();
  writeFileSync(file, `${named.pid} 1\n`);
  const unnamed = await holdFlock(file);
  t.teardown(() => unnamed.kill());
  const second = await lockFile(file).catch((e: unknown) => e);
  t.ok(second instanceof LockHeldError);
  t.equal((second as LockHeldError).holder, undefined, 'a line naming a dead process names nobody');
  t.match(second, { code: 'ERR_LOCKED', message: /locked by another process/ });
});

t.test(
  'new files and directories get the modes asked for; two descriptors of one process exclude each other',
  async (t) => {
    const file = path.join(t.testdir(), 'a', 'b', 'x.lock');
    const lock = await lockFile(file, { fileMode: 0o640, dirMode: 0o750 });
    t.equal(statSync(file).mode & 0o777, 0o640);
    t.equal(statSync(path.dirname(file)).mode & 0o777, 0o750);
    await t.rejects(lockFile(file), LockHeldError, 'two descriptors of one process exclude each other');
    await lock.release();
    await lock.release();
    t.equal(await withFileLock(file, async () => 'free again'), 'free again');
  },
);

t.test('not a regular file: a directory, a FIFO', async (t) => {
  const dir = t.testdir();
  mkdirSync(path.join(dir, 'd.lock'));
  await t.rejects(lockFile(path.join(dir, 'd.lock')), LockFileError);
  execFileSync('mkfifo', [path.join(dir, 'f.lock')]);
  await t.rejects(lockFile(path.join(dir, 'f.lock')), { code: 'ERR_LOCKED', message: /not a regular file/ });
});

t.test('recordOwner false leaves the file empty while held', async (t) => {
  const file = path.join(t.testdir(), 'x.lock');
  writeFileSync(file, 'old text');
  const lock = await lockFile(file, { recordOwner: false });
  t.equal(readFileSync(file, 'utf8'), '');
  await lock.release();
});
