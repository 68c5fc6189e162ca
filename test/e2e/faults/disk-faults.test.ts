import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { REPO } from '../../helpers/bundle.js';
import { startOrchestrator, type Orchestrator } from '../../helpers/orchestrator/orchestrator.js';
import {
  cachedDeploymentIds,
  counterEvents,
  countingHook,
  errorLines,
  invalidJsonFiles,
  killTree,
  prepareRoot,
  readRecords,
  startDaemon,
  stopDaemon,
  until,
  type Daemon,
} from '../../helpers/fault-daemon.js';

// The filesystem under the agent's state fails while the daemon runs: /var/lib (metadata cache, deployment state,
// deployed/ records) fills up, then turns read-only. The daemon logs a clear error, stays up, runs and commits
// nothing, keeps the last good cache, and converges once space or write access returns; the deployment published
// during the fault runs exactly once. A real small tmpfs is used when this process may mount one (root); otherwise
// ENOSPC is injected into the agent's file opens with a preload module, and the read-only case is skipped.

const CONFD = '[agent]\nhttp_retries = 0\n[deploy]\nsignal_timeout = 2\nsignal_max_backoff = 0.5\n';

function canMount(dir: string): string | undefined {
  if (process.getuid?.() !== 0) return 'not running as root: cannot mount a small tmpfs';
  const probe = path.join(dir, 'probe');
  mkdirSync(probe, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    return `mount -t tmpfs is not permitted here (${String((err as { stderr?: Buffer }).stderr ?? err).trim()})`;
  }
}

