import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { observeProcesses, runProcess } from '../../src/util/process-group.js';
import { pidGone, until } from '../helpers/fault-daemon.js';

// The process starter's choices of where output goes, what a timeout sends and what too much output does, with real
// processes. Its oom_score_adj, systemd scope and watchdog events: process-group-oom-scope.test.ts.

t.test('stdout and stderr are captured by default, or go where they are sent', async (t) => {
  const both = 'echo out; echo err >&2';
  const captured = await runProcess({ file: '/bin/sh', args: ['-c', both] });
  t.same([captured.stdout, captured.stderr], ['out\n', 'err\n']);

  const ignored = await runProcess({ file: '/bin/sh', args: ['-c', both], stdout: 'ignore', stderr: 'capture' });
  t.same([ignored.stdout, ignored.stderr], ['', 'err\n']);

  const dir = t.testdir({});
  const file = path.join(dir, 'log');
  const fd = openSync(file, 'w');
  t.teardown(() => closeSync(fd));
  const toFile = await runProcess({ file: '/bin/sh', args: ['-c', both], stdout: fd, stderr: fd });
  t.equal(toFile.exitCode, 0);
  t.same([toFile.stdout, toFile.stderr], ['', '']);
  t.equal(readFileSync(file, 'utf8'), 'out\nerr\n', 'both written to the descriptor given');
});

t.test("stdin: the input given, closed, or the agent's own", async (t) => {
  const cat = { file: '/bin/cat' };
  t.equal((await runProcess({ ...cat, input: 'metadata' })).stdout, 'metadata');
  t.equal((await runProcess(cat)).stdout, '', 'closed: cat reads end of file at once');
  // 'inherit' in a child of this test whose stdin is a file: what cat prints is that file.
  const dir = t.testdir({ 'stdin.txt': 'the agent stdin\n' });
  const script = `
    import { runProcess } from ${JSON.stringify(new URL('../../src/util/process-group.ts', import.meta.url).pathname)};
    const inherited = await runProcess({ file: '/bin/cat', stdin: 'inherit' });
    const closed = await runProcess({ file: '/bin/cat' });
    process.stdout.write(JSON.stringify([inherited.stdout, closed.stdout]));`;
  const tsLoader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'));
  const stdin = openSync(path.join(dir, 'stdin.txt'), 'r');
  t.teardown(() => closeSync(stdin));
  const child = spawnSync(process.execPath, [...tsLoader, '--input-type=module', '-e', script], {
    stdio: [stdin, 'pipe', 'pipe'],
    encoding: 'utf8',
    timeout: 60_000,
  });
  t.equal(child.status, 0, child.stderr);
  t.same(JSON.parse(child.stdout), ['the agent stdin\n', '']);
});

t.test('a timeout sends SIGTERM first, or SIGKILL at once when asked', async (t) => {
  const dir = t.testdir({});
  const script = (ready: string) => `trap 'exit 42' TERM; touch '${ready}'; while :; do sleep 0.05; done`;
  const gentle = await runProcess({ file: '/bin/bash', args: ['-c', script(path.join(dir, 'a'))], timeoutMs: 300 });
  t.equal(gentle.timedOut, true);
  t.equal(gentle.exitCode, 42, 'SIGTERM: the trap ran');
  const hard = await runProcess({
    file: '/bin/bash',
    args: ['-c', script(path.join(dir, 'b'))],
    timeoutMs: 300,
    timeoutSignal: 'SIGKILL',
  });
  t.equal(hard.timedOut, true);
  t.equal(hard.signal, 'SIGKILL', 'no trap can run');
  t.ok(hard.durationMs >= 250 && hard.durationMs < 5000, `${hard.durationMs} ms`);
});

t.test("overflow 'kill': output past the cap kills the group and says so; the default keeps the tail", async (t) => {
  const dir = t.testdir({});
  const pidFile = path.join(dir, 'bg.pid');
  const talker = `sleep 300 & echo $! > '${pidFile}'; while :; do echo 0123456789; done`;
  const killed = await runProcess({
    file: '/bin/bash',
    args: ['-c', talker],
    maxBufferBytes: 4096,
    overflow: 'kill',
    timeoutMs: 30_000,
  });
  t.equal(killed.overflowed, true);
  t.equal(killed.timedOut, false);
  t.equal(killed.signal, 'SIGKILL');
  t.equal(killed.stdoutTruncated, true);
  await until('the background pid', () => existsSync(pidFile), 5000);
  const bg = Number(readFileSync(pidFile, 'utf8'));
  t.ok(await pidGone(bg, 5000), 'what it left in the background died with the group');

  const kept = await runProcess({
    file: '/bin/sh',
    args: ['-c', 'i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done'],
    maxBufferBytes: 100,
  });
  t.equal(kept.overflowed, false);
  t.equal(kept.exitCode, 0, 'ran to its end');
  t.equal(kept.stdoutTruncated, true);
  t.ok(kept.stdout.endsWith('line-1999\n'), 'the tail is kept');
});

t.test('every process is told to observers, whatever its output or stdin', async (t) => {
  const seen: string[] = [];
  const stop = observeProcesses({
    started: (pid, timeoutMs) => seen.push(`start ${pid} ${timeoutMs}`),
    ended: (pid) => seen.push(`end ${pid}`),
  });
  t.teardown(stop);
  let pid = 0;
  await runProcess({
    file: '/bin/true',
    stdin: 'inherit',
    stdout: 'ignore',
    stderr: 2,
    timeoutMs: 7000,
    onSpawn: (p) => (pid = p),
  });
  t.same(seen, [`start ${pid} 7000`, `end ${pid}`]);
});
