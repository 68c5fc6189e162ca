import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { moveTo } from '../helpers/state-path.js';
import { claimDaemon, daemonPresenceFile } from '../../src/status/daemon-presence.js';
import { queuedSignal } from '../../src/signals/outbox.js';
import { enqueueSignal } from '../../src/signals/cfn-signal-queue/files.js';
import { signalQueueDir } from '../../src/state/signal-queue-paths.js';
import { storeFor } from '../../src/state/store.js';
import { agentStatusPath } from '../../src/status/agent-facts.js';
import { formatReport } from '../../src/status/format.js';
import { readReport, verdictOfDeployment } from '../../src/status/report.js';
import { EXIT, verdictOf } from '../../src/status/verdict.js';
import { VERSION } from '../../src/version.js';
import { deployConfig } from '../helpers/deploy-fixtures.js';
import { captureLog } from '../helpers/log-capture.js';

// The whole status report from real state files (records, the cfn-signal queue, the daemon's facts and pid file), and
// the verdict `status` exits with.

type Test = Parameters<Parameters<typeof import('tap').test>[0]>[0];
const f = (id: string, name: string) => ({ id, name, group: 'script', action: 'CREATE' });
const sent = { state: 'sent', transport: 'CFN_SIGNAL', attempts: 1, sentAt: '2026-02-01T10:00:03.000Z' } as const;
const target = {
  transport: 'HEAT_SIGNAL',
  authUrl: 'http://ks/v3',
  userId: 'u',
  password: 'hunter2-secret',
  projectId: 'p',
  stackId: 's/1',
  resourceName: 'r',
} as const;

async function fixture(t: Test) {
  const root = t.testdir();
  const loaded = await deployConfig(root);
  const store = storeFor(loaded.config, captureLog().log);
  await store.init();
  return { root, loaded, store, report: () => readReport(loaded, captureLog().log) };
}

/** A daemon that runs (this process, by its pid file) and has finished a cycle (its published facts). */
async function runningAgent(t: Test, loaded: Awaited<ReturnType<typeof deployConfig>>): Promise<void> {
  const withdraw = await claimDaemon(daemonPresenceFile(loaded.config));
  t.teardown(withdraw);
  const file = agentStatusPath(loaded.paths);
  mkdirSync(path.dirname(file), { recursive: true });
  const cycle = { startedAt: '2026-02-01T10:01:00.000Z', endedAt: '2026-02-01T10:01:01.000Z' };
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      pid: process.pid,
      startedAt: '2026-02-01T10:00:00.000Z',
      mode: 'run',
      lastCycle: { ...cycle, result: 'unchanged', exitCode: 0 },
      sources: [],
    }),
  );
}

t.test('nothing known and no agent: not "all done", the agent has not run here (2)', async (t) => {
  const { report } = await fixture(t);
  const r = await report();
  t.same(r, {
    version: 1,
    agentVersion: VERSION,
    agent: { running: false, hasRun: false },
    sources: [],
    deployments: [],
    signals: [],
  });
  const v = verdictOf(r);
  t.equal(v.exitCode, EXIT.agentOrSignalError);
  t.equal(v.summary, 'the agent has not run here');
  t.match(v.reasons, [/nothing shows that the agent ever ran here/]);
  t.same(verdictOf(r, { awaitAgent: true }), { exitCode: 0, summary: 'all done and signalled', reasons: [] });
});

t.test('a metadata cache is a trace of the agent: nothing to do is then all done (0)', async (t) => {
  const { loaded, report } = await fixture(t);
  mkdirSync(loaded.config.DEFAULT.cachedir, { recursive: true });
  writeFileSync(path.join(loaded.config.DEFAULT.cachedir, 'os_config_files.json'), '[]');
  const r = await report();
  t.equal(r.agent.hasRun, true);
  t.same(verdictOf(r), { exitCode: EXIT.done, summary: 'all done and signalled', reasons: [] });
});

