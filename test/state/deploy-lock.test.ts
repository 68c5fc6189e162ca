import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { withDeployLock } from '../../src/state/deploy-lock.js';

// One deployment runner per state directory: queued within a process, refused across processes, taken over from
// dead ones.

t.test('callers in one process run one after another', async (t) => {
  const file = path.join(t.testdir(), 'state', 'deploy.lock');
  const order: string[] = [];
  const job = (name: string, ms: number) =>
    withDeployLock(file, async () => {
      order.push(`${name}:start`);
      t.equal(readFileSync(file, 'utf8').trim(), String(process.pid), 'the lock file holds our pid');
      await new Promise((r) => setTimeout(r, ms));
      order.push(`${name}:end`);
      return name;
    });
  const results = await Promise.all([job('a', 50), job('b', 10), job('c', 0)]);
  t.same(results, ['a', 'b', 'c']);
  t.same(order, ['a:start', 'a:end', 'b:start', 'b:end', 'c:start', 'c:end']);
  t.notOk(existsSync(file), 'released');
});

t.test('a failing caller releases the lock', async (t) => {
  const file = path.join(t.testdir(), 'deploy.lock');
  await t.rejects(
    withDeployLock(file, async () => Promise.reject(new Error('boom'))),
    /boom/,
  );
  t.notOk(existsSync(file));
  t.equal(await withDeployLock(file, async () => 7), 7);
});

t.test('a live process holding the lock is refused with ERR_LOCKED', async (t) => {
  const file = path.join(t.testdir(), 'deploy.lock');
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => void child.kill('SIGKILL'));
  writeFileSync(file, `${child.pid}\n`);
  await t.rejects(
    withDeployLock(file, async () => 1),
    { code: 'ERR_LOCKED', holderPid: child.pid, message: new RegExp(`process ${child.pid}`) },
  );
  t.ok(existsSync(file), 'the other process keeps its lock');
});

t.test('a lock left by a dead process, or unreadable, is taken over', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'deploy.lock');
  const child = spawn('true');
  await new Promise((r) => child.on('exit', r));
  writeFileSync(file, `${child.pid}\n`);
  t.equal(await withDeployLock(file, async () => 'took over'), 'took over');
  writeFileSync(file, 'garbage');
  t.equal(await withDeployLock(file, async () => 'again'), 'again');
  writeFileSync(file, `${process.pid}\n`);
  t.equal(await withDeployLock(file, async () => 'own pid from an earlier life'), 'own pid from an earlier life');
});

t.test('a lock directory that cannot be created is a state error', async (t) => {
  const dir = t.testdir({ blocker: 'file' });
  await t.rejects(
    withDeployLock(path.join(dir, 'blocker', 'deploy.lock'), async () => 1),
    { code: 'ERR_DEPLOYMENT_STATE' },
  );
});
