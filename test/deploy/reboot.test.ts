import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runDeployments } from '../../src/deploy/dispatch.js';
import { MAX_REBOOTS } from '../../src/deploy/reboot.js';
import { storeFor, type DeploymentRecord } from '../../src/state/store.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { startSignalSink } from '../helpers/signal-sink.js';

// Reboots asked by a hook (exit 194): real hook processes, a real signal server, and a reboot command that only
// records its call (the machine is not rebooted: the test "reboots" by changing the boot id file under --root).

async function setup(t: TapTest, rebootCommand?: string) {
  const root = t.testdir();
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  installHooks(root, { fake: {} });
  const rebootLog = path.join(root, 'reboots.log');
  const bootIdFile = path.join(root, 'proc/sys/kernel/random/boot_id');
  mkdirSync(path.dirname(bootIdFile), { recursive: true });
  const boot = (id: string) => writeFileSync(bootIdFile, `${id}\n`);
  boot('boot-1');
  const h = await deployHarness(root, { deploy: { reboot_command: rebootCommand ?? `echo rebooted >> ${rebootLog}` } });
  const store = storeFor(h.loaded.config, h.captured.log);
  const counter = path.join(root, 'runs.txt');
  return {
    root,
    sink,
    h,
    store,
    counter,
    boot,
    bootIdFile,
    reboots: () => counterLines(existsSync(rebootLog) ? readFileSync(rebootLog, 'utf8') : '').length,
    runs: () => counterLines(existsSync(counter) ? readFileSync(counter, 'utf8') : '').length,
    record: async (id: string) => (await store.read(id)) as DeploymentRecord,
  };
}

t.test(
  'exit 194: awaiting-reboot, one reboot, nothing more in the same boot; after the boot it runs again and is signalled once',
  async (t) => {
    const s = await setup(t);
    const rb = deployment({
      id: 'rb',
      config: { counter: s.counter, rebootExit: 194 },
      signal: s.sink.inputs('CFN_SIGNAL', 'rb', 'rb'),
    });
    const later = deployment({
      id: 'later',
      config: { counter: s.counter },
      signal: s.sink.inputs('CFN_SIGNAL', 'later', 'later'),
    });
    const first = await runDeployments(s.h.ctx([rb, later]));
    t.equal(first.awaitingReboot, true, 'the pass stops for the reboot');
    t.equal(s.reboots(), 1, 'reboot command run once');
    t.equal(s.runs(), 1, 'the deployment after it waits for the reboot');
    const waiting = await s.record('rb');
    t.equal(waiting.state, 'awaiting-reboot');
    t.equal(waiting.bootId, 'boot-1');
    t.equal(waiting.reboots, 1);
    t.ok(waiting.rebootCommandRanAt, 'the record says the reboot command ran');
    t.equal(s.sink.received.length, 0, 'no signal before the reboot');

    // The machine has not gone down yet: another pass changes nothing.
    const again = await runDeployments(s.h.ctx([rb, later]));
    t.equal(again.awaitingReboot, true);
    t.equal(s.reboots(), 1, 'not rebooted twice');
    t.equal(s.runs(), 1);

    s.boot('boot-2');
    const after = await runDeployments(s.h.ctx([rb, later]));
    t.notOk(after.awaitingReboot);
    t.equal(s.runs(), 3, 'run again after the boot, then the next deployment');
    const done = await s.record('rb');
    t.equal(done.state, 'signalled');
    t.equal(done.exitCode, 0);
    t.equal(s.sink.countFor('rb'), 1, 'signalled once');
    t.equal(
      s.sink.received.find((r) => r.id === 'rb')?.body.deploy_stdout,
      'after reboot',
      'the hook saw OS_CONFIG_AGENT_REBOOTED',
    );
    t.equal(s.sink.countFor('later'), 1);
    await runDeployments(s.h.ctx([rb, later]));
    t.equal(s.sink.countFor('rb'), 1, 'never again');
    t.equal(s.reboots(), 1);
    const states = s.h.captured.lines
      .filter((l) => l.msg === 'deployment state changed' && l.deploymentId === 'rb')
      .map((l) => l.to);
    t.same(states, ['pending', 'running', 'awaiting-reboot', 'running', 'done', 'signalled']);
  },
);

