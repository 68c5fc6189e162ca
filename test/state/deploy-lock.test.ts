import { spawn } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { withDeployLock } from '../../src/state/deploy-lock.js';
import { bootId, processStartTicks } from '../../src/util/process-identity.js';
import { holdFlock } from '../helpers/flock-holder.js';

// One deployment runner per state directory: queued within a process, refused across processes while the other
// holds it, and never blocked by what a dead holder left in the file.

t.test('callers in one process run one after another; the file names the holder while held', async (t) => {
  const file = path.join(t.testdir(), 'state', 'deploy.lock');
  const order: string[] = [];
  const job = (name: string, ms: number) =>
    withDeployLock(file, async () => {
      order.push(`${name}:start`);
      t.equal(readFileSync(file, 'utf8'), `${process.pid} ${processStartTicks(process.pid)} ${bootId()}\n`);
      await new Promise((r) => setTimeout(r, ms));
      order.push(`${name}:end`);
      return name;
    });
  const results = await Promise.all([job('a', 50), job('b', 10), job('c', 0)]);
  t.same(results, ['a', 'b', 'c']);
  t.same(order, ['a:start', 'a:end', 'b:start', 'b:end', 'c:start', 'c:end']);
  t.equal(readFileSync(file, 'utf8'), '', 'released: emptied, left in place');
});

t.test('a failing caller releases the lock', async (t) => {
  const file = path.join(t.testdir(), 'deploy.lock');
  await t.rejects(
    withDeployLock(file, async () => Promise.reject(new Error('boom'))),
    /boom/,
  );
  t.equal(await withDeployLock(file, async () => 7), 7);
});

t.test('another process holding the lock is refused with ERR_LOCKED, named', async (t) => {
  const file = path.join(t.testdir(), 'deploy.lock');
  writeFileSync(file, '');
  const holder = await holdFlock(file, { named: true });
  t.teardown(() => holder.kill());
  await t.rejects(
    withDeployLock(file, async () => 1),
    { code: 'ERR_LOCKED', holderPid: holder.pid, message: new RegExp(`process ${holder.pid}`) },
  );
  await holder.kill();
  t.equal(await withDeployLock(file, async () => 'after the holder was killed'), 'after the holder was killed');
});

t.test('a pid left by a dead holder and since reused by a live process does not block anyone', async (t) => {
  const file = path.join(t.testdir(), 'deploy.lock');
  const reused = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => void reused.kill('SIGKILL'));
  // What an agent killed by a power cut or the OOM killer left, read after the pid went to another process.
  writeFileSync(file, `${reused.pid}\n`);
  t.equal(await withDeployLock(file, async () => 'taken'), 'taken');
  writeFileSync(file, `${reused.pid} ${processStartTicks(reused.pid!)} ${bootId()}\n`);
  t.equal(await withDeployLock(file, async () => 'taken again'), 'taken again', 'even one naming a live process');
});

t.test('a lock directory that cannot be created, or a link at the lock path, is a state error', async (t) => {
  const dir = t.testdir({ blocker: 'file', victim: 'precious\n' });
  await t.rejects(
    withDeployLock(path.join(dir, 'blocker', 'deploy.lock'), async () => 1),
    { code: 'ERR_DEPLOYMENT_STATE' },
  );
  symlinkSync(path.join(dir, 'victim'), path.join(dir, 'deploy.lock'));
  await t.rejects(
    withDeployLock(path.join(dir, 'deploy.lock'), async () => 1),
    { code: 'ERR_DEPLOYMENT_STATE', message: /symbolic link/ },
  );
  t.equal(readFileSync(path.join(dir, 'victim'), 'utf8'), 'precious\n', 'the file the link names is untouched');
});
