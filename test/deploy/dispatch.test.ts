import { chownSync, existsSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { MAX_HOOK_STARTS, runDeployments, settleAppliedDeployments } from '../../src/deploy/dispatch.js';
import { flushDue } from '../../src/signals/outbox.js';
import { deployLockFile, storeFor, type DeploymentRecord } from '../../src/state/store.js';
import { scrubText, secrets } from '../../src/log/redact.js';
import { counterLines, deployHarness, deployment, installHooks } from '../helpers/deploy-fixtures.js';
import { pidGone } from '../helpers/fault-daemon.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { startSignalSink, type SinkTransport } from '../helpers/signal-sink.js';
import { holdFlock } from '../helpers/flock-holder.js';
import { usePruneClock } from '../../src/state/prune.js';

// The deployment runner end to end: real hook processes from test/fixtures/hooks, real signal servers per transport,
// real state on disk.

async function setup(t: TapTest, cli: Parameters<typeof deployHarness>[1] = {}) {
  const root = t.testdir();
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  installHooks(root, { fake: {}, crash: {}, 'not-executable': { mode: 0o644 } });
  const h = await deployHarness(root, cli);
  const counter = path.join(root, 'runs.txt');
  const store = storeFor(h.loaded.config, h.captured.log);
  const record = (id: string) => store.read(id);
  return {
    root,
    sink,
    h,
    counter,
    store,
    record,
    runs: () => counterLines(existsSync(counter) ? readFileSync(counter, 'utf8') : ''),
  };
}

t.test('every transport: hook run once, signalled once, state and upstream files written', async (t) => {
  const { sink, h, counter, record, runs, store } = await setup(t);
  const transports: Array<SinkTransport | 'NO_SIGNAL'> = [
    'CFN_SIGNAL',
    'TEMP_URL_SIGNAL',
    'HEAT_SIGNAL',
    'ZAQAR_SIGNAL',
    'NO_SIGNAL',
  ];
  const deps = transports.map((tr, i) => {
    const id = `dep-${i}`;
    const name = `res-${i}`;
    return deployment({
      id,
      name,
      config: {
        counter,
        stdout: { deploy_stdout: `out ${i}`, deploy_stderr: '', deploy_status_code: 0, result: `value ${i}` },
      },
      outputs: [{ name: 'result' }],
      ...(tr === 'NO_SIGNAL' ? {} : { signal: sink.inputs(tr, id, name) }),
    });
  });
  const report = await runDeployments(h.ctx(deps));
  t.same(
    report.ran,
    deps.map((d) => d.id),
  );
  t.same(report.failed, []);
  t.equal(report.signals.pending, 0);
  t.same(
    runs(),
    deps.map((d) => `${d.id} CREATE`),
  );
  t.same(
    sink.received.map((r) => [r.id, r.transport, r.body.result]),
    transports.slice(0, 4).map((tr, i) => [`dep-${i}`, tr, `value ${i}`]),
  );
  for (const [i, d] of deps.entries()) {
    const r = (await record(d.id)) as DeploymentRecord;
    t.equal(r.state, i < 4 ? 'signalled' : 'done', `${d.id} state`);
    t.equal(r.signal.state, i < 4 ? 'sent' : 'none');
    t.equal(r.exitCode, 0);
    t.equal(r.failed, false);
    t.ok(r.startedAt && r.endedAt);
    t.equal(statSync(store.deployedPath(d.id)).mode & 0o777, 0o600);
    t.same(JSON.parse(readFileSync(store.deployedPath(d.id), 'utf8')), d, 'deployed/<id>.json holds the deployment');
    t.equal(JSON.parse(readFileSync(store.notifyPath(d.id), 'utf8')).result, `value ${i}`);
  }

  // A second pass over the same metadata runs and sends nothing.
  const again = await runDeployments(h.ctx(deps));
  t.same(again.ran, []);
  t.equal(runs().length, 5, 'no hook re-run');
  t.equal(sink.received.length, 4, 'no signal repeated');
  const transitions = h.captured.lines.filter((l) => l.msg === 'deployment state changed');
  t.equal(transitions.length, 4 * 4 + 3, 'pending, running, done (+ signalled): one line each');
  t.ok(transitions.every((l) => typeof l.deploymentId === 'string' && typeof l.deploymentName === 'string'));
});

t.test('inputs of every JSON type reach the hook unchanged', async (t) => {
  const { h, sink } = await setup(t);
  const values = {
    s: 'text',
    n: 42,
    f: 1.25,
    b: true,
    nil: null,
    list: ['a', 1, false],
    obj: { k: { deep: [1, { x: 'y' }] } },
    unicode: 'caf\u00e9 \ud83d\ude00',
  };
  const d = deployment({
    id: 'typed',
    config: { echo: true },
    inputs: Object.entries(values).map(([name, value]) => ({
      name,
      value,
      type: typeof value === 'number' ? 'Number' : 'String',
    })),
    signal: sink.inputs('CFN_SIGNAL', 'typed', 'typed'),
  });
  await runDeployments(h.ctx([d]));
  const received = sink.received[0]?.body.received as { inputs: Array<{ name: string; value: unknown }> };
  for (const [name, value] of Object.entries(values))
    t.same(received.inputs.find((i) => i.name === name)?.value, value, name);
});

t.test('hooks get the agent environment, plus OS_CONFIG_AGENT_ROOT under --root', async (t) => {
  const { h, sink, root } = await setup(t);
  const hook = path.join(root, 'var/lib/heat-config/hooks/env');
  writeFileSync(hook, '#!/bin/sh\nprintf \'{"root": "%s", "extra": "%s"}\' "$OS_CONFIG_AGENT_ROOT" "$EXTRA"\n', {
    mode: 0o755,
  });
  const d = deployment({ id: 'env', group: 'env', signal: sink.inputs('CFN_SIGNAL', 'env', 'env') });
  await runDeployments(h.ctx([d], { env: { PATH: process.env.PATH, EXTRA: 'given' } }));
  t.same(sink.received[0]?.body, { root, extra: 'given' });
});

t.test('missing, non-executable, crashing and failing hooks: an immediate failure signal each', async (t) => {
  const { sink, h, counter, record, runs } = await setup(t);
  const dep = (id: string, group: string, config: unknown = {}) =>
    deployment({ id, group, config, signal: sink.inputs('CFN_SIGNAL', id, id) });
  const list = [
    dep('missing', 'no-such-tool'),
    dep('noexec', 'not-executable'),
    dep('crash', 'crash'),
    dep('fails', 'fake', { counter, stderr: 'it went wrong', exit: 3 }),
    dep('ok', 'fake', { counter }),
  ];
  const report = await runDeployments(h.ctx(list));
  t.same(
    report.failed.map((f) => f.id),
    ['missing', 'noexec', 'crash', 'fails'],
  );
  t.same(report.ran, ['crash', 'fails', 'ok']);
  const body = (id: string) => sink.received.find((r) => r.id === id)?.body as Record<string, unknown>;
  t.equal(body('missing').deploy_status_code, 127);
  t.match(
    body('missing').deploy_stderr,
    /no hook for group "no-such-tool" \(looked for "no-such-tool" in \/usr\/libexec\/heat-config\/hooks, \/var\/lib\/heat-config\/hooks\)/,
  );
  t.equal(body('noexec').deploy_status_code, 126);
  t.match(
    body('noexec').deploy_stderr,
    /hook \/var\/lib\/heat-config\/hooks\/not-executable is not executable \(mode 0644\)/,
  );
  t.equal(body('crash').deploy_status_code, 139);
  t.match(body('crash').deploy_stderr, /about to crash\nos-config-agent: hook .*crash was killed by SIGSEGV/);
  t.same(body('fails'), { deploy_stdout: '', deploy_stderr: 'it went wrong', deploy_status_code: 3 });
  t.same(body('ok'), { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
  t.equal(sink.received.length, 5, 'every deployment signalled once');
  t.same(runs(), ['fails CREATE', 'ok CREATE']);
  const missing = await record('missing');
  t.equal(missing?.state, 'signalled');
  t.equal(missing?.failed, true);
  t.match(missing?.lastError, 'no hook for group');
  t.ok(h.captured.lines.some((l) => l.msg === 'hook missing; failure signalled' && l.code === 'ERR_HOOK'));
  await runDeployments(h.ctx(list));
  t.equal(sink.received.length, 5, 'failures are not retried either');
});

t.test('a hanging hook is killed at its timeout (per-deployment override) with its whole process group', async (t) => {
  const { sink, h, root } = await setup(t, { deploy: { hook_timeout: 3600 } });
  const pidFile = path.join(root, 'grandchild.pid');
  const d = deployment({
    id: 'hang',
    config: { hang: true, grandchildPidFile: pidFile, stderr: 'started' },
    options: { hook_timeout: 3 },
    signal: sink.inputs('CFN_SIGNAL', 'hang', 'hang'),
  });
  const report = await runDeployments(h.ctx([d]));
  t.same(
    report.failed.map((f) => f.id),
    ['hang'],
  );
  const body = sink.received[0]?.body as Record<string, unknown>;
  t.equal(body.deploy_status_code, 124);
  t.match(body.deploy_stderr, 'did not finish within 3 s; its process group was killed');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  t.ok(await pidGone(pid, 2000), 'the grandchild was killed too');
});

t.test(
  'os-apply-config deployments without a hook wait for the end of the cycle, then are signalled once; without signal inputs they are skipped',
  async (t) => {
    const { sink, h, record } = await setup(t);
    const list = [
      deployment({
        id: 'oac',
        name: 'oac-res',
        group: 'os-apply-config',
        config: { app: { port: 1 } },
        signal: sink.inputs('CFN_SIGNAL', 'oac', 'oac-res'),
      }),
      deployment({
        id: 'oac-heat',
        name: 'oac-heat',
        group: 'Heat::Ungrouped',
        config: { y: 2 },
        signal: sink.inputs('HEAT_SIGNAL', 'oac-heat', 'oac-heat'),
      }),
      { ...deployment({ id: 'ungrouped', config: { x: 1 } }), group: undefined },
    ];
    const report = await runDeployments(h.ctx(list));
    t.same(report.skipped, ['ungrouped'], 'no signal inputs: nothing to tell Heat');
    t.same(report.ran, []);
    t.equal((await record('oac'))?.state, 'applied');
    t.equal((await record('oac-heat'))?.state, 'applied');
    t.equal(sink.received.length, 0, 'nothing signalled before the cycle ends');
    t.same((await runDeployments(h.ctx(list))).skipped, [], 'decided once');

    const settled = await settleAppliedDeployments(h.ctx(list), { ok: true });
    t.same(settled.signalled, ['oac', 'oac-heat']);
    t.same(
      sink.received.map((r) => [r.id, r.transport, r.body.deploy_status_code]),
      [
        ['oac', 'CFN_SIGNAL', 0],
        ['oac-heat', 'HEAT_SIGNAL', 0],
      ],
    );
    t.match(String(sink.received[0]?.body.deploy_stdout), /os-apply-config applied the data of deployment oac-res/);
    t.equal((await record('oac'))?.state, 'signalled');
    t.same(
      (await settleAppliedDeployments(h.ctx(list), { ok: true })).signalled,
      [],
      'a second cycle end signals nothing',
    );
    t.same(
      (await settleAppliedDeployments(h.ctx(list), { ok: false, reason: 'later failure' })).signalled,
      [],
      'nor does a later failed cycle',
    );
    t.equal(sink.received.length, 2);
  },
);

t.test(
  'a failed cycle signals its os-apply-config deployments with the error, also those the deployment step never reached',
  async (t) => {
    const { sink, h, record } = await setup(t);
    const waiting = deployment({
      id: 'waiting',
      name: 'waiting',
      group: 'os-apply-config',
      config: {},
      signal: sink.inputs('CFN_SIGNAL', 'waiting', 'waiting'),
    });
    await runDeployments(h.ctx([waiting]));
    t.equal((await record('waiting'))?.state, 'applied');
    const unseen = deployment({
      id: 'unseen',
      name: 'unseen',
      group: 'os-apply-config',
      config: {},
      signal: sink.inputs('CFN_SIGNAL', 'unseen', 'unseen'),
    });
    const quiet = deployment({ id: 'quiet', group: 'os-apply-config', config: {} });
    const scripted = deployment({
      id: 'scripted',
      name: 'scripted',
      config: {},
      signal: sink.inputs('CFN_SIGNAL', 'scripted', 'scripted'),
    });
    const settled = await settleAppliedDeployments(h.ctx([waiting, unseen, quiet, scripted]), {
      ok: false,
      reason: 'template etc/app.conf: bad control file',
    });
    t.same(
      settled.signalled,
      ['waiting', 'unseen'],
      'a deployment of another group, or one without a signal, is left alone',
    );
    t.same(
      settled.failed.map((f) => f.id),
      ['waiting', 'unseen'],
    );
    for (const r of sink.received) {
      t.equal(r.body.deploy_status_code, 1);
      t.match(String(r.body.deploy_stderr), /configuration cycle .* failed: template etc\/app.conf: bad control file/);
    }
    const unseenRecord = await record('unseen');
    t.equal(unseenRecord?.state, 'signalled');
    t.equal(unseenRecord?.failed, true);
    t.equal(await record('quiet'), undefined);
    t.equal(await record('scripted'), undefined);
    // The retried cycle's deployment step leaves the signalled ones alone.
    const again = await runDeployments(h.ctx([waiting, unseen]));
    t.same(again.ran, []);
    t.equal(sink.received.length, 2);
  },
);

t.test('actions: DELETE runs the hook like any other; components pick their config by action', async (t) => {
  const { sink, h, counter, runs, record } = await setup(t);
  const component = {
    configs: [
      { actions: ['CREATE'], tool: 'fake', config: { counter, stdout: 'created' } },
      { actions: ['DELETE'], tool: 'fake', config: { counter, stdout: 'deleted' } },
    ],
  };
  const list = [
    deployment({ id: 'del', action: 'DELETE', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'del', 'del') }),
    deployment({
      id: 'comp-del',
      group: 'component',
      action: 'DELETE',
      config: component,
      signal: sink.inputs('CFN_SIGNAL', 'comp-del', 'comp-del'),
    }),
    deployment({
      id: 'comp-suspend',
      group: 'component',
      action: 'SUSPEND',
      config: component,
      signal: sink.inputs('CFN_SIGNAL', 'comp-suspend', 'comp-suspend'),
    }),
  ];
  const report = await runDeployments(h.ctx(list));
  t.same(runs(), ['del DELETE', 'comp-del DELETE']);
  t.equal(sink.received.find((r) => r.id === 'comp-del')?.body.deploy_stdout, 'deleted');
  t.same(report.skipped, ['comp-suspend']);
  const suspended = await record('comp-suspend');
  t.equal(suspended?.state, 'skipped');
  t.match(suspended?.lastError, 'no component config is defined for action SUSPEND');
  t.equal((await record('del'))?.action, 'DELETE');
});

t.test('deployments recorded by an earlier agent (deployed/<id>.json) are adopted, not run', async (t) => {
  const { sink, h, counter, runs, record, store } = await setup(t);
  mkdirSync(store.deployedDir, { recursive: true });
  writeFileSync(store.deployedPath('old'), '');
  const report = await runDeployments(
    h.ctx([deployment({ id: 'old', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'old', 'old') })]),
  );
  t.same(report.ran, []);
  t.same(runs(), []);
  const r = await record('old');
  t.equal(r?.state, 'signalled');
  t.equal(r?.adopted, true);
  t.equal(sink.received.length, 0);
});

t.test(
  'removed deployments are recorded, their undelivered signal dropped, and pruned after prune_after days',
  async (t) => {
    const { sink, h, counter, record, store } = await setup(t, { deploy: { prune_after: 2 } });
    let clock = Date.parse('2026-03-01T00:00:00Z');
    const now = () => clock;
    // The fake clock stands for days passing, not for a step of the clock: the grace periods follow it.
    t.teardown(usePruneClock(now));
    const a = deployment({ id: 'a', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'a', 'a') });
    const b = deployment({ id: 'b', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'b', 'b') });
    await sink.stop();
    await runDeployments(h.ctx([a, b], { now }));
    t.equal((await record('b'))?.signal.state, 'pending', 'signal waiting in the outbox');
    clock += 3600_000;
    const noKey = await runDeployments(h.ctx(undefined, { now }));
    t.same(noKey.removed, [], 'metadata without a deployments key removes nothing');
    await sink.start();
    clock += 3600_000;
    const report = await runDeployments(h.ctx([a], { now }));
    t.same(report.removed, ['b']);
    writeFileSync(store.deployedPath('stranger'), '{}');
    utimesSync(store.deployedPath('stranger'), new Date(clock), new Date(clock));
    const removed = await record('b');
    t.equal(removed?.state, 'removed');
    t.equal(removed?.stateBeforeRemoval, 'done');
    t.equal(removed?.removedAt, '2026-03-01T02:00:00.000Z');
    t.equal(removed?.signal.state, 'cancelled');
    t.same(
      sink.received.map((r) => r.id),
      ['a'],
      "b's signal was never sent",
    );
    clock += 2 * 86_400_000 - 1000;
    t.same((await runDeployments(h.ctx([a], { now }))).pruned, [], 'not yet');
    clock += 2000;
    const pruned = await runDeployments(h.ctx([a], { now }));
    t.same([...pruned.pruned].sort(), ['b', 'stranger'], 'old removed record and an unknown stale deployed file');
    t.equal(await record('b'), undefined);
    t.notOk(existsSync(store.deployedPath('b')) || existsSync(store.notifyPath('b')));
    t.ok(existsSync(store.deployedPath('a')), 'current deployments keep their files');
  },
);

