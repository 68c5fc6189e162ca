import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runScript } from '../../src/refresh/run-script.js';
import { pidGone } from '../helpers/fault-daemon.js';
import { writeScript } from './phase-fixtures.js';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

t.test('exit status, environment and no arguments', async (t) => {
  const dir = t.testdir({});
  const out = path.join(dir, 'out');
  writeScript(path.join(dir, 's'), `#!/bin/sh\necho "$# $GREETING" > '${out}'\nexit 3\n`);
  const r = await runScript({ file: path.join(dir, 's'), env: { ...ENV, GREETING: 'hello' }, output: 'ignore' });
  t.equal(r.exitCode, 3);
  t.equal(r.signal, null);
  t.equal(r.timedOut, false);
  t.ok(r.seconds >= 0);
  t.equal(readFileSync(out, 'utf8'), '0 hello\n');
});

t.test('a script that cannot be started reports the spawn error', async (t) => {
  const dir = t.testdir({});
  writeScript(path.join(dir, 'noexec'), '#!/bin/sh\n', 0o644);
  const r = await runScript({ file: path.join(dir, 'noexec'), env: ENV, output: 'ignore' });
  t.equal(r.exitCode, null);
  t.equal(r.spawnError, 'EACCES');
});

t.test('the deadline kills the whole process group, background children included', async (t) => {
  const dir = t.testdir({});
  const pidFile = path.join(dir, 'bg.pid');
  writeScript(path.join(dir, 's'), `#!/bin/bash\nsleep 300 &\necho $! > '${pidFile}'\nsleep 300\n`);
  const started = runScript({
    file: path.join(dir, 's'),
    env: ENV,
    deadline: performance.now() + 300,
    output: 'ignore',
  });
  const r = await started;
  t.equal(r.timedOut, true);
  t.equal(r.signal, 'SIGKILL');
  t.ok(existsSync(pidFile));
  const bg = Number(readFileSync(pidFile, 'utf8'));
  t.ok(await pidGone(bg, 5000), 'the background sleep died with the group');
});

t.test('abort sends SIGTERM to the group', async (t) => {
  const dir = t.testdir({});
  const ready = path.join(dir, 'ready');
  writeScript(
    path.join(dir, 's'),
    `#!/bin/bash\ntrap 'exit 42' TERM\ntouch '${ready}'\nwhile true; do sleep 0.05; done\n`,
  );
  const controller = new AbortController();
  const p = runScript({ file: path.join(dir, 's'), env: ENV, signal: controller.signal, output: 'ignore' });
  for (let i = 0; i < 200 && !existsSync(ready); i++) await new Promise((r) => setTimeout(r, 25));
  controller.abort();
  const r = await p;
  t.equal(r.aborted, true);
  t.equal(r.exitCode, 42, 'the script got SIGTERM first and could clean up');
});

t.test("a phase script is told to the daemon's watchdog: its start with the time left, and its end", async (t) => {
  // A script that runs longer than [agent] watchdog_stall is progress while it is within the refresh timeout (or
  // for as long as it runs without one), as every process the agent starts (docs/systemd.md).
  const { observeProcesses } = await import('../../src/util/process-group.js');
  const seen: Array<[string, number, number?]> = [];
  const stop = observeProcesses({
    started: (pid, timeoutMs) => seen.push(['start', pid, timeoutMs]),
    ended: (pid) => seen.push(['end', pid]),
  });
  t.teardown(stop);
  const dir = t.testdir({});
  writeScript(path.join(dir, 's'), '#!/bin/sh\nexit 0\n');
  await runScript({ file: path.join(dir, 's'), env: ENV, output: 'ignore', deadline: performance.now() + 60_000 });
  await runScript({ file: path.join(dir, 's'), env: ENV, output: 'ignore' });
  t.equal(seen.length, 4);
  const [first, firstEnd, second, secondEnd] = seen;
  t.equal(first?.[0], 'start');
  t.ok(first![2]! > 55_000 && first![2]! <= 60_000, `the time left to the deadline (${first![2]} ms)`);
  t.same(firstEnd, ['end', first![1]]);
  t.same(second, ['start', second![1], 0], 'no deadline: no limit');
  t.same(secondEnd, ['end', second![1]]);
});
