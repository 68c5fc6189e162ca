import { execFileSync } from 'node:child_process';
import fs, { existsSync, mkdirSync, mkdtempSync, promises as fsp, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { runDeployments } from '../../src/deploy/dispatch.js';
import { storeFor } from '../../src/state/store.js';
import { verdictOfDeployment } from '../../src/status/report.js';
import { toStatus } from '../../src/status/status.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';

// A disk that fills while a deployment runs: the write of its result fails with ENOSPC (as test/helpers/
// enospc-preload.mjs does for the daemon, here in this process: fs.promises.open and fs.openSync are what the atomic
// writes call, and only files opened for writing that name the result's notify file fail). The record keeps the cause, status says
// the deployment stopped on a full disk rather than "is running", and once space returns the next pass completes it.

t.test('ENOSPC during a deployment is recorded as its cause; status says so; the next pass completes it', async (t) => {
  const root = t.testdir();
  installHooks(root, { fake: {} });
  const h = await deployHarness(root);
  const store = storeFor(h.loaded.config, h.captured.log);
  const counter = path.join(root, 'runs.txt');
  const d = deployment({ id: 'full', config: { counter } });

  const open = fsp.open.bind(fsp);
  const openSync = fs.openSync.bind(fs);
  let full = true;
  const fullDisk = (file: fs.PathLike, flags?: fs.OpenMode) => {
    const writing = typeof flags === 'string' && /[wa+]/.test(flags);
    if (!full || !writing || !String(file).includes('full.notify.json')) return undefined;
    return Object.assign(new Error(`ENOSPC: no space left on device, open '${String(file)}'`), {
      code: 'ENOSPC',
      errno: -28,
      syscall: 'open',
      path: String(file),
    });
  };
  fsp.open = ((file: string, flags?: string | number, mode?: number) => {
    const err = fullDisk(file, flags);
    return err ? Promise.reject(err) : open(file, flags, mode);
  }) as typeof fsp.open;
  fs.openSync = ((file: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode | null) => {
    const err = fullDisk(file, flags);
    if (err) throw err;
    return openSync(file, flags ?? 'r', mode);
  }) as typeof fs.openSync;
  t.teardown(() => {
    fsp.open = open;
    fs.openSync = openSync;
  });

  await t.rejects(runDeployments(h.ctx([d])), { code: 'ERR_DEPLOYMENT_STATE' }, 'the pass fails on the full disk');
  const stopped = await store.read('full');
  t.equal(stopped?.state, 'running');
  t.match(stopped?.lastError, /no space left on device/, 'the cause is on the record');
  const verdict = verdictOfDeployment(toStatus(stopped!), { running: true });
  t.match(verdict.reasons.join('\n'), /stopped: no space left on device/);
  t.notMatch(verdict.reasons.join('\n'), /is running/, 'status does not say it is running');
  t.ok(
    h.captured.lines.some((l) => l.msg === 'deployment stopped: disk full'),
    'the log says why',
  );

  full = false;
  await runDeployments(h.ctx([d]));
  const done = await store.read('full');
  t.equal(done?.state, 'done', 'completed once space returned');
  t.equal(done?.lastError, undefined, 'the cause goes with the result');
  t.ok(existsSync(store.notifyPath('full')));
  t.ok(counterLines(readFileSync(counter, 'utf8')).length >= 1);
});

// The same on a real full filesystem: a 1 MiB tmpfs the test mounts over the state directories and fills. Needs root
// (mount); skipped with the reason otherwise.
const notRoot = process.getuid?.() !== 0 ? 'mounting a tmpfs needs root' : false;
t.test('a real full disk (a small tmpfs): nothing lost, nothing run twice', { skip: notRoot }, async (t) => {
  // Not t.testdir(): tap removes that before the teardown below has unmounted the tmpfs.
  const root = mkdtempSync(path.join(tmpdir(), 'oca-full-disk-'));
  const lib = path.join(root, 'var/lib');
  mkdirSync(lib, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0755', 'oca-full-disk', lib]);
  t.teardown(() => {
    execFileSync('umount', ['-l', lib]);
    rmSync(root, { recursive: true, force: true });
  });
  installHooks(root, { fake: {} });
  const h = await deployHarness(root);
  const store = storeFor(h.loaded.config, h.captured.log);
  const counter = path.join(root, 'runs.txt');
  const d = deployment({ id: 'tmpfs', config: { counter } });
  const filler = path.join(lib, 'filler');
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=4k'], { stdio: 'ignore' });
  } catch {
    // dd ends with "No space left on device": the filesystem is full.
  }

  await t.rejects(runDeployments(h.ctx([d])), 'the pass fails while the disk is full');
  const during = await store.read('tmpfs').catch(() => undefined);
  t.not(during?.state, 'done', 'no result stored on a full disk');

  rmSync(filler);
  await runDeployments(h.ctx([d]));
  t.equal((await store.read('tmpfs'))?.state, 'done', 'completed once space returned');
  t.ok(existsSync(store.notifyPath('tmpfs')));
  const runs = existsSync(counter) ? counterLines(readFileSync(counter, 'utf8')) : [];
  t.ok(
    runs.length >= 1 && runs.length <= (during?.state === 'running' ? 2 : 1),
    'run once (again only if it had started)',
  );
});