t.test('a removed deployment listed again resumes from where it was', async (t) => {
  const { h, counter, runs, record } = await setup(t);
  const a = deployment({ id: 'a', config: { counter } });
  await runDeployments(h.ctx([a]));
  await runDeployments(h.ctx([]));
  t.equal((await record('a'))?.state, 'removed');
  await runDeployments(h.ctx([a]));
  t.equal((await record('a'))?.state, 'done');
  t.equal(runs().length, 1, 'not run again');
});

t.test('a hook interrupted by a crash runs once more, then is reported failed', async (t) => {
  const { sink, h, counter, runs, store, record } = await setup(t);
  await store.init();
  const d = deployment({ id: 'int', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'int', 'int') });
  const fields = { id: 'int', name: d.name, group: 'fake', action: 'CREATE' };
  const r = await store.create(fields);
  await store.transition(r, 'hook-started', { hookStarts: 1 });
  await runDeployments(h.ctx([d]));
  t.same(runs(), ['int CREATE'], 're-run after one interruption');
  t.equal((await record('int'))?.hookStarts, 2);
  t.ok(h.captured.lines.some((l) => l.msg === 'hook was interrupted; running it again'));

  const d2 = deployment({ id: 'int2', config: { counter }, signal: sink.inputs('CFN_SIGNAL', 'int2', 'int2') });
  const r2 = await store.create({ ...fields, id: 'int2' });
  await store.transition(r2, 'hook-started', { hookStarts: MAX_HOOK_STARTS });
  const report = await runDeployments(h.ctx([d2]));
  t.same(
    report.failed.map((f) => f.id),
    ['int2'],
  );
  t.equal(runs().length, 1, 'not started a third time');
  t.match(sink.received.find((x) => x.id === 'int2')?.body.deploy_stderr, `interrupted ${MAX_HOOK_STARTS} times`);
});

