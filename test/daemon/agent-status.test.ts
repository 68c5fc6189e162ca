import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { AgentStatusPublisher } from '../../src/daemon/agent-status.js';
import { readAgentFacts } from '../../src/status/agent-facts.js';
import { captureLog } from '../helpers/log-capture.js';

// The daemon's published facts: what each cycle writes, per-source counts, and a write failure that never stops it.

t.test('a cycle publishes its times, result, next poll and each source', async (t) => {
  const file = path.join(t.testdir(), 'run/os-config-agent/agent-status.json');
  let clock = Date.parse('2026-02-01T10:00:00Z');
  const pub = new AgentStatusPublisher(file, 'run', captureLog().log, () => clock);
  pub.cycleStarted();
  clock += 500;
  pub.source('heat', {
    ok: false,
    code: 'ERR_SOURCE_UNAVAILABLE',
    message: 'connect ECONNREFUSED http://u:pa55word@127.0.0.1:1/',
  });
  pub.source('local', { ok: true });
  clock += 500;
  await pub.cycleEnded('unchanged', 0, clock + 30_000);
  let facts = await readAgentFacts(file);
  t.match(facts, {
    version: 1,
    pid: process.pid,
    mode: 'run',
    startedAt: '2026-02-01T10:00:00.000Z',
    lastCycle: {
      startedAt: '2026-02-01T10:00:00.000Z',
      endedAt: '2026-02-01T10:00:01.000Z',
      result: 'unchanged',
      exitCode: 0,
    },
    nextPollAt: '2026-02-01T10:00:31.000Z',
  });
  t.same(
    facts?.sources.map((s) => [s.name, s.consecutiveFailures, s.lastErrorCode ?? null, s.lastSuccessAt ?? null]),
    [
      ['heat', 1, 'ERR_SOURCE_UNAVAILABLE', null],
      ['local', 0, null, '2026-02-01T10:00:00.500Z'],
    ],
  );
  t.notMatch(readFileSync(file, 'utf8'), 'pa55word', 'a credential in an error is scrubbed');
  pub.source('heat', { ok: false, code: 'ERR_SOURCE_UNAVAILABLE', message: 'again' });
  pub.source('heat', { ok: false, code: 'ERR_SOURCE_UNAVAILABLE', message: 'and again' });
  await pub.cycleEnded('failed', 1, undefined);
  facts = await readAgentFacts(file);
  t.equal(facts?.sources[0]?.consecutiveFailures, 3);
  t.equal(facts?.nextPollAt, undefined);
  pub.source('heat', { ok: true });
  await pub.cycleEnded('applied', 0, clock);
  facts = await readAgentFacts(file);
  t.match(
    facts?.sources[0],
    { consecutiveFailures: 0, lastError: 'and again', lastSuccessAt: '2026-02-01T10:00:01.000Z' },
    'recovered; the last error stays visible',
  );
  t.equal(facts?.lastCycle?.result, 'applied');
});

t.test(
  'idle polls (only times and counts moved) rewrite the file at most every 30 s; a change is written at once',
  async (t) => {
    const file = path.join(t.testdir(), 'agent-status.json');
    let clock = Date.parse('2026-02-01T10:00:00Z');
    const pub = new AgentStatusPublisher(file, 'run', captureLog().log, () => clock);
    const poll = async (ok: boolean) => {
      clock += 1000;
      pub.cycleStarted();
      pub.source('heat', ok ? { ok: true } : { ok: false, code: 'ERR_SOURCE_UNAVAILABLE', message: 'down' });
      await pub.cycleEnded('unchanged', 0, clock + 1000, 1);
      return (await readAgentFacts(file))?.writtenAt;
    };
    const first = await poll(true);
    t.equal(first, '2026-02-01T10:00:01.000Z');
    for (let i = 0; i < 29; i++) t.equal(await poll(true), first, `idle poll ${i + 2} not written`);
    t.equal(await poll(true), '2026-02-01T10:00:31.000Z', 'rewritten after 30 s');
    t.equal(await poll(false), '2026-02-01T10:00:32.000Z', 'a source failing is written at once');
    t.equal(await poll(false), '2026-02-01T10:00:32.000Z', 'still failing the same way: not');
    t.equal(await poll(true), '2026-02-01T10:00:34.000Z', 'recovery is written at once');
    t.equal((await readAgentFacts(file))?.pollingIntervalSeconds, 1);
  },
);

t.test('a file that cannot be written: warned once, the loop goes on, written again later', async (t) => {
  const dir = t.testdir();
  const blocker = path.join(dir, 'run');
  writeFileSync(blocker, 'not a directory');
  const file = path.join(blocker, 'agent-status.json');
  const cap = captureLog();
  const pub = new AgentStatusPublisher(file, 'collect', cap.log);
  for (let i = 0; i < 3; i++) {
    pub.cycleStarted();
    await pub.cycleEnded('unchanged', 0, undefined);
  }
  t.equal(
    cap.lines.filter((l) => l.msg === 'cannot write the agent status file; status will show older facts').length,
    1,
  );
  rmSync(blocker);
  mkdirSync(blocker);
  await pub.cycleEnded('applied', 0, undefined);
  t.equal((await readAgentFacts(file))?.lastCycle?.result, 'applied');
  t.equal(cap.lines.filter((l) => l.msg === 'agent status file written again').length, 1);
});
