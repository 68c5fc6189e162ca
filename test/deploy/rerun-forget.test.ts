import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { DeployLockedError, DeploymentBusyError, UnknownDeploymentError } from '../../src/state/errors.js';
import { forgetDeployment, rerunDeployment, runDeployments } from '../../src/deploy/dispatch.js';
import { deployLockFile, storeFor, type DeploymentRecord } from '../../src/state/store.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { startSignalSink } from '../helpers/signal-sink.js';
import { holdFlock } from '../helpers/flock-holder.js';

// `deploy --rerun` and `deploy --forget` on the runner: real hooks, a real signal server, real state on disk.

async function setup(t: TapTest) {
  const root = t.testdir();
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  installHooks(root, { fake: {} });
  const h = await deployHarness(root);
  const store = storeFor(h.loaded.config, h.captured.log);
  const counter = path.join(root, 'runs.txt');
  const dep = (id: string, config: Record<string, unknown> = {}) =>
    deployment({
      id,
      name: `res-${id}`,
      config: { counter, ...config },
      signal: sink.inputs('CFN_SIGNAL', id, `res-${id}`),
    });
  return {
    root,
    sink,
    h,
    store,
    dep,
    runs: () => counterLines(existsSync(counter) ? readFileSync(counter, 'utf8') : ''),
    record: async (id: string) => (await store.read(id)) as DeploymentRecord,
  };
}

t.test('--rerun: runs a finished deployment again and signals again, counted and kept in the history', async (t) => {
  const s = await setup(t);
  const a = s.dep('a', { exit: 3 });
  const b = s.dep('b');
  await runDeployments(s.h.ctx([a, b]));
  t.equal(s.sink.countFor('a'), 1);
  const before = await s.record('a');
  t.equal(before.failed, true);

  const fixed = s.dep('a');
  const report = await rerunDeployment(s.h.ctx([fixed, b]), 'a');
  t.equal(report.failed, false);
  t.same(s.runs(), ['a CREATE', 'b CREATE', 'a CREATE'], 'only a ran again');
  t.equal(s.sink.countFor('a'), 2, 'signalled again');
  t.equal(s.sink.countFor('b'), 1);
  const after = await s.record('a');
  t.equal(after.state, 'signalled');
  t.equal(after.failed, false);
  t.equal(after.reruns, 1);
  t.equal(after.rerunHistory?.length, 1);
  t.match(after.rerunHistory?.[0], { fromState: 'signalled', exitCode: 3, statusCode: '3', signal: 'sent' });
  t.equal(after.firstSeenAt, before.firstSeenAt, 'still the same deployment');
  const line = s.h.captured.lines.find(
    (l) =>
      l.msg === 'deployment state changed' && l.deploymentId === 'a' && l.to === 'pending' && l.from === 'signalled',
  );
  t.match(line, { reason: 'deploy --rerun', reruns: 1 }, 'the rerun is logged');

  // A normal pass afterwards runs nothing.
  await runDeployments(s.h.ctx([fixed, b]));
  t.equal(s.runs().length, 3);
  await rerunDeployment(s.h.ctx([fixed, b]), 'a');
  t.equal((await s.record('a')).reruns, 2);
  t.equal(s.sink.countFor('a'), 3);
});

t.test('--rerun refusals: unknown id, not in the metadata, running, bad id; nothing changed', async (t) => {
  const s = await setup(t);
  const a = s.dep('a');
  await runDeployments(s.h.ctx([a]));
  const before = readFileSync(s.store.recordPath('a'), 'utf8');
  await t.rejects(rerunDeployment(s.h.ctx([a]), 'nope'), UnknownDeploymentError, 'unknown id');
  await t.rejects(rerunDeployment(s.h.ctx([a]), 'nope'), /no deployment nope is known here/);
  await t.rejects(rerunDeployment(s.h.ctx([]), 'a'), /is not in the current metadata/, 'gone from the metadata');
  await t.rejects(rerunDeployment(s.h.ctx([a]), '../etc/passwd'), UnknownDeploymentError);
  const running = { ...(await s.record('a')), state: 'running' as const, hookPid: 4242 };
  // The record as another process running its hook has it (no event of this process leads there).
  writeFileSync(s.store.recordPath('a'), JSON.stringify(running));
  await t.rejects(rerunDeployment(s.h.ctx([a]), 'a'), DeploymentBusyError);
  await t.rejects(forgetDeployment(s.h.ctx([a]), 'a'), /is running now \(process 4242\)/);
  writeFileSync(s.store.recordPath('a'), JSON.stringify({ ...running, state: 'signalled' }));
  t.equal(s.runs().length, 1, 'no hook run by a refusal');
  t.equal(s.sink.countFor('a'), 1);
  t.equal(JSON.parse(readFileSync(s.store.recordPath('a'), 'utf8')).state, JSON.parse(before).state);
});