t.test('work in progress with no agent running: an error that says so (2), the work listed', async (t) => {
  const { store, report } = await fixture(t);
  await store.create(f('a', 'alpha'));
  const v = verdictOf(await report());
  t.equal(v.exitCode, EXIT.agentOrSignalError);
  t.equal(v.summary, 'not finished, and no agent is running to finish it');
  t.match(v.reasons, [/^no agent is running to finish this: start it/, 'deployment a (alpha) is pending']);
  t.match(formatReport(await report(), v), /^RESULT: not finished, and no agent is running to finish it \(exit 2\)$/m);
  t.equal(verdictOf(await report(), { awaitAgent: true }).exitCode, EXIT.waiting, 'waiting for an agent to come: 3');
});

t.test('each in-progress state keeps the verdict at waiting (3) while an agent runs, and says which', async (t) => {
  // One root each (a subtest's own directory), each with the daemon's claim on it.
  for (const state of ['pending', 'running', 'applied', 'awaiting-reboot'] as const)
    await t.test(state, async (t) => {
      const { loaded, store, report } = await fixture(t);
      await runningAgent(t, loaded);
      const a = await store.create(f('a', 'alpha'));
      if (state !== 'pending') await moveTo(store, a, state);
      const v = verdictOf(await report());
      t.equal(v.exitCode, 3, state);
      t.match(v.reasons[0], `deployment a (alpha) is ${state}`);
    });
  const { loaded, store, report } = await fixture(t);
  await runningAgent(t, loaded);
  const b = await store.create(f('b', 'beta'));
  await moveTo(store, b, 'done', { failed: false, signal: queuedSignal(target, '{"deploy_stdout": "body"}') });
  const r = await report();
  t.equal(verdictOf(r).exitCode, 3, 'done but its signal pending: still waiting');
  t.same(
    r.signals.map((s) => [s.kind, s.id, s.state, s.to]),
    [['deployment', 'b', 'pending', 'HEAT_SIGNAL']],
  );
  t.notMatch(JSON.stringify(r), /hunter2-secret|"body"/, 'neither the signal target nor its body');
});

t.test('finished: 0 when all signalled, 1 when one failed, 2 when a signal failed for good', async (t) => {
  const { store, report } = await fixture(t);
  const a = await store.create(f('a', 'alpha'));
  await moveTo(store, a, 'signalled', { failed: false, exitCode: 0, signal: sent });
  t.equal(verdictOf(await report()).exitCode, 0);
  const b = await store.create(f('b', 'beta'));
  await moveTo(store, b, 'signalled', { failed: true, exitCode: 3, statusCode: '3', signal: sent });
  const failed = verdictOf(await report());
  t.equal(failed.exitCode, 1);
  t.same(failed.reasons, ['deployment b (beta) failed with status 3']);
  t.equal(failed.summary, 'a deployment failed');
  const c = await store.create(f('c', 'gamma'));
  await moveTo(store, c, 'done', {
    failed: false,
    lastError: 'HTTP 403 from Heat; the answer is final, not retried',
    signal: { state: 'failed', transport: 'HEAT_SIGNAL', attempts: 1, lastStatus: 403 },
  });
  const r = await report();
  const v = verdictOf(r);
  t.equal(v.exitCode, 2, 'an undelivered signal outranks a failed deployment');
  t.match(v.reasons[0], /deployment signal c failed for good: HTTP 403/);
  t.same(
    r.signals.map((s) => [s.id, s.state, s.lastStatus]),
    [['c', 'failed', 403]],
  );
  const text = formatReport(r, v);
  t.match(text, /^AGENT: not running$/m);
  t.match(text, /^UNDELIVERED SIGNALS\nKIND\s+ID\s+NAME\s+STATE/m);
  t.match(text, /^deployment\s+c\s+gamma\s+failed\s+HEAT_SIGNAL\s+1\s+-\s+HTTP 403/m);
  t.match(text, /^RESULT: an error in the agent, or a signal not delivered \(exit 2\)$/m);
  t.match(text, /^ {2}deployment b \(beta\) failed with status 3$/m, 'the failure is listed too');
  const removed = await store.create(f('d', 'old'));
  await store.transition(removed, 'left-metadata', { failed: true, stateBeforeRemoval: 'signalled' });
  t.equal(verdictOf(await report()).exitCode, 2, 'a removed deployment changes nothing');
});