t.test('shutdown during a hook leaves it to run again at the next start', async (t) => {
  const { h, counter, record, runs } = await setup(t);
  const controller = new AbortController();
  const d = deployment({ id: 'slow', config: { counter, sleepMs: 30_000 } });
  const later = deployment({ id: 'later', config: { counter } });
  // Shut down once the hook has really started (a fixed delay is not enough on a loaded machine).
  const started = (async () => {
    for (let i = 0; i < 500 && !runs().includes('slow CREATE'); i++) await new Promise((r) => setTimeout(r, 20));
    controller.abort();
  })();
  const report = await runDeployments(h.ctx([d, later], { signal: controller.signal }));
  await started;
  t.ok(report.interrupted);
  t.equal((await record('slow'))?.state, 'running');
  t.equal(await record('later'), undefined, 'nothing after it was started');
  const again = await runDeployments(h.ctx([{ ...d, config: { counter } }, later]));
  t.same(again.ran, ['slow', 'later']);
  t.same(runs(), ['slow CREATE', 'slow CREATE', 'later CREATE']);
});

t.test('an unreachable signal server holds up nothing; the outbox delivers later, once', async (t) => {
  const { sink, h, counter, runs, store } = await setup(t);
  await sink.stop();
  const list = ['s1', 's2', 's3'].map((id) =>
    deployment({ id, config: { counter }, signal: sink.inputs('TEMP_URL_SIGNAL', id, id) }),
  );
  const report = await runDeployments(h.ctx(list));
  t.same(report.ran, ['s1', 's2', 's3'], 'every hook ran');
  t.equal(report.signals.pending, 3);
  t.equal(runs().length, 3);
  await sink.start();
  const deps = {
    store,
    http: h.http,
    log: h.captured.log,
    policy: {
      timeoutSeconds: 2,
      maxBackoffSeconds: 60,
      maxAttempts: 50,
      now: () => Date.now() + 600_000,
      random: () => 1,
    },
  };
  t.same(await flushDue(deps), { attempted: 3, sent: 3, failed: 0, pending: 0 });
  await runDeployments(h.ctx(list));
  t.same(
    sink.received.map((r) => r.id),
    ['s1', 's2', 's3'],
  );
});

