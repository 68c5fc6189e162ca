import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { enqueueSignal, readQueuedSignal } from '../../../src/signals/cfn-signal-queue/files.js';
import {
  attemptIfDue,
  attemptQueuedSignal,
  flushSignalQueue,
  type QueueDeps,
} from '../../../src/signals/cfn-signal-queue/send.js';
import { createHttpClient } from '../../../src/http/client.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { captureLog } from '../../helpers/log-capture.js';
import { startWaitConditionServer, type WaitConditionServer } from '../../helpers/wait-condition-server.js';
import { holdFlock } from '../../helpers/flock-holder.js';

// The cfn-signal queue in-process, on a fake clock, against the wait condition server: backoff and giving up, the
// lock shared with other processes, corrupt files, pruning, and two flushes racing for one signal.

let server: WaitConditionServer;
t.before(async () => {
  server = await startWaitConditionServer();
});
t.teardown(() => server.close());

const BODY = (id: string) => `{"Status": "SUCCESS", "Reason": "r", "UniqueId": "${id}", "Data": "d"}`;

function setup(t: TapTest, maxAttempts = 50) {
  const dir = t.testdir();
  const captured = captureLog('debug');
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const deps: QueueDeps = {
    dir: path.join(dir, 'signals'),
    lockFile: path.join(dir, 'signals.lock'),
    http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
    log: captured.log,
    pruneAfterDays: 1,
    policy: { timeoutSeconds: 2, maxBackoffSeconds: 60, maxAttempts, now: () => clock, random: () => 1 },
  };
  return { deps, captured, advance: (ms: number) => (clock += ms) };
}

const accepted = (id: string) =>
  server.requests.filter((r) => r.status === 200 && r.raw.includes(`"UniqueId": "${id}"`)).length;