t.test('a failure outranks what is still in progress: exit 1, and both are listed', async (t) => {
  const { loaded, store, report } = await fixture(t);
  await runningAgent(t, loaded);
  const a = await store.create(f('a', 'alpha'));
  await moveTo(store, a, 'signalled', { failed: true, exitCode: 0, statusCode: '1', signal: sent });
  const b = await store.create(f('b', 'beta'));
  await store.transition(await store.transition(b, 'hook-started', { hookStarts: 1 }), 'hook-finished', {
    failed: true,
    exitCode: 0,
    statusCode: '2',
    signal: queuedSignal(target, '{}'),
  });
  await store.create(f('c', 'gamma'));
  const r = await report();
  const v = verdictOf(r);
  t.equal(v.exitCode, EXIT.deploymentFailed);
  t.equal(v.summary, '2 deployments failed');
  t.same(v.reasons, [
    'deployment a (alpha) failed with status 1',
    'deployment b (beta) failed with status 2',
    'deployment c (gamma) is pending',
    'deployment signal b is not delivered yet (0 attempts)',
  ]);
  const json = JSON.parse(JSON.stringify({ ...r, result: v })) as { result: { reasons: string[] } };
  t.equal(json.result.reasons.length, 4, '--json lists them all too');
});

t.test(
  'one deployment (status <id>): its own signal counts — pending is waiting (3), failed for good is an error (2)',
  async (t) => {
    const { loaded, store, report } = await fixture(t);
    await runningAgent(t, loaded);
    const agent = (await report()).agent;
    const a = await store.create(f('a', 'alpha'));
    const done = await store.transition(await store.transition(a, 'hook-started', { hookStarts: 1 }), 'hook-finished', {
      failed: false,
      exitCode: 0,
      signal: { state: 'pending', transport: 'CFN_SIGNAL', attempts: 1 },
    });
    const one = (await report()).deployments[0]!;
    t.equal(one.state, 'done');
    t.match(
      verdictOfDeployment(one, agent),
      { exitCode: EXIT.waiting, reasons: [/deployment signal a is not delivered yet \(1 attempt\)$/] },
      'finished but not signalled: still waiting',
    );
    t.match(
      verdictOfDeployment(one, { running: false }),
      { exitCode: EXIT.agentOrSignalError, reasons: [/^no agent is running to finish this/] },
      'with no agent to deliver it: an error',
    );
    await store.moveSignal(
      done,
      'gave-up',
      { transport: 'CFN_SIGNAL', attempts: 2, lastStatus: 403 },
      { lastError: 'HTTP 403 from Heat' },
    );
    t.equal(
      verdictOfDeployment((await report()).deployments[0]!, agent).exitCode,
      EXIT.agentOrSignalError,
      'its signal failed for good',
    );
    const b = await store.create(f('b', 'beta'));
    await moveTo(store, b, 'signalled', { failed: true, exitCode: 3, statusCode: '3', signal: sent });
    t.equal(
      verdictOfDeployment(
        (await report()).deployments.find((d) => d.id === 'b')!,
        agent,
      ).exitCode,
      EXIT.deploymentFailed,
      'signalled, failed: 1, whatever the others',
    );
  },
);

