import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { raiseOomScoreAdj, spawnWithOomScoreAdj } from '../../src/util/oom-score.js';
import { observeProcesses, runProcess } from '../../src/util/process-group.js';
import { scopeCommand, scopeProperties, systemdIsInit } from '../../src/util/systemd-scope.js';

// What the process starter adds for systemd: the oom_score_adj of what it starts (read back from /proc), the
// transient scope command line (through a recording fake systemd-run, since systemd is not PID 1 here; the booted
// image test runs the real one), and the start/end events the daemon's watchdog counts as progress.

// Raising needs no privilege, so the test raises children above its own value (the agent's unit lowers its own).
const own = Number.parseInt(readFileSync('/proc/self/oom_score_adj', 'utf8'), 10);
const target = Math.min(1000, own + 300);

t.test('a started process, and what it starts at once, are born with the higher oom_score_adj', async (t) => {
  // The agent raises its own value for the instant of the spawn, so the child inherits the target at fork: a tool
  // reading its value as the first thing it does sees it, and so does what it forks at once (no pause needed). Many
  // rounds, because a value written after the spawn would lose this race only now and then.
  for (let round = 0; round < 20; round++) {
    const res = await runProcess({
      file: '/bin/sh',
      args: ['-c', 'cat /proc/self/oom_score_adj & cat /proc/self/oom_score_adj; wait'],
      oomScoreAdj: target,
      timeoutMs: 10_000,
    });
    t.equal(res.exitCode, 0);
    t.same(res.stdout.trim().split('\n').map(Number), [target, target], `round ${round}`);
  }
  t.equal(
    Number.parseInt(readFileSync('/proc/self/oom_score_adj', 'utf8'), 10),
    own,
    'the agent is back at its own value',
  );
});

t.test(
  'spawnWithOomScoreAdj: the own value is raised only during the start, and not at all when not below',
  async (t) => {
    const seen = spawnWithOomScoreAdj(() => readFileSync('/proc/self/oom_score_adj', 'utf8').trim(), target, own);
    t.same(seen, { value: String(target), raiseAfter: false });
    t.equal(Number.parseInt(readFileSync('/proc/self/oom_score_adj', 'utf8'), 10), own);
    t.throws(
      () =>
        spawnWithOomScoreAdj(
          () => {
            throw new Error('spawn failed');
          },
          target,
          own,
        ),
      /spawn failed/,
    );
    t.equal(
      Number.parseInt(readFileSync('/proc/self/oom_score_adj', 'utf8'), 10),
      own,
      'restored after a failed start',
    );
    t.same(
      spawnWithOomScoreAdj(() => readFileSync('/proc/self/oom_score_adj', 'utf8').trim(), own, own),
      { value: String(own), raiseAfter: false },
    );
  },
);

t.test('no change when the agent is not below the target (nothing to raise)', async (t) => {
  t.equal(raiseOomScoreAdj(process.pid, own, own), false);
  t.equal(raiseOomScoreAdj(process.pid, own - 1, own), false);
  const res = await runProcess({
    file: '/bin/sh',
    args: ['-c', 'cat /proc/self/oom_score_adj'],
    oomScoreAdj: own,
    timeoutMs: 10_000,
  });
  t.equal(Number(res.stdout.trim()), own);
});

t.test('scope properties: only the limits that are set, in systemd syntax', async (t) => {
  t.same(scopeProperties({ memoryMax: '', cpuQuota: '', tasksMax: 0 }), []);
  t.same(scopeProperties({ memoryMax: ' 512M ', cpuQuota: '50%', tasksMax: 64 }), [
    'MemoryMax=512M',
    'CPUQuota=50%',
    'TasksMax=64',
  ]);
  t.same(scopeCommand('/usr/bin/puppet', ['apply', 'x.pp'], ['TasksMax=8']), {
    file: 'systemd-run',
    args: ['--scope', '--quiet', '--collect', '-p', 'TasksMax=8', '--', '/usr/bin/puppet', 'apply', 'x.pp'],
  });
  t.equal(systemdIsInit(path.join(tmpdir(), 'no-such-systemd-dir')), false);
});

t.test('with a recording fake systemd-run: the tool runs in its place, same pid, killed at its timeout', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oca-scope-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const record = path.join(dir, 'argv');
  // As the real one: takes its options, then executes the command after `--` in its own place.
  writeFileSync(
    path.join(dir, 'systemd-run'),
    `#!/bin/sh\nprintf '%s\\n' "$@" > ${record}\nwhile [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n`,
  );
  chmodSync(path.join(dir, 'systemd-run'), 0o755);
  const env = { PATH: `${dir}:/usr/bin:/bin` };

  let spawned: number | undefined;
  const ok = await runProcess({
    file: '/bin/sh',
    args: ['-c', 'echo $$'],
    env,
    scopeProperties: ['MemoryMax=64M', 'TasksMax=16'],
    timeoutMs: 10_000,
    onSpawn: (p) => (spawned = p),
  });
  t.equal(ok.exitCode, 0);
  t.equal(Number(ok.stdout.trim()), spawned, "the pid recorded is the tool's");
  t.same(readFileSync(record, 'utf8').trim().split('\n'), [
    '--scope',
    '--quiet',
    '--collect',
    '-p',
    'MemoryMax=64M',
    '-p',
    'TasksMax=16',
    '--',
    '/bin/sh',
    '-c',
    'echo $$',
  ]);

  const slow = await runProcess({
    file: '/bin/sleep',
    args: ['30'],
    env,
    scopeProperties: ['TasksMax=16'],
    timeoutMs: 200,
    killGraceMs: 500,
  });
  t.equal(slow.timedOut, true);
  t.equal(slow.signal, 'SIGTERM');
});

t.test('observers hear each start (with its timeout) and each end', async (t) => {
  const events: string[] = [];
  const stop = observeProcesses({
    started: (pid, ms) => events.push(`start ${pid} ${ms}`),
    ended: (pid) => events.push(`end ${pid}`),
  });
  let pid = 0;
  await runProcess({ file: '/bin/true', timeoutMs: 5000, onSpawn: (p) => (pid = p) });
  stop();
  await runProcess({ file: '/bin/true' });
  t.same(events, [`start ${pid} 5000`, `end ${pid}`]);
});