t.test(
  '5xx: retried after the backoff (not before), delivered once; the settled file drops its credentials',
  async (t) => {
    const { deps, captured, advance } = setup(t);
    const entry = await enqueueSignal(
      deps.dir,
      { kind: 'cfn', url: server.cfnUrl('q_retry'), text: BODY('r1') },
      deps.policy.now(),
    );
    server.answers = [503];
    const first = await flushSignalQueue(deps);
    t.same(
      { attempted: first.attempted, sent: first.sent, pending: first.pending },
      { attempted: 1, sent: 0, pending: 1 },
    );
    t.equal(first.nextDueAt, deps.policy.now() + 2000, 'first retry after the 2 s base (random 1: no jitter cut)');
    t.equal((await flushSignalQueue(deps)).attempted, 0, 'not due yet: no attempt');
    advance(2000);
    const second = await flushSignalQueue(deps);
    t.same(
      { attempted: second.attempted, sent: second.sent, pending: second.pending },
      { attempted: 1, sent: 1, pending: 0 },
    );
    t.equal(accepted('r1'), 1);
    const after = await readQueuedSignal(deps.dir, entry.id);
    t.equal(after?.state, 'sent');
    t.equal(after?.attempts, 2);
    t.same([after?.url, after?.text, after?.token, after?.nextAttemptAt], [undefined, undefined, undefined, undefined]);
    t.equal((await flushSignalQueue(deps)).attempted, 0, 'a sent signal is never sent again');
    t.equal(accepted('r1'), 1);
    t.notMatch(captured.text(), /Signature=(?!%5BREDACTED|\[REDACTED)[A-Za-z0-9%]/, 'no signature in the log');
  },
);

t.test('signal_max_attempts: given up as failed; 4xx: final at once', async (t) => {
  const { deps, advance } = setup(t, 2);
  const flaky = await enqueueSignal(
    deps.dir,
    { kind: 'cfn', url: server.cfnUrl('q_give_up'), text: BODY('g1') },
    deps.policy.now(),
  );
  server.answers = [502, 502];
  await flushSignalQueue(deps);
  advance(60_000);
  const report = await flushSignalQueue(deps);
  t.equal(report.failed, 1);
  const failed = await readQueuedSignal(deps.dir, flaky.id);
  t.equal(failed?.state, 'failed');
  t.match(failed?.lastError, /gave up after 2 attempts/);
  const refused = await enqueueSignal(
    deps.dir,
    { kind: 'cfn', url: server.cfnUrl('q_refused', { secret: 'wrong' }), text: BODY('f1') },
    deps.policy.now(),
  );
  await flushSignalQueue(deps);
  const final = await readQueuedSignal(deps.dir, refused.id);
  t.equal(final?.state, 'failed');
  t.equal(final?.attempts, 1);
  t.match(final?.lastError, /answered 403.*final, not retried/);
});

t.test('another live process holds the lock: busy, nothing attempted; a dead holder is taken over', async (t) => {
  const { deps } = setup(t);
  await enqueueSignal(deps.dir, { kind: 'cfn', url: server.cfnUrl('q_lock'), text: BODY('l1') }, deps.policy.now());
  const holder = await holdFlock(deps.lockFile);
  t.teardown(() => holder.kill());
  const busy = await flushSignalQueue(deps);
  t.equal(busy.busy, true);
  t.equal(accepted('l1'), 0);
  await holder.kill();
  const free = await flushSignalQueue(deps);
  t.equal(free.sent, 1, 'the lock of a dead process is taken over');
  t.equal(accepted('l1'), 1);
});

t.test('two flushes and an attemptIfDue racing for one signal: sent once', async (t) => {
  const { deps } = setup(t);
  const entry = await enqueueSignal(
    deps.dir,
    { kind: 'cfn', url: server.cfnUrl('q_race'), text: BODY('race') },
    deps.policy.now(),
  );
  const results = await Promise.all([flushSignalQueue(deps), flushSignalQueue(deps), attemptIfDue(deps, entry.id)]);
  t.equal(accepted('race'), 1);
  t.equal(results[2]?.state, 'sent');
});

t.test('a corrupt file is set aside; settled files go after prune_after days, pending ones never', async (t) => {
  const { deps, captured, advance } = setup(t);
  server.answers = [503];
  const pending = await enqueueSignal(
    deps.dir,
    { kind: 'cfn', url: server.cfnUrl('q_prune'), text: BODY('p1') },
    deps.policy.now(),
  );
  const sent = await enqueueSignal(
    deps.dir,
    { kind: 'cfn', url: server.cfnUrl('q_prune'), text: BODY('p2') },
    deps.policy.now(),
  );
  writeFileSync(path.join(deps.dir, 'garbage.json'), '{"not": "a signal"');
  // Well-formed JSON with a field of the wrong type (the URL a number): not cast, set aside too.
  const { id: _id, ...rest } = pending;
  writeFileSync(path.join(deps.dir, 'wrong-type.json'), JSON.stringify({ ...rest, id: 'wrong-type', url: 5 }));
  await flushSignalQueue(deps);
  t.ok(
    readdirSync(deps.dir).some((n) => n.startsWith('garbage.json.corrupt-')),
    'set aside',
  );
  t.ok(
    readdirSync(deps.dir).some((n) => n.startsWith('wrong-type.json.corrupt-')),
    'a field of the wrong type: set aside',
  );
  t.ok(captured.lines.some((l) => l.msg === 'queued signal file is corrupt; set aside'));
  t.equal((await readQueuedSignal(deps.dir, sent.id))?.state, 'sent');
  t.equal((await readQueuedSignal(deps.dir, pending.id))?.state, 'pending', 'the one that met the 503');
  // Two days on: the pending one is due and sent now (settled today: kept); the one sent two days ago is pruned.
  advance(2 * 86_400_000);
  await flushSignalQueue(deps);
  t.same(
    readdirSync(deps.dir).filter((n) => n.endsWith('.json')),
    [`${pending.id}.json`],
  );
  t.equal((await readQueuedSignal(deps.dir, pending.id))?.state, 'sent');
  const aside = readdirSync(deps.dir).find((n) => n.startsWith('garbage.json.corrupt-'));
  t.equal(
    readFileSync(path.join(deps.dir, aside ?? 'missing'), 'utf8'),
    '{"not": "a signal"',
    'the corrupt file is kept as it was, for the operator',
  );
});

t.test('native signal: POST with X-Auth-Token; the token never reaches the log', async (t) => {
  const { deps, captured } = setup(t);
  await enqueueSignal(
    deps.dir,
    {
      kind: 'native',
      url: server.nativeUrl('q_native'),
      token: server.token,
      text: '{"status": "SUCCESS", "id": "n"}',
    },
    deps.policy.now(),
  );
  const wrongToken = await enqueueSignal(
    deps.dir,
    { kind: 'native', url: server.nativeUrl('q_native'), token: 'gAAAAA-wrong-token', text: '{"status": "SUCCESS"}' },
    deps.policy.now(),
  );
  const report = await flushSignalQueue(deps);
  t.same({ sent: report.sent, failed: report.failed }, { sent: 1, failed: 1 });
  t.ok(server.handles.get('q_native')?.has('n'));
  t.match((await readQueuedSignal(deps.dir, wrongToken.id))?.lastError, /answered 401/);
  t.notMatch(captured.text(), server.token);
  t.notMatch(captured.text(), 'gAAAAA-wrong-token', 'a token read from a queue file is scrubbed too');
});

t.test('a move the signal table does not have is refused before the file is written', async (t) => {
  const { deps } = setup(t);
  const entry = await enqueueSignal(
    deps.dir,
    { kind: 'cfn', url: server.cfnUrl('q_table'), text: BODY('t1') },
    deps.policy.now(),
  );
  t.equal(entry.state, 'pending', 'queued: pending');
  const file = path.join(deps.dir, `${entry.id}.json`);
  // A settled entry handed to an attempt (its caller checks it is due): no event of the table leaves `sent`.
  const sent = { ...entry, state: 'sent' as const };
  writeFileSync(file, JSON.stringify(sent));
  server.answers = [503];
  await t.rejects(attemptQueuedSignal(sent, deps), {
    code: 'ERR_SIGNAL_TRANSITION',
    name: 'SignalTransitionError',
    signalId: entry.id,
    from: 'sent',
    event: 'attempt-failed',
  });
  t.same(JSON.parse(readFileSync(file, 'utf8')), sent, 'the file is as it was');
});