t.test('cfn-signal queue entries: pending waits, failed is an error, sent is history; no URL secrets', async (t) => {
  const { loaded, report } = await fixture(t);
  await runningAgent(t, loaded);
  const dir = signalQueueDir(loaded.config);
  const url = 'http://127.0.0.1:1/v1/signal/arn?Signature=s3cr3t-sig&AWSAccessKeyId=AK';
  const entry = await enqueueSignal(dir, { kind: 'cfn', url, text: '{"Status":"SUCCESS"}' }, Date.now());
  let r = await report();
  t.equal(verdictOf(r).exitCode, 3);
  t.same(
    r.signals.map((s) => [s.kind, s.id, s.state]),
    [['cfn-signal', entry.id, 'pending']],
  );
  t.notMatch(JSON.stringify(r), 's3cr3t-sig');
  const file = path.join(dir, `${entry.id}.json`);
  const settle = (state: string) =>
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        id: entry.id,
        kind: 'cfn',
        state,
        shownUrl: entry.shownUrl,
        createdAt: entry.createdAt,
        updatedAt: entry.createdAt,
        attempts: 5,
        lastError: 'HTTP 500',
      }),
    );
  settle('failed');
  r = await report();
  t.equal(verdictOf(r).exitCode, 2);
  t.same(
    r.signals.map((s) => [s.state, s.attempts, s.lastError]),
    [['failed', 5, 'HTTP 500']],
  );
  settle('sent');
  r = await report();
  t.same(r.signals, []);
  t.equal(verdictOf(r).exitCode, 0);
  writeFileSync(path.join(dir, 'broken.json'), '{not json');
  t.equal(verdictOf(await report()).exitCode, 0, 'an unreadable queue file is skipped, not fatal');
});

t.test('the agent: running by its pid file, its published facts, and an agent error', async (t) => {
  const { loaded, store, report } = await fixture(t);
  const facts = {
    version: 1,
    pid: process.pid,
    startedAt: '2026-02-01T10:00:00.000Z',
    mode: 'run',
    lastCycle: {
      startedAt: '2026-02-01T10:01:00.000Z',
      endedAt: '2026-02-01T10:01:01.000Z',
      result: 'failed',
      exitCode: 1,
    },
    nextPollAt: new Date(Date.now() + 3_600_000).toISOString(),
    pollingIntervalSeconds: 30,
    sources: [
      {
        name: 'heat',
        lastErrorAt: '2026-02-01T10:01:00.500Z',
        lastErrorCode: 'ERR_SOURCE_UNAVAILABLE',
        lastError: 'connection refused',
        consecutiveFailures: 4,
      },
    ],
  };
  const file = agentStatusPath(loaded.paths);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(facts));
  let r = await report();
  t.equal(r.agent.running, false, 'facts without a live pid file or start time: not running');
  t.notOk(r.agent.nextPollAt, 'a stopped agent has no next poll');
  t.same(r.agent.lastCycle, facts.lastCycle, 'but its last cycle is still told');
  t.equal(verdictOf(r).exitCode, 0, 'the failed cycle of a stopped agent is no error now');
  const withdraw = await claimDaemon(daemonPresenceFile(loaded.config));
  t.teardown(withdraw);
  writeFileSync(file, JSON.stringify({ ...facts, pid: 1 }));
  r = await report();
  t.equal(r.agent.running, true);
  t.notOk(r.agent.lastCycle, "facts of another process are not the running daemon's");
  t.same(
    verdictOf(r),
    { exitCode: 3, summary: 'still in progress', reasons: ['the agent has not finished its first cycle yet'] },
    'a daemon before its first cycle: waiting',
  );
  writeFileSync(file, JSON.stringify(facts));
  r = await report();
  t.same(r.agent, {
    running: true,
    pid: process.pid,
    startedAt: facts.startedAt,
    mode: 'run',
    lastCycle: facts.lastCycle,
    nextPollAt: facts.nextPollAt,
    pollingIntervalSeconds: 30,
    hasRun: true,
  });
  t.same(r.sources, facts.sources);
  const v = verdictOf(r);
  t.equal(v.exitCode, 2);
  t.match(v.reasons[0], /last cycle failed \(exit code 1\)/);
  t.equal(v.summary, "the agent's last cycle failed");
  const text = formatReport(r, v);
  t.match(text, new RegExp(`^AGENT: running \\(pid ${process.pid}, run mode, since 2026-02-01T10:00:00Z\\)$`, 'm'));
  t.match(text, new RegExp(`^ {2}next poll: ${facts.nextPollAt.replace(/\.\d{3}Z$/, 'Z')}$`, 'm'));
  writeFileSync(file, JSON.stringify({ ...facts, nextPollAt: '2026-02-01T10:01:31.000Z' }));
  r = await report();
  t.notOk(r.agent.nextPollAt, 'a next poll already past (an idle daemon rewrites its facts every 30 s) is not shown');
  t.match(formatReport(r, verdictOf(r)), /^ {2}next poll: within 30 s$/m);
  writeFileSync(file, JSON.stringify(facts));
  t.match(text, /^heat\s+-\s+4\s+2026-02-01T10:01:00Z\s+ERR_SOURCE_UNAVAILABLE\s+connection refused$/m);
  await store.create(f('a', 'alpha'));
  t.equal(verdictOf(await report()).exitCode, 3, 'waiting outranks the agent error: the next cycle may succeed');
  writeFileSync(file, '{"version": 2}');
  r = await report();
  t.same(r.sources, [], 'facts of another version are not shown');
  t.equal(r.agent.running, true);
});

