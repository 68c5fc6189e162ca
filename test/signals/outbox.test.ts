import t from 'tap';
import {
  attemptSignal,
  flushDue,
  flushOutbox,
  isDue,
  pendingSummary,
  queuedSignal,
  type OutboxDeps,
} from '../../src/signals/outbox.js';
import { parseDeployment } from '../../src/heat/deployment.js';
import { signalTargetFor, type SignalTarget } from '../../src/heat/signal-target.js';
import { deployLockFile, storeFor, type DeploymentRecord } from '../../src/state/store.js';
import { createHttpClient } from '../../src/http/client.js';
import { deployConfig, deployment } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';
import { moveTo } from '../helpers/state-path.js';
import { startSignalSink, type SignalSink, type SinkTransport } from '../helpers/signal-sink.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { holdFlock } from '../helpers/flock-holder.js';

// The durable outbox against a real signal server: delivered once, retried with backoff while the server is down,
// settled as failed on a final answer or after the last attempt.

async function setup(t: TapTest, maxAttempts = 50) {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const root = t.testdir();
  const loaded = await deployConfig(root);
  const captured = captureLog('debug');
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const store = storeFor(loaded.config, captured.log, () => clock);
  await store.init();
  const deps: OutboxDeps = {
    store,
    http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
    log: captured.log,
    policy: { timeoutSeconds: 2, maxBackoffSeconds: 60, maxAttempts, now: () => clock, random: () => 1 },
  };
  return { sink, root, loaded, captured, store, deps, advance: (ms: number) => (clock += ms), now: () => clock };
}

function targetFor(sink: SignalSink, transport: SinkTransport, id: string): SignalTarget {
  const p = parseDeployment(deployment({ id, name: `res-${id}`, signal: sink.inputs(transport, id, `res-${id}`) }));
  if (!p.ok) throw new Error(p.reason);
  const choice = signalTargetFor(p.deployment);
  if (!choice.ok) throw new Error(choice.reason);
  return choice.target;
}

async function doneRecord(
  store: OutboxDeps['store'],
  id: string,
  target: SignalTarget,
  text = '{"deploy_status_code": 0}',
): Promise<DeploymentRecord> {
  const r = await store.create({ id, name: `res-${id}`, group: 'fake', action: 'CREATE' });
  return moveTo(store, r, 'done', { exitCode: 0, signal: queuedSignal(target, text) });
}

t.test('a queued signal is delivered once and the record says so', async (t) => {
  const { sink, store, deps } = await setup(t);
  const r = await doneRecord(store, 'd1', targetFor(sink, 'CFN_SIGNAL', 'd1'));
  t.ok(isDue(r, deps.policy.now()));
  const report = await flushDue(deps);
  t.same(report, { attempted: 1, sent: 1, failed: 0, pending: 0 });
  const after = await store.read('d1');
  t.equal(after?.state, 'signalled');
  t.equal(after?.signal.state, 'sent');
  t.equal(after?.signal.attempts, 1);
  t.equal(after?.signal.text, undefined, 'the body and target leave the record once delivered');
  t.equal(after?.signal.target, undefined);
  t.same(await flushDue(deps), { attempted: 0, sent: 0, failed: 0, pending: 0 });
  t.equal(sink.countFor('d1'), 1);
});

t.test('server down, then back: retried with growing backoff, delivered exactly once', async (t) => {
  const { sink, store, deps, advance, captured } = await setup(t);
  await doneRecord(store, 'd1', targetFor(sink, 'TEMP_URL_SIGNAL', 'd1'));
  await sink.stop();
  const first = await flushDue(deps);
  t.same(first, { attempted: 1, sent: 0, failed: 0, pending: 1, nextDueAt: deps.policy.now() + 2000 });
  t.same(
    await flushDue(deps),
    { attempted: 0, sent: 0, failed: 0, pending: 1, nextDueAt: deps.policy.now() + 2000 },
    'not due yet: nothing sent',
  );
  advance(2000);
  const second = await flushDue(deps);
  t.equal(second.attempted, 1);
  t.equal(second.nextDueAt, deps.policy.now() + 4000, 'the wait doubles');
  const warnings = captured.lines.filter((l) => l.msg === 'signal attempt failed; will retry');
  t.equal(warnings.length, 2);
  t.equal(warnings[0]?.deploymentId, 'd1');
  t.match(String(warnings[0]?.reason), 'connection refused');
  await sink.start();
  advance(4000);
  t.same(await flushDue(deps), { attempted: 1, sent: 1, failed: 0, pending: 0 });
  advance(60_000);
  await flushDue(deps);
  t.equal(sink.countFor('d1'), 1, 'delivered once');
  t.equal((await store.read('d1'))?.signal.attempts, 3);
});

t.test('a 403 (expired pre-signed URL) is final: logged, marked failed, never retried', async (t) => {
  const { sink, store, deps, advance, captured } = await setup(t);
  const target = targetFor(sink, 'CFN_SIGNAL', 'd1');
  sink.cfnTtlSeconds = -1;
  await doneRecord(store, 'd1', target);
  const report = await flushDue(deps);
  t.same(report, { attempted: 1, sent: 0, failed: 1, pending: 0 });
  const r = await store.read('d1');
  t.equal(r?.state, 'done');
  t.equal(r?.signal.state, 'failed');
  t.equal(r?.signal.lastStatus, 403);
  t.match(r?.lastError, /answered 403 .*Credential is expired.*final, not retried/);
  const line = captured.lines.find((l) => l.msg === 'signal failed; not retried');
  t.equal(line?.code, 'ERR_SIGNAL');
  t.equal(line?.status, 403);
  t.notMatch(captured.text(), /Signature=[A-Za-z0-9%+/]{10}/, 'no signature in the logs');
  advance(3_600_000);
  await flushDue(deps);
  t.equal(sink.attempts.length, 1, 'never sent again');
});

