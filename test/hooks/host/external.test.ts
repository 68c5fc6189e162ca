import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runHook } from '../../../src/hooks/host/external.js';
import { FIXTURE_HOOKS } from '../../helpers/deploy-fixtures.js';
import { pidAlive, pidGone } from '../../helpers/fault-daemon.js';

// The hook runner against real processes: stdin, output capture, exit codes, signals, timeouts that kill the whole
// process group, shutdown, spawn failures.

const fake = path.join(FIXTURE_HOOKS, 'fake');
const input = (config: unknown, id = 'dep-1') =>
  JSON.stringify({ id, config, inputs: [{ name: 'deploy_action', value: 'CREATE' }] });

t.test('the deployment goes in on stdin and the answer comes back from stdout', async (t) => {
  const res = await runHook({ file: fake, input: input({ echo: true, stderr: 'log line' }), timeoutMs: 10_000 });
  t.equal(res.exitCode, 0);
  t.equal(res.signal, null);
  t.notOk(res.timedOut || res.aborted || res.spawnError);
  const out = JSON.parse(res.stdout) as { received: { id: string; config: unknown } };
  t.equal(out.received.id, 'dep-1');
  t.same(out.received.config, { echo: true, stderr: 'log line' });
  t.equal(res.stderr, 'log line');
});

t.test('exit codes and an explicit environment', async (t) => {
  const res = await runHook({
    file: '/bin/sh',
    input: '',
    timeoutMs: 10_000,
    env: { ONLY_THIS: 'yes', PATH: process.env.PATH },
  });
  t.equal(res.exitCode, 0, 'sh with empty stdin exits 0');
  const dir = t.testdir({ 'env-hook': '#!/bin/sh\necho "$ONLY_THIS-${HOME:-nohome}"\nexit 3\n' });
  const { chmodSync } = await import('node:fs');
  chmodSync(path.join(dir, 'env-hook'), 0o755);
  const env = await runHook({
    file: path.join(dir, 'env-hook'),
    input: '{}',
    timeoutMs: 10_000,
    env: { ONLY_THIS: 'yes' },
  });
  t.equal(env.exitCode, 3);
  t.equal(env.stdout, 'yes-nohome\n', 'only the given environment');
});

t.test('a hook killed by a signal reports it', async (t) => {
  const res = await runHook({ file: path.join(FIXTURE_HOOKS, 'crash'), input: '{}', timeoutMs: 10_000 });
  t.equal(res.exitCode, null);
  t.equal(res.signal, 'SIGSEGV');
  t.match(res.stderr, 'about to crash');
});

t.test('timeout kills the whole process group, grandchildren included', async (t) => {
  const dir = t.testdir();
  const pidFile = path.join(dir, 'grandchild.pid');
  // Room for the fake hook (a node process) to start its grandchild and take SIGTERM on a loaded machine: with 600 ms
  // and a 200 ms grace it was killed before it started the grandchild when CPUs were busy.
  const res = await runHook({
    file: fake,
    input: input({ hang: true, grandchildPidFile: pidFile, stderr: 'x' }),
    timeoutMs: 3000,
    killGraceMs: 2000,
  });
  t.ok(res.timedOut);
  t.equal(res.signal, 'SIGTERM');
  t.ok(existsSync(pidFile), 'the grandchild was started');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  t.ok(await pidGone(pid, 2000), 'the grandchild is gone too');
});

t.test('a hook that ignores SIGTERM is killed after the grace period', async (t) => {
  const dir = t.testdir({ stubborn: "#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.05; done\n" });
  const { chmodSync } = await import('node:fs');
  chmodSync(path.join(dir, 'stubborn'), 0o755);
  const res = await runHook({ file: path.join(dir, 'stubborn'), input: '', timeoutMs: 300, killGraceMs: 200 });
  t.ok(res.timedOut);
  t.equal(res.signal, 'SIGKILL');
});

t.test('shutdown (abort) stops the hook and marks the result', async (t) => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 300);
  const res = await runHook({
    file: fake,
    input: input({ hang: true }),
    timeoutMs: 0,
    signal: controller.signal,
    killGraceMs: 200,
  });
  t.ok(res.aborted);
  t.notOk(res.timedOut);
  const already = new AbortController();
  already.abort();
  const early = await runHook({
    file: fake,
    input: input({ hang: true }),
    timeoutMs: 0,
    signal: already.signal,
    killGraceMs: 200,
  });
  t.ok(early.aborted, 'an already aborted signal stops the hook at once');
});

t.test('background processes holding the output pipes are not waited for after the hook exits', async (t) => {
  const dir = t.testdir({ daemonise: '#!/bin/sh\n(sleep 30; echo late) &\necho "$! $$" > "$0.pid"\necho started\n' });
  const { chmodSync } = await import('node:fs');
  const file = path.join(dir, 'daemonise');
  chmodSync(file, 0o755);
  const started = Date.now();
  const res = await runHook({ file, input: '', timeoutMs: 0, exitGraceMs: 200 });
  t.equal(res.exitCode, 0);
  t.equal(res.stdout, 'started\n');
  t.ok(Date.now() - started < 20_000, 'returned long before the background job ends');
  const [pid, group] = readFileSync(`${file}.pid`, 'utf8').trim().split(' ').map(Number) as [number, number];
  t.ok(pidAlive(pid), 'the background job itself is left running (the hook meant to start it)');
  process.kill(-group, 'SIGKILL');
});

t.test('output past the cap keeps its tail and never kills the hook', async (t) => {
  const res = await runHook({
    file: fake,
    input: input({ bigStderrBytes: 300_000, bigStdoutBytes: 300_000, exit: 4 }),
    timeoutMs: 10_000,
    maxBufferBytes: 100_000,
  });
  t.equal(res.exitCode, 4);
  t.ok(res.stdoutTruncated && res.stderrTruncated);
  t.equal(res.stderr.length, 100_000);
  t.match(res.stderr, /xEND-OF-OUTPUT$/);
  t.match(res.stdout, /yEND-OF-OUTPUT$/);
});

t.test('spawn failures: missing file, not executable, bad interpreter', async (t) => {
  const dir = t.testdir({ noexec: '#!/bin/sh\necho hi\n', badshebang: '#!/nonexistent/interpreter\n' });
  const { chmodSync } = await import('node:fs');
  chmodSync(path.join(dir, 'badshebang'), 0o755);
  const missing = await runHook({ file: path.join(dir, 'missing'), input: '{}', timeoutMs: 1000 });
  t.equal(missing.spawnError?.code, 'ENOENT');
  t.equal(missing.exitCode, null);
  const noexec = await runHook({ file: path.join(dir, 'noexec'), input: '{}', timeoutMs: 1000 });
  t.equal(noexec.spawnError?.code, 'EACCES');
  const bad = await runHook({ file: path.join(dir, 'badshebang'), input: '{}', timeoutMs: 1000 });
  t.ok(bad.spawnError, `bad interpreter: ${bad.spawnError?.code}`);
});

t.test('a hook that never reads stdin gets no EPIPE failure', async (t) => {
  const res = await runHook({ file: '/bin/true', input: 'x'.repeat(5_000_000), timeoutMs: 10_000 });
  t.equal(res.exitCode, 0);
  t.notOk(res.spawnError);
});