t.test('a source with an entry under a reserved name is an error (2), though its other data is used', async (t) => {
  const lastCycle = { startedAt: '2026-02-01T10:00:00.000Z', endedAt: '2026-02-01T10:00:01.000Z' };
  const agent = { running: true, lastCycle: { ...lastCycle, result: 'applied', exitCode: 0 } } as const;
  const base = { version: 1, agentVersion: VERSION, agent, deployments: [], signals: [] } as const;
  const source = { name: 'local', consecutiveFailures: 0, lastSuccessAt: '2026-02-01T10:00:00.000Z' };
  t.equal(verdictOf({ ...base, sources: [source] }).exitCode, 0);
  const reserved = {
    ...source,
    consecutiveFailures: 1,
    lastErrorCode: 'ERR_RESERVED_NAME',
    lastError: 'a local file named "heat_local" from local was left out',
  };
  t.match(verdictOf({ ...base, sources: [reserved] }), {
    exitCode: EXIT.agentOrSignalError,
    reasons: ['source local: a local file named "heat_local" from local was left out'],
  });
  t.equal(verdictOf({ ...base, sources: [{ ...reserved, consecutiveFailures: 0 }] }).exitCode, 0, 'renamed: done');
});

// The one secret rule in the list: the secret inputs and secret-named outputs of a deployment whose row carries text a
// run produced (an error, a re-run's reason) are registered from its files, so its name, its error or its signal's
// error that holds one shows [REDACTED] (as `status <id>` and the journal).
t.test('no secret of any deployment in the report: names, errors, text and JSON', async (t) => {
  const { store, report } = await fixture(t);
  const dbPassword = 'DbPw-report-5e1f';
  const apiToken = 'ApiTok-report-77ab';
  const a = await store.create(f('a', `app-${dbPassword}`));
  await store.writeDeployed('a', { id: 'a', inputs: [{ name: 'db_password', value: dbPassword }] });
  await store.writeNotify('a', { api_token: apiToken, deploy_status_code: 1 });
  await moveTo(store, a, 'signalled', {
    failed: true,
    exitCode: 0,
    statusCode: '1',
    lastError: `the hook said ${dbPassword} and ${apiToken}`,
    signal: sent,
  });
  const r = await report();
  const text = `${JSON.stringify(r)}\n${formatReport(r, verdictOf(r))}`;
  t.notOk(text.includes(dbPassword), 'no secret input');
  t.notOk(text.includes(apiToken), 'no secret output');
  t.match(r.deployments[0], { name: 'app-[REDACTED]', lastError: 'the hook said [REDACTED] and [REDACTED]' });
});