t.test('oversized output is trimmed to the signal limit keeping its tail', async (t) => {
  const { sink, h } = await setup(t);
  const d = deployment({
    id: 'big',
    config: { bigStderrBytes: 1_200_000, stdout: 'not json', exit: 1 },
    signal: sink.inputs('CFN_SIGNAL', 'big', 'big'),
  });
  await runDeployments(h.ctx([d]));
  const raw = sink.received[0]?.raw ?? '';
  t.ok(raw.length <= 950_000, `${raw.length} bytes`);
  t.match(
    sink.received[0]?.body.deploy_stderr,
    /^\[os-config-agent: \d+ characters trimmed from the start\]\nx+END-OF-OUTPUT$/,
  );
  t.ok(h.captured.lines.some((l) => l.msg === 'signal trimmed to fit the size limit'));
});

t.test('invalid and duplicate entries are reported; the others run', async (t) => {
  const { h, counter, runs } = await setup(t);
  const good = deployment({ id: 'good', config: { counter } });
  const report = await runDeployments(
    h.ctx([
      { id: '../escape', group: 'fake' },
      'junk',
      good,
      { ...good, name: 'dup' },
      { ...deployment({ id: 'warn', config: { counter } }), inputs: 'bad' },
    ]),
  );
  t.equal(report.invalid, 2);
  t.equal(report.total, 2);
  t.same(runs(), ['good CREATE', 'warn undefined']);
  t.ok(h.captured.lines.some((l) => l.msg === 'deployment listed twice; the first entry is used'));
  t.ok(h.captured.lines.some((l) => l.msg === 'deployment has a problem' && l.deploymentId === 'warn'));
});

