import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { lockWished, watchWishes, wishFile, wishForLock, withdrawWish } from '../../src/state/lock-wish.js';

// A process waiting for the deploy lock says so; a holder running re-runs sees it and gives the lock up.

/** A live process other than this one (the wish of "another process"). */
function otherProcess(t: Parameters<Parameters<typeof t.test>[1]>[0]): number {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => void child.kill('SIGKILL'));
  return child.pid!;
}

t.test("this process's wish is its own: not another's, and withdrawn once it has the lock", async (t) => {
  const lock = path.join(t.testdir(), 'deploy.lock');
  t.equal(await lockWished(lock), false, 'no wish');
  await wishForLock(lock);
  t.equal(readFileSync(wishFile(lock), 'utf8'), `${process.pid}\n`);
  t.equal(await lockWished(lock), false, "one's own wish holds nothing up");
  await withdrawWish(lock);
  t.notOk(existsSync(wishFile(lock)));
});

t.test("another live process's wish is seen, and left alone by this one; a dead one's is not", async (t) => {
  const lock = path.join(t.testdir(), 'deploy.lock');
  const other = otherProcess(t);
  writeFileSync(wishFile(lock), `${other}\n`);
  t.equal(await lockWished(lock), true);
  await withdrawWish(lock);
  t.ok(existsSync(wishFile(lock)), "another process's wish stays");
  writeFileSync(wishFile(lock), '999999999\n');
  t.equal(await lockWished(lock), false, 'a process that is gone waits for nothing');
  writeFileSync(wishFile(lock), 'not a pid\n');
  t.equal(await lockWished(lock), false, 'nor does a damaged file');
});

t.test('a holder watching is told once when another process starts to wait', async (t) => {
  const lock = path.join(t.testdir(), 'deploy.lock');
  const other = otherProcess(t);
  let told = 0;
  const seen = new Promise<void>((resolve) => {
    const stop = watchWishes(lock, () => {
      told++;
      resolve();
    });
    t.teardown(stop);
  });
  writeFileSync(path.join(path.dirname(lock), 'deploy.lock.other'), 'x', { flag: 'w' });
  writeFileSync(wishFile(lock), `${other}\n`);
  writeFileSync(wishFile(lock), `${other}\n`);
  await Promise.race([seen, new Promise((_, reject) => setTimeout(() => reject(new Error('not told')), 10_000))]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(told, 1, 'once');
});
