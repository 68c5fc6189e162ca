import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { depsFor } from '../../../src/deploy/context.js';
import { runDeployments } from '../../../src/deploy/dispatch.js';
import { verdictOfRerun } from '../../../src/deploy/reconverge/outcome.js';
import { reconvergePass } from '../../../src/deploy/reconverge/pass.js';
import { wishFile } from '../../../src/state/lock-wish.js';
import { deployLockFile, storeFor, type DeploymentRecord } from '../../../src/state/store.js';
import { currentIdentity, formatIdentity, processStartTicks } from '../../../src/util/process-identity.js';
import { counterLines, deployHarness, deployment, installHooks } from '../../helpers/deploy-fixtures.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { startSignalSink } from '../../helpers/signal-sink.js';

// The re-runs of finished deployments on the runner (src/deploy/reconverge/): the fake hook (test/fixtures/hooks/fake),
// a real signal server on loopback, real state on disk, and the test's own clock moved past the intervals.

async function setup(t: TapTest) {
  const root = t.testdir();
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  installHooks(root, { fake: {} });
  const h = await deployHarness(root);
  let clock = Date.now();
  const counter = path.join(root, 'runs.txt');
  const dep = (id: string, options: Record<string, unknown>, config: Record<string, unknown> = {}) =>
    deployment({
      id,
      name: `res-${id}`,
      config: { counter, ...config },
      options,
      signal: sink.inputs('CFN_SIGNAL', id, `res-${id}`),
    });
  const store = storeFor(h.loaded.config, h.captured.log, () => clock);
  const ctxOf = (deps: unknown[]) => h.ctx(deps, { now: () => clock });
  return {
    root,
    sink,
    h,
    dep,
    store,
    ctxOf,
    advance: (ms: number) => (clock += ms),
    runs: () => counterLines(existsSync(counter) ? readFileSync(counter, 'utf8') : ''),
    record: async (id: string) => (await store.read(id)) as DeploymentRecord,
    pass: (deps: unknown[], stop = new AbortController().signal) => reconvergePass(depsFor(ctxOf(deps)), stop),
  };
}

/** The identity line of another live process (a `sleep` the test ends). */
function otherProcess(t: TapTest): string {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => void child.kill('SIGKILL'));
  const pid = child.pid!;
  return `${formatIdentity({ pid, startTicks: processStartTicks(pid)!, bootId: currentIdentity().bootId! })}\n`;
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

t.test('candidates: only finished deployments with an interval that has passed, the next due said', async (t) => {
  const s = await setup(t);
  const deps = [
    s.dep('fast', { reconverge_interval: 60 }),
    s.dep('slow', { reconverge_interval: 600 }),
    s.dep('off', {}),
    s.dep('broken', { reconverge_interval: 60 }, { exit: 3 }),
  ];
  await runDeployments(s.ctxOf(deps));
  t.equal(s.runs().length, 4);
  const early = await s.pass(deps);
  t.same(early, { ran: 0, yielded: false, nextDueAt: Date.parse((await s.record('fast')).endedAt!) + 60_000 });
  t.equal(s.runs().length, 4, 'nothing is due yet');
  s.advance(61_000);
  const report = await s.pass(deps);
  t.equal(report.ran, 1);
  t.same(s.runs().slice(4), ['fast CREATE'], 'only the due one; a failed first run and one without interval never');
  t.equal(report.nextDueAt, Date.parse((await s.record('fast')).reconverge!.endedAt!) + 60_000, 'the next one due');
  t.equal(s.sink.attempts.length, 4, 'no signal from a re-run');
  s.advance(600_000);
  await s.pass(deps);
  t.same(s.runs().slice(5).sort(), ['fast CREATE', 'slow CREATE']);
  t.equal((await s.record('off')).reconverge, undefined);
  t.equal((await s.record('broken')).reconverge, undefined);
});

t.test('outcome: converged, changed (with the count the hook gave), failed as Heat would judge it', async (t) => {
  const s = await setup(t);
  const deps = [
    s.dep('calm', { reconverge_interval: 60 }),
    s.dep('drift', { reconverge_interval: '60' }, { stdout: { deploy_stdout: 'fixed', deploy_changed: 2 } }),
  ];
  await runDeployments(s.ctxOf(deps));
  s.advance(61_000);
  await s.pass(deps);
  t.match((await s.record('calm')).reconverge, { runs: 1, last: { outcome: 'converged', exitCode: 0 } });
  t.match((await s.record('drift')).reconverge, { runs: 1, last: { outcome: 'changed', changes: 2 } });
  t.equal((await s.record('drift')).state, 'signalled', 'back where it started');
  const out = JSON.parse(readFileSync(s.store.reconvergePath('drift'), 'utf8')) as Record<string, unknown>;
  t.match(out, { id: 'drift', outcome: 'changed', stdout: 'fixed' }, 'the output kept for status <id>');

  t.match(verdictOfRerun({ deploy_status_code: 0, deploy_changed: true }, []), { outcome: 'changed' });
  t.match(verdictOfRerun({ deploy_status_code: 0, deploy_changed: 0 }, []), { outcome: 'converged', changes: 0 });
  t.match(verdictOfRerun({ deploy_status_code: 0, deploy_changed: 'nonsense' }, []), { outcome: 'converged' });
  t.match(verdictOfRerun({ deploy_status_code: 4, deploy_changed: true, deploy_stderr: 'boom\nlast words\n' }, []), {
    outcome: 'failed',
    statusCode: '4',
    reason: /last words/,
  });
  t.match(
    verdictOfRerun({ deploy_status_code: 0, err: 'bad' }, [{ name: 'err', error_output: true }]),
    { outcome: 'failed' },
    'an error output fails it, as Heat would',
  );
});