t.test('a hook that asks for a reboot every time: at most MAX_REBOOTS reboots, then one failure signal', async (t) => {
  const s = await setup(t);
  const loop = deployment({
    id: 'loop',
    config: { counter: s.counter, exit: 194 },
    signal: s.sink.inputs('CFN_SIGNAL', 'loop', 'loop'),
  });
  for (let boot = 1; boot <= MAX_REBOOTS + 2; boot++) {
    s.boot(`boot-${boot}`);
    await runDeployments(s.h.ctx([loop]));
  }
  t.equal(s.reboots(), MAX_REBOOTS, `${MAX_REBOOTS} reboots`);
  t.equal(s.runs(), MAX_REBOOTS + 1, 'the hook ran once per boot, then not again');
  const r = await s.record('loop');
  t.equal(r.state, 'signalled');
  t.equal(r.failed, true);
  t.equal(s.sink.countFor('loop'), 1, 'one failure signal');
  const body = s.sink.received[0]?.body;
  t.equal(Number(body?.deploy_status_code), 194);
  t.match(String(body?.deploy_stderr), `again after ${MAX_REBOOTS} reboots`);
});

t.test('reboots off (empty reboot_command): exit 194 is a failure saying so', async (t) => {
  const s = await setup(t, '');
  const d = deployment({
    id: 'off',
    config: { counter: s.counter, exit: 194 },
    signal: s.sink.inputs('CFN_SIGNAL', 'off', 'off'),
  });
  const report = await runDeployments(s.h.ctx([d]));
  t.notOk(report.awaitingReboot);
  t.same(
    report.failed.map((f) => f.id),
    ['off'],
  );
  t.equal(s.sink.countFor('off'), 1);
  t.match(String(s.sink.received[0]?.body.deploy_stderr), 'reboots are off ([deploy] reboot_command is empty)');
  t.match((await s.record('off')).lastError, 'reboots are off');
});

t.test('a reboot command that fails, and a boot id that cannot be read: failure signals, no reboot loop', async (t) => {
  const s = await setup(t, 'echo no permission >&2; exit 3');
  const d = deployment({
    id: 'bad-cmd',
    config: { exit: 194 },
    signal: s.sink.inputs('CFN_SIGNAL', 'bad-cmd', 'bad-cmd'),
  });
  await runDeployments(s.h.ctx([d]));
  t.equal((await s.record('bad-cmd')).failed, true);
  t.match(
    String(s.sink.received[0]?.body.deploy_stderr),
    /the reboot command exited with 3: no permission; check \[deploy\] reboot_command/,
  );

  const s2 = await setup(t);
  writeFileSync(s2.bootIdFile, '');
  const d2 = deployment({
    id: 'no-boot-id',
    config: { exit: 194 },
    signal: s2.sink.inputs('CFN_SIGNAL', 'no-boot-id', 'no-boot-id'),
  });
  await runDeployments(s2.h.ctx([d2]));
  t.equal(s2.reboots(), 0, 'not rebooted');
  t.match(String(s2.sink.received[0]?.body.deploy_stderr), 'boot_id cannot be read');
});

t.test(
  'crash between the awaiting-reboot record and the reboot command: the next start in the same boot reboots',
  async (t) => {
    const s = await setup(t);
    const d = deployment({
      id: 'crash',
      config: { counter: s.counter, rebootExit: 194 },
      signal: s.sink.inputs('CFN_SIGNAL', 'crash', 'crash'),
    });
    // The listener runs once the state is on disk: throwing there stands for the agent dying at that instant.
    await t.rejects(
      runDeployments(
        s.h.ctx([d], {
          onTransition: (r) => {
            if (r.state === 'awaiting-reboot') throw new Error('killed');
          },
        }),
      ),
    );
    t.equal(s.reboots(), 0);
    t.equal((await s.record('crash')).state, 'awaiting-reboot', 'recorded before the reboot command');
    await runDeployments(s.h.ctx([d]));
    t.equal(s.reboots(), 1, 'the reboot happens at the next start');
    t.equal(s.runs(), 1, 'the hook is not run again before the reboot');
    s.boot('boot-2');
    await runDeployments(s.h.ctx([d]));
    t.equal(s.sink.countFor('crash'), 1);
    t.equal(s.sink.received[0]?.body.deploy_stdout, 'after reboot');
  },
);

t.test(
  'the run after the reboot interrupted and resumed: the hook still sees OS_CONFIG_AGENT_REBOOTED, signalled once',
  async (t) => {
    const s = await setup(t);
    const d = deployment({
      id: 'resume',
      config: { counter: s.counter, rebootExit: 194 },
      signal: s.sink.inputs('CFN_SIGNAL', 'resume', 'resume'),
    });
    await runDeployments(s.h.ctx([d]));
    s.boot('boot-2');
    await t.rejects(
      runDeployments(
        s.h.ctx([d], {
          onTransition: (r) => {
            if (r.state === 'running') throw new Error('killed');
          },
        }),
      ),
    );
    t.equal((await s.record('resume')).state, 'running');
    await runDeployments(s.h.ctx([d]));
    t.equal(s.sink.countFor('resume'), 1);
    t.equal(s.sink.received[0]?.body.deploy_stdout, 'after reboot');
    t.equal(s.reboots(), 1);
  },
);