t.test('bad signal inputs: the hook runs, the signal is marked failed with the reason', async (t) => {
  const { h, record } = await setup(t);
  const d = deployment({
    id: 'badsig',
    signal: [{ name: 'deploy_signal_id', value: 'ftp://example/x', type: 'String' }],
  });
  await runDeployments(h.ctx([d]));
  const r = await record('badsig');
  t.equal(r?.state, 'done');
  t.equal(r?.signal.state, 'failed');
  t.match(r?.lastError, 'only http and https');
});

// Heat's signal names the resource: with deploy_resource_name empty there is nothing to signal (upstream's
// heat-config-notify would ask Heat for the resource "" and fail). Counted as done, the stack would wait for it until
// its timeout while the pass and status said all was well.
t.test(
  'a result that cannot be signalled (empty deploy_resource_name) fails the deployment, as status shows',
  async (t) => {
    const { h, record } = await setup(t);
    const inputs: Record<string, string> = {
      deploy_auth_url: 'http://127.0.0.1:1/v3',
      deploy_user_id: 'u',
      deploy_password: 'p',
      deploy_project_id: 'proj',
      deploy_stack_id: 'stack/1',
      deploy_resource_name: '',
    };
    const d = deployment({
      id: 'noname',
      signal: Object.entries(inputs).map(([name, value]) => ({ name, value, type: 'String' })),
    });
    const report = await runDeployments(h.ctx([d]));
    t.match(report.failed, [{ id: 'noname', reason: /HEAT_SIGNAL needs the input\(s\) deploy_resource_name/ }]);
    const r = await record('noname');
    t.equal(r?.failed, true, 'the record says failed');
    t.equal(r?.signal.state, 'failed');
    t.match(r?.lastError, /deploy_resource_name/);
  },
);