t.test('a re-run a dead agent left is ended as failed, never signalled, and not started again at once', async (t) => {
  const s = await setup(t);
  const deps = [s.dep('a', { reconverge_interval: 60 })];
  await runDeployments(s.ctxOf(deps));
  const done = await s.record('a');
  // What a crash mid re-run leaves: the record reconverging, with the hook it started.
  const orphan = spawn('sleep', ['60'], { stdio: 'ignore', detached: true });
  t.teardown(() => void orphan.kill('SIGKILL'));
  const left = await s.store.transition(done, 'reconverge-started', {
    reconverge: { runs: 1, from: 'signalled', startedAt: s.store.timestamp() },
  });
  await s.store.note(left, { hookPid: orphan.pid!, hookPidStart: processStartTicks(orphan.pid!)! });
  s.advance(61_000);
  const report = await s.pass(deps);
  const after = await s.record('a');
  t.equal(after.state, 'signalled', 'back where it started, not taken for a first run');
  t.match(after.reconverge, { runs: 1, last: { outcome: 'failed', exitCode: null, reason: /^interrupted/ } });
  t.equal(report.ran, 0, 'not re-run in the same pass: an interval after it was found');
  t.equal(s.runs().length, 1);
  await until('the orphan hook is ended', () => orphan.exitCode !== null || orphan.signalCode !== null);
  t.equal(s.sink.attempts.length, 1, 'no signal');
  t.ok(s.h.captured.lines.some((l) => l.msg === 'deployment re-run interrupted'));
});

t.test('a cycle with new data, and an operator waiting for the lock, stop the re-run in progress', async (t) => {
  const s = await setup(t);
  const deps = [s.dep('slow', { reconverge_interval: 60 }, { sleepMs: 30_000 })];
  // The first run takes as long: run it on a clock that does not matter, with a short hook timeout override avoided by
  // letting it finish from a different config first.
  const quick = [s.dep('slow', { reconverge_interval: 60 })];
  await runDeployments(s.ctxOf(quick));
  // The re-run reads deployed/<id>.json: the slow config is what its hook last had.
  writeFileSync(s.store.deployedPath('slow'), JSON.stringify(deps[0]));

  for (const by of ['cycle', 'operator'] as const) {
    s.advance(61_000);
    const stop = new AbortController();
    const before = s.runs().length;
    const pass = s.pass(deps, stop.signal);
    await until('the re-run to start', () => s.runs().length > before);
    if (by === 'cycle') stop.abort();
    else writeFileSync(wishFile(deployLockFile(s.h.loaded.config)), otherProcess(t));
    const report = await pass;
    t.equal(report.yielded, true, `${by}: it gave way`);
    t.equal(report.ran, 0);
    const rec = await s.record('slow');
    t.equal(rec.state, 'signalled', `${by}: back where it started`);
    t.equal(rec.reconverge?.last, undefined, `${by}: no outcome recorded for a stopped re-run`);
    t.ok(s.h.captured.lines.some((l) => l.msg === 'deployment re-run stopped; it runs again at its next interval'));
    if (by === 'operator') {
      s.advance(61_000);
      const waiting = await s.pass(deps);
      t.equal(waiting.yielded, true, 'while the operator still waits, no re-run starts');
      t.equal(s.runs().length, before + 1);
    }
  }
  t.equal(s.sink.attempts.length, 1, 'no signal');
});

t.test('a deployment whose reconverge_interval is bad fails naming it, without running its hook', async (t) => {
  const s = await setup(t);
  const deps = [s.dep('bad', { reconverge_interval: 'hourly' })];
  const report = await runDeployments(s.ctxOf(deps));
  t.equal(report.failed.length, 1);
  t.same(s.runs(), [], 'the hook did not run');
  t.equal(s.sink.received.length, 1, 'the failure is signalled');
  t.match(s.sink.received[0]?.body, {
    deploy_status_code: 1,
    deploy_stderr: /options\.reconverge_interval is "hourly", not a plain decimal number of seconds/,
  });
  t.match(
    s.h.captured.lines.find((l) => l.msg === 'deployment option invalid; failure signalled'),
    { code: 'ERR_DEPLOYMENT_OPTION', option: 'reconverge_interval' },
  );
});