/** Fill a filesystem to the last byte with one file. */
function fill(file: string): void {
  const fd = openSync(file, 'w');
  try {
    for (const size of [65536, 4096, 512, 1]) {
      const chunk = Buffer.alloc(size, 120);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch {
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

interface Setup {
  o: Orchestrator;
  root: string;
  counter: string;
  d: Daemon;
}

async function converged(
  t: Test,
  dir: string,
  setupMount: (root: string) => void,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<Setup> {
  const o = await startOrchestrator({ transport: 'POLL_SERVER_CFN' });
  t.teardown(() => o.close());
  const first = o.addDeployment({ name: 'first', group: 'fast', config: {} });
  setupMount(path.join(dir, 'root'));
  const root = prepareRoot(dir, o, { hooks: { fast: countingHook(0) }, confd: CONFD });
  const counter = path.join(dir, 'runs.txt');
  const d = startDaemon(root, { env: { COUNTER_FILE: counter, ...env }, nodeArgs });
  t.teardown(async () => {
    if (d.alive()) await killTree(d);
  });
  await until('first signal', () => o.signals.some((s) => s.deploymentId === first));
  await until('first cycle committed', () => cachedDeploymentIds(root, 'cfn.json.last')?.includes(first) === true);
  return { o, root, counter, d };
}

// Which write meets the fault first depends on what the filesystem has freed since it filled (a rename over an old
// file releases its blocks): the cache write ('cache write failed; nothing run or committed') or a later step of the
// cycle ('pipeline failed; new data not committed'). Either way the operator must read that nothing was committed.
const NOT_COMMITTED = /nothing (run or )?committed|new data not committed/;

/** While the fault holds: a new deployment is published; three polls later nothing of it is run or committed. */
async function duringFault(t: Test, s: Setup, name: string, errno: RegExp): Promise<string> {
  const before = s.d.lines.length;
  const goodLast = readFileSync(path.join(s.root, 'var/lib/os-collect-config/cfn.json.last'), 'utf8');
  const id = s.o.addDeployment({ name, group: 'fast', config: {} });
  const polls = s.o.requests.cfn ?? 0;
  await until('three polls during the fault', () => (s.o.requests.cfn ?? 0) >= polls + 3);
  t.ok(s.d.alive(), 'daemon alive');
  const errors = s.d.lines.slice(before).filter((l) => errorLines(s.d).includes(l));
  t.ok(errors.length > 0, 'the failure is logged at error level');
  t.ok(
    errors.some((l) => errno.test(JSON.stringify(l))),
    'naming the system error',
  );
  t.ok(
    errors.some((l) => NOT_COMMITTED.test(String(l.msg))),
    'saying that nothing was committed',
  );
  if (!errors.some((l) => NOT_COMMITTED.test(String(l.msg)))) t.comment(JSON.stringify(errors));
  t.notOk(
    counterEvents(s.counter).some((e) => e.id === id),
    'the new deployment did not run',
  );
  t.notOk(readRecords(s.root).has(id), 'no record of it was created');
  t.notOk(
    s.o.signals.some((x) => x.deploymentId === id),
    'nothing signalled for it',
  );
  t.equal(
    readFileSync(path.join(s.root, 'var/lib/os-collect-config/cfn.json.last'), 'utf8'),
    goodLast,
    'committed metadata unchanged',
  );
  t.same(invalidJsonFiles(path.join(s.root, 'var')), [], 'every JSON file still parses');
  return id;
}

async function recovered(t: Test, s: Setup, id: string): Promise<void> {
  await until('the deployment signalled after recovery', () => s.o.signals.some((x) => x.deploymentId === id), 20_000);
  await until('recovery committed', () => cachedDeploymentIds(s.root, 'cfn.json.last')?.includes(id) === true);
  const polls = s.o.requests.cfn ?? 0;
  await until('two more polls', () => (s.o.requests.cfn ?? 0) >= polls + 2);
  t.equal(s.o.signals.filter((x) => x.deploymentId === id).length, 1, 'signalled exactly once');
  t.equal(
    counterEvents(s.counter).filter((e) => e.id === id && e.event === 'start').length,
    1,
    'its hook ran exactly once',
  );
  t.ok(s.d.alive(), 'daemon alive');
}

const probeDir = mkdtempSync(path.join(os.tmpdir(), 'oca-mount-probe-'));
const mountProblem = canMount(probeDir);
rmSync(probeDir, { recursive: true, force: true });

t.test('full disk and read-only state on a small tmpfs', { skip: mountProblem }, async (t) => {
  // Outside tap's fixture directory, whose removal would meet the mount point: this test removes it itself.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oca-disk-'));
  const mnt = path.join(dir, 'root/var/lib');
  let mounted = false;
  const started: { setup?: Setup } = {};
  t.teardown(async () => {
    if (started.setup?.d.alive()) await killTree(started.setup.d);
    if (mounted) execFileSync('umount', ['-l', mnt], { stdio: 'pipe' });
    rmSync(dir, { recursive: true, force: true });
  });
  const s = await converged(t, dir, () => {
    mkdirSync(mnt, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0755', 'tmpfs', mnt], { stdio: 'pipe' });
    mounted = true;
  });
  started.setup = s;

  await t.test('full disk', async (t) => {
    const filler = path.join(mnt, 'filler');
    fill(filler);
    const id = await duringFault(t, s, 'during-full-disk', /ENOSPC/);
    rmSync(filler);
    await recovered(t, s, id);
  });

  await t.test('read-only state directory', async (t) => {
    execFileSync('mount', ['-o', 'remount,ro', mnt], { stdio: 'pipe' });
    let ro = true;
    t.teardown(() => {
      if (ro) execFileSync('mount', ['-o', 'remount,rw', mnt], { stdio: 'pipe' });
    });
    const id = await duringFault(t, s, 'during-read-only', /EROFS/);
    execFileSync('mount', ['-o', 'remount,rw', mnt], { stdio: 'pipe' });
    ro = false;
    await recovered(t, s, id);
  });

  t.same(await stopDaemon(s.d), { code: 0, signal: null }, 'SIGTERM exits 0');
});

t.test('full disk injected (ENOSPC on every write under /var/lib)', async (t) => {
  const dir = t.testdir();
  const flag = path.join(dir, 'disk-full');
  const s = await converged(
    t,
    dir,
    () => undefined,
    { OCA_ENOSPC_FLAG: flag, OCA_ENOSPC_DIR: path.join(dir, 'root/var/lib') },
    [`--import=${path.join(REPO, 'test/helpers/enospc-preload.mjs')}`],
  );
  writeFileSync(flag, '');
  const id = await duringFault(t, s, 'during-injected-enospc', /ENOSPC/);
  rmSync(flag);
  t.notOk(existsSync(flag));
  await recovered(t, s, id);
  t.same(await stopDaemon(s.d), { code: 0, signal: null }, 'SIGTERM exits 0');
});

t.test('full disk under deployed/ only (injected): a hook never started is not counted as interrupted', async (t) => {
  const dir = t.testdir();
  const flag = path.join(dir, 'disk-full');
  const s = await converged(
    t,
    dir,
    () => undefined,
    { OCA_ENOSPC_FLAG: flag, OCA_ENOSPC_DIR: path.join(dir, 'root/var/lib/heat-config/deployed') },
    [`--import=${path.join(REPO, 'test/helpers/enospc-preload.mjs')}`],
  );
  writeFileSync(flag, '');
  const before = s.d.lines.length;
  const id = s.o.addDeployment({ name: 'deployed-dir-full', group: 'fast', config: {} });
  const polls = s.o.requests.cfn ?? 0;
  await until('four polls during the fault', () => (s.o.requests.cfn ?? 0) >= polls + 4);
  t.ok(s.d.alive(), 'daemon alive');
  t.match(
    JSON.stringify(s.d.lines.slice(before).filter((l) => errorLines(s.d).includes(l))[0]),
    /ENOSPC/,
    'the failure is logged with its system error',
  );
  t.notOk(
    counterEvents(s.counter).some((e) => e.id === id),
    'the hook did not run',
  );
  t.notOk(
    s.o.signals.some((x) => x.deploymentId === id),
    'nothing signalled',
  );
  rmSync(flag);
  await until('signalled after recovery', () => s.o.signals.some((x) => x.deploymentId === id), 20_000);
  const signal = s.o.signals.find((x) => x.deploymentId === id)!;
  t.equal(
    Number(signal.body.deploy_status_code),
    0,
    'the deployment ran and succeeded (not failed as "interrupted too often")',
  );
  t.equal(
    counterEvents(s.counter).filter((e) => e.id === id && e.event === 'start').length,
    1,
    'its hook ran exactly once',
  );
  t.same(await stopDaemon(s.d), { code: 0, signal: null }, 'SIGTERM exits 0');
});