t.test('local state failures throw; another runner holding the lock is refused', async (t) => {
  const { h, root } = await setup(t);
  writeFileSync(path.join(root, 'var/lib/heat-config/deployed'), 'not a directory');
  await t.rejects(runDeployments(h.ctx([deployment({ id: 'x' })])), { code: 'ERR_DEPLOYMENT_STATE' });
  const other = await setup(t);
  mkdirSync(path.dirname(deployLockFile(other.h.loaded.config)), { recursive: true });
  const holder = await holdFlock(deployLockFile(other.h.loaded.config));
  t.teardown(() => holder.kill());
  await t.rejects(runDeployments(other.h.ctx([deployment({ id: 'x' })])), { code: 'ERR_LOCKED' });
});

t.test(
  'the secret inputs of the listed deployments are scrubbed from log lines, and released once they are gone',
  async (t) => {
    const { h, counter } = await setup(t);
    const password = `pw-${Date.now()}-dispatch`;
    const d = deployment({
      id: 'secret-dep',
      config: { counter },
      inputs: [{ name: 'deploy_password', value: password }],
    });
    await runDeployments(h.ctx([d]));
    t.notMatch(scrubText(`line with ${password}`), password, 'scrubbed while the metadata lists it');
    const held = secrets.size;
    for (let pass = 0; pass < 5; pass++) await runDeployments(h.ctx([d]));
    t.equal(secrets.size, held, 'passes over the same deployments do not grow the list');
    await runDeployments(h.ctx([]));
    t.match(scrubText(`line with ${password}`), password, 'released once the deployment is gone');
    t.equal(secrets.size, held - 1);
  },
);

