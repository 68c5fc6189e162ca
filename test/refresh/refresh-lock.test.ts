import { spawn } from 'node:child_process';
import { chownSync, linkSync, lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { LOCKED_EXIT_CODE, RefreshLockedError } from '../../src/refresh/refresh-errors.js';
import { acquireRefreshLock } from '../../src/refresh/refresh-lock.js';

t.test('lock, contend, release, relock; file created and left empty', async (t) => {
  const dir = t.testdir({});
  const file = path.join(dir, 'sub', 'os-refresh-config.lock');
  const lock = await acquireRefreshLock(file);
  t.equal(statSync(file).size, 0, 'created (with its directory) and empty');
  const err = await acquireRefreshLock(file).catch((e: unknown) => e);
  t.ok(err instanceof RefreshLockedError, 'a second holder in this process is refused too (flock is per open file)');
  t.equal((err as RefreshLockedError).exitCode, LOCKED_EXIT_CODE);
  t.equal((err as RefreshLockedError).code, 'ERR_LOCKED');
  await lock.release();
  await lock.release();
  const again = await acquireRefreshLock(file);
  await again.release();
  t.equal(readFileSync(file, 'utf8'), '');
});

t.test('excludes, and is excluded by, another process holding flock on the file', async (t) => {
  const dir = t.testdir({});
  const file = path.join(dir, 'lock');
  // flock(1) holding the lock, as upstream's fcntl.flock would.
  const holder = spawn('flock', ['--nonblock', file, 'sh', '-c', 'echo held; exec sleep 30'], {
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  });
  await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
  await t.rejects(acquireRefreshLock(file), { code: 'ERR_LOCKED', exitCode: 11 });
  const exited = new Promise((r) => holder.once('exit', r));
  process.kill(-holder.pid!, 'SIGKILL');
  await exited;
  // The killed sleep also held the lock descriptor; give the kernel a moment to drop it (bounded).
  let lock: Awaited<ReturnType<typeof acquireRefreshLock>> | undefined;
  for (let i = 0; i < 100 && !lock; i++) {
    lock = await acquireRefreshLock(file).catch(async () => {
      await new Promise((r) => setTimeout(r, 20));
      return undefined;
    });
  }
  if (!lock) throw new Error('the lock was never released by the killed holder');
  const other = spawn('flock', ['--nonblock', '--conflict-exit-code', '11', file, 'true']);
  const code = await new Promise((r) => other.once('close', r));
  t.equal(code, 11, 'another flock user sees our lock');
  await lock.release();
});

t.test('an unusable path is reported as ERR_LOCKED with exit code 1', async (t) => {
  const dir = t.testdir({ file: 'x' });
  await t.rejects(acquireRefreshLock(path.join(dir, 'file', 'lock')), {
    code: 'ERR_LOCKED',
    exitCode: 1,
    message: /cannot use the lock file .*its directory cannot be created/,
  });
});

t.test('a symbolic link at the lock path is refused, and the file it names is not truncated', async (t) => {
  const dir = t.testdir({ 'important.conf': 'keep me\n' });
  const victim = path.join(dir, 'important.conf');
  const file = path.join(dir, 'os-refresh-config.lock');
  symlinkSync(victim, file);
  await t.rejects(acquireRefreshLock(file), { code: 'ERR_LOCKED', exitCode: 1, message: /symbolic link/ });
  t.equal(readFileSync(victim, 'utf8'), 'keep me\n');
  t.ok(lstatSync(file).isSymbolicLink(), 'the link is left for the operator to look at');
});

t.test('a hard link to another file, or a file another user owns, is not used (nor truncated)', async (t) => {
  const dir = t.testdir({ 'important.conf': 'keep me\n' });
  const file = path.join(dir, 'lock');
  linkSync(path.join(dir, 'important.conf'), file);
  await t.rejects(acquireRefreshLock(file), { code: 'ERR_LOCKED', exitCode: 1, message: /hard links/ });
  t.equal(readFileSync(path.join(dir, 'important.conf'), 'utf8'), 'keep me\n');
  if (process.getuid?.() !== 0) return;
  const owned = path.join(dir, 'owned.lock');
  writeFileSync(owned, 'theirs\n');
  chownSync(owned, 65534, 65534);
  await t.rejects(acquireRefreshLock(owned), { code: 'ERR_LOCKED', message: /owned by user 65534/ });
  t.equal(readFileSync(owned, 'utf8'), 'theirs\n');
});
