import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { lockWished, watchWishes, wishFile, wishForLock, withdrawWish } from '../../src/state/lock-wish.js';
import { currentIdentity, formatIdentity, processStartTicks } from '../../src/util/process-identity.js';

// A process waiting for the deploy lock says so; a holder running re-runs sees it and gives the lock up.

type Test = { teardown(fn: () => void): void };

/** The identity line of a live process other than this one (the wish of "another process"). */
function otherProcess(tt: Test): string {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  tt.teardown(() => void child.kill('SIGKILL'));
  const pid = child.pid!;
  return `${formatIdentity({ pid, startTicks: processStartTicks(pid)!, bootId: currentIdentity().bootId! })}\n`;
}

t.test("this process's wish is its own: not another's, and withdrawn once it has the lock", async (t) => {
  const lock = path.join(t.testdir(), 'deploy.lock');
  t.equal(await lockWished(lock), false, 'no wish');
  await wishForLock(lock);
  t.equal(readFileSync(wishFile(lock), 'utf8'), `${formatIdentity(currentIdentity())}\n`);
  t.equal(await lockWished(lock), false, "one's own wish holds nothing up");
  await withdrawWish(lock);
  t.notOk(existsSync(wishFile(lock)));
});

t.test("another live process's wish is seen, and left alone by this one; a dead one's is not", async (t) => {
  const lock = path.join(t.testdir(), 'deploy.lock');
  const other = otherProcess(t);
  writeFileSync(wishFile(lock), other);
  t.equal(await lockWished(lock), true);
  await withdrawWish(lock);
  t.ok(existsSync(wishFile(lock)), "another process's wish stays");
  writeFileSync(wishFile(lock), '999999999 1\n');
  t.equal(await lockWished(lock), false, 'a process that is gone waits for nothing');
  const [pid, ticks, boot] = other.trim().split(' ');
  writeFileSync(wishFile(lock), `${pid} ${Number(ticks) + 1} ${boot}\n`);
  t.equal(await lockWished(lock), false, 'nor does its pid, now naming another process');
  writeFileSync(wishFile(lock), `${pid}\n`);
  t.equal(await lockWished(lock), false, 'a bare pid names nobody');
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
  writeFileSync(wishFile(lock), other);
  writeFileSync(wishFile(lock), other);
  await Promise.race([seen, new Promise((_, reject) => setTimeout(() => reject(new Error('not told')), 10_000))]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(told, 1, 'once');
});