t.test(
  "a hook's outputs named as secrets are scrubbed from the log from the moment it ends (its stderr tail), and released once the deployment is gone",
  async (t) => {
    const { h, counter } = await setup(t);
    const password = `pw-${Date.now()}-output`;
    const d = deployment({
      id: 'output-secret',
      config: {
        counter,
        stdout: { deploy_stdout: 'made a password', db_password: password, port: 'port-4242' },
        stderr: `the new password is ${password}\n`,
      },
      outputs: [{ name: 'db_password' }, { name: 'port' }],
    });
    await runDeployments(h.ctx([d]));
    const tail = h.captured.lines.find((l) => l.msg === 'hook stderr');
    t.match(tail?.stderrTail, /the new password is/, "the hook's stderr tail is logged");
    t.notMatch(h.captured.text(), password, 'without the secret output');
    t.notMatch(
      scrubText(`line with port-4242`),
      /\[REDACTED\]|\*\*\*/,
      'an output not named as a secret is not scrubbed',
    );
    await runDeployments(h.ctx([]));
    t.match(scrubText(`line with ${password}`), password, 'released once the deployment is gone');
  },
);

t.test(
  'a hook another user replaced (0777, their uid) is refused, never run: a failure signal naming the trust rule',
  { skip: process.getuid?.() !== 0 && 'needs root to chown the hook to another user' },
  async (t) => {
    const { sink, h, counter, runs } = await setup(t);
    const dir = installHooks(h.loaded.paths.map('/'), { foreign: { from: 'fake', mode: 0o777 } });
    chownSync(path.join(dir, 'foreign'), 65534, 65534);
    const d = deployment({
      id: 'f',
      group: 'foreign',
      config: { counter },
      signal: sink.inputs('CFN_SIGNAL', 'f', 'f'),
    });
    const report = await runDeployments(h.ctx([d]));
    t.same(
      report.failed.map((f) => f.id),
      ['f'],
    );
    t.same(runs(), [], 'the hook never ran');
    const body = sink.received.find((r) => r.id === 'f')?.body as Record<string, unknown>;
    t.equal(body.deploy_status_code, 126);
    t.match(
      body.deploy_stderr,
      /hook \/var\/lib\/heat-config\/hooks\/foreign is not trusted: .*owned by user 65534.*chmod go-w/,
    );
    t.ok(
      h.captured.lines.some((l) => l.msg === 'hook not runnable; failure signalled' && l.code === 'ERR_UNTRUSTED_PATH'),
    );
  },
);