t.test('--rerun and --forget wait for the lock of another process, then refuse', async (t) => {
  const s = await setup(t);
  const a = s.dep('a');
  await runDeployments(s.h.ctx([a]));
  const holder = await holdFlock(deployLockFile(s.h.loaded.config));
  t.teardown(() => holder.kill());
  await t.rejects(rerunDeployment(s.h.ctx([a]), 'a', 600), DeployLockedError);
  await t.rejects(forgetDeployment(s.h.ctx([a]), 'a', 0), DeployLockedError);
  t.ok(s.h.captured.lines.some((l) => l.msg === 'waiting for the deployment pass of another process'));
  t.equal(s.runs().length, 1);
  // Released while waiting: the rerun goes ahead.
  const waiting = rerunDeployment(s.h.ctx([a]), 'a', 30_000);
  setTimeout(() => void holder.kill(), 300);
  await waiting;
  t.equal(s.runs().length, 2);
});

t.test(
  'the wait for the lock is timed on the monotonic clock: a wall clock stepped a year ahead does not end it',
  async (t) => {
    const s = await setup(t);
    const a = s.dep('a');
    await runDeployments(s.h.ctx([a]));
    const holder = await holdFlock(deployLockFile(s.h.loaded.config));
    t.teardown(() => holder.kill());
    // The wall clock the deployment code is given steps a year ahead after its first reading.
    let readings = 0;
    const now = () => Date.now() + (readings++ > 0 ? 365 * 86_400_000 : 0);
    const waiting = rerunDeployment({ ...s.h.ctx([a]), now }, 'a', 30_000);
    setTimeout(() => void holder.kill(), 500);
    await waiting;
    t.equal(s.runs().length, 2, 'the re-run went ahead once the lock was free');
  },
);

t.test('--forget: record, deployed and notify files go; the next pass runs the deployment as new', async (t) => {
  const s = await setup(t);
  const a = s.dep('a');
  await runDeployments(s.h.ctx([a]));
  t.ok(existsSync(s.store.deployedPath('a')) && existsSync(s.store.notifyPath('a')));
  const forgotten = await forgetDeployment(s.h.ctx(undefined), 'a');
  t.equal(forgotten?.state, 'signalled');
  for (const f of [s.store.recordPath('a'), s.store.deployedPath('a'), s.store.notifyPath('a')])
    t.notOk(existsSync(f), `${path.basename(f)} removed`);
  t.ok(
    s.h.captured.lines.some(
      (l) =>
        l.msg === 'deployment forgotten: the next pass runs it as new if the metadata lists it' &&
        l.deploymentId === 'a',
    ),
  );
  await t.rejects(forgetDeployment(s.h.ctx(undefined), 'a'), UnknownDeploymentError, 'forgotten twice: unknown');
  await runDeployments(s.h.ctx([a]));
  t.same(s.runs(), ['a CREATE', 'a CREATE']);
  t.equal(s.sink.countFor('a'), 2);
  const again = await s.record('a');
  t.equal(again.reruns, undefined, 'a new record');

  // Only an upstream deployed file (an earlier agent's): forgetting it lets the deployment run here.
  const b = s.dep('b');
  writeFileSync(s.store.deployedPath('b'), '{}');
  await runDeployments(s.h.ctx([a, b]));
  t.equal((await s.record('b')).adopted, true);
  await forgetDeployment(s.h.ctx(undefined), 'b');
  await runDeployments(s.h.ctx([a, b]));
  t.equal(s.sink.countFor('b'), 1, 'run and signalled after the forget');
});