t.test('the last allowed attempt settles the signal as failed', async (t) => {
  const { sink, store, deps, advance } = await setup(t, 2);
  await doneRecord(store, 'd1', targetFor(sink, 'CFN_SIGNAL', 'd1'));
  sink.answers = [503, 503, 503];
  await flushDue(deps);
  advance(10_000);
  const report = await flushDue(deps);
  t.equal(report.failed, 1);
  const r = await store.read('d1');
  t.equal(r?.signal.state, 'failed');
  t.match(r?.lastError, 'gave up after 2 attempts');
});

t.test('Retry-After from a throttling server is honoured', async (t) => {
  const { sink, store, deps } = await setup(t);
  await doneRecord(store, 'd1', targetFor(sink, 'CFN_SIGNAL', 'd1'));
  sink.answers = [429];
  const report = await flushDue(deps);
  t.equal(report.nextDueAt, deps.policy.now() + 30_000, 'Retry-After: 30 is longer than the 2 s backoff');
  const r = await store.read('d1');
  t.equal(r?.signal.lastStatus, 429);
});

t.test('a pending signal without its target in the record fails clearly', async (t) => {
  const { store, deps } = await setup(t);
  const r = await store.create({ id: 'odd', name: 'odd', group: 'g', action: 'CREATE' });
  const done = await moveTo(store, r, 'done', {
    signal: { state: 'pending', transport: 'CFN_SIGNAL', attempts: 0 },
  });
  const next = await attemptSignal(done, deps);
  t.equal(next.signal.state, 'failed');
  t.match(next.lastError, 'no target or body');
});

t.test('a shutdown during an attempt does not count it', async (t) => {
  const { sink, store, deps } = await setup(t);
  const r = await doneRecord(store, 'd1', targetFor(sink, 'CFN_SIGNAL', 'd1'));
  const controller = new AbortController();
  controller.abort();
  const next = await attemptSignal(r, { ...deps, policy: { ...deps.policy, signal: controller.signal } });
  t.equal(next, r, 'unchanged');
  t.equal((await store.read('d1'))?.signal.attempts, 0);
  t.same(
    await flushDue({ ...deps, policy: { ...deps.policy, signal: controller.signal } }),
    { attempted: 0, sent: 0, failed: 0, pending: 1, nextDueAt: 0 },
    'an aborted flush attempts nothing',
  );
});

t.test('pendingSummary and isDue', async (t) => {
  const base = {
    version: 1,
    id: 'x',
    name: 'x',
    group: 'g',
    action: 'CREATE',
    hookStarts: 1,
    firstSeenAt: '',
    updatedAt: '',
  } as const;
  const pending = {
    ...base,
    state: 'done',
    signal: { state: 'pending', transport: 'CFN_SIGNAL', attempts: 1, nextAttemptAt: '2026-01-01T00:00:10.000Z' },
  } as const;
  t.notOk(isDue(pending, Date.parse('2026-01-01T00:00:09Z')));
  t.ok(isDue(pending, Date.parse('2026-01-01T00:00:10Z')));
  t.notOk(isDue({ ...pending, state: 'removed' }, Date.parse('2027-01-01T00:00:00Z')));
  t.same(
    pendingSummary([
      pending,
      { ...base, state: 'signalled', signal: { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1 } },
    ]),
    { pending: 1, nextDueAt: Date.parse('2026-01-01T00:00:10Z') },
  );
  t.same(pendingSummary([]), { pending: 0 });
});

t.test('flushOutbox takes the deployment lock; another process holding it means "busy"', async (t) => {
  const { sink, root, loaded, store } = await setup(t);
  await doneRecord(store, 'd1', targetFor(sink, 'HEAT_SIGNAL', 'd1'));
  const http = createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 });
  const holder = await holdFlock(deployLockFile(loaded.config));
  t.teardown(() => holder.kill());
  const captured = captureLog('debug');
  t.same(await flushOutbox(loaded, captured.log, http), { attempted: 0, sent: 0, failed: 0, pending: 0, busy: true });
  await holder.kill();
  const report = await flushOutbox(loaded, captured.log, http, { random: () => 0.5 });
  t.same(report, { attempted: 1, sent: 1, failed: 0, pending: 0 });
  t.equal(sink.received[0]?.transport, 'HEAT_SIGNAL');
  t.ok(root);
});

t.test('flushOutbox rethrows local failures', async (t) => {
  const root = t.testdir({ var: { lib: { 'os-config-agent': 'not a directory' } } });
  const loaded = await deployConfig(root);
  await t.rejects(flushOutbox(loaded, captureLog().log, createHttpClient({ defaultMaxBytes: 1, defaultRetries: 0 })), {
    code: 'ERR_DEPLOYMENT_STATE',
  });
});
