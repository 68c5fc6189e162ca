import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { PhaseFailedError, RefreshLockedError } from '../../src/refresh/refresh-errors.js';
import { runRefresh, type RunRefreshOptions } from '../../src/refresh/run-refresh.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { pidGone } from '../helpers/fault-daemon.js';
import { captureLog } from '../helpers/log-capture.js';
import { readTrace, traceScript, writeScript } from './phase-fixtures.js';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

function setup(t: TapTest) {
  const root = t.testdir({});
  const base = path.join(root, 'base');
  mkdirSync(base);
  const trace = path.join(root, 'trace');
  const captured = captureLog();
  const opts = (extra: Partial<RunRefreshOptions> = {}): RunRefreshOptions => ({
    baseDir: base,
    lockfile: path.join(root, 'run', 'orc.lock'),
    timeoutSeconds: 0,
    env: ENV,
    log: captured.log,
    signal: new AbortController().signal,
    scriptOutput: 'ignore',
    ...extra,
  });
  const script = (rel: string, o: Parameters<typeof traceScript>[1] = {}) =>
    writeScript(path.join(base, rel), traceScript(trace, o));
  return { root, base, trace, captured, opts, script };
}

t.test('all four phases in order, missing ones skipped, lock file left empty', async (t) => {
  const { trace, opts, script, root } = setup(t);
  script('migration.d/10-m');
  script('post-configure.d/10-p');
  script('pre-configure.d/10-pre');
  script('configure.d/10-c');
  script('error.d/10-e');
  await runRefresh(opts());
  t.same(readTrace(trace), ['pre-configure.d/10-pre', 'configure.d/10-c', 'post-configure.d/10-p', 'migration.d/10-m']);
  t.equal(statSync(path.join(root, 'run', 'orc.lock')).size, 0);
});

t.test('phases and includeMigration select what runs (upstream order kept)', async (t) => {
  const { trace, opts, script } = setup(t);
  script('pre-configure.d/10-pre');
  script('configure.d/10-c');
  script('migration.d/10-m');
  await runRefresh(opts({ phases: ['migration', 'configure'] }));
  t.same(readTrace(trace), ['configure.d/10-c', 'migration.d/10-m']);
  writeFileSync(trace, '');
  await runRefresh(opts({ includeMigration: false }));
  t.same(readTrace(trace), ['pre-configure.d/10-pre', 'configure.d/10-c']);
});

t.test('a failure runs error.d with environment.d, skips later phases, throws exit code 1', async (t) => {
  const { base, trace, opts, script, captured } = setup(t);
  mkdirSync(path.join(base, 'environment.d'));
  writeFileSync(path.join(base, 'environment.d', '10-x'), 'export ORC_TEST=from-env\n');
  script('configure.d/10-fail', { exit: 5 });
  script('configure.d/20-never');
  script('post-configure.d/10-never');
  script('error.d/10-handler', { show: 'ORC_TEST' });
  script('error.d/20-handler-fails', { exit: 9 });
  const err = await runRefresh(opts()).catch((e: unknown) => e);
  t.ok(err instanceof PhaseFailedError);
  t.equal((err as PhaseFailedError).exitCode, 1);
  t.match((err as PhaseFailedError).details, { phase: 'configure', script: '10-fail', scriptExitCode: 5 });
  t.same(readTrace(trace), ['configure.d/10-fail', 'error.d/10-handler ORC_TEST=from-env', 'error.d/20-handler-fails']);
  const msgs = captured.lines.map((l) => l.msg);
  t.ok(
    msgs.includes('phase failed') &&
      msgs.includes('calling error handlers') &&
      msgs.includes('error handler failed') &&
      msgs.includes('aborting refresh'),
  );
});

t.test('a failing in-process step runs error.d too', async (t) => {
  const { trace, opts, script } = setup(t);
  script('error.d/10-handler');
  await t.rejects(
    runRefresh(
      opts({
        inProcessSteps: [
          { phase: 'configure', name: '55-heat-config', run: async () => Promise.reject(new Error('deploy failed')) },
        ],
      }),
    ),
    { code: 'ERR_PHASE_FAILED' },
  );
  t.same(readTrace(trace), ['error.d/10-handler']);
});

t.test('in-process steps see environment.d and replace same-name files in configure', async (t) => {
  const { base, trace, opts, script } = setup(t);
  mkdirSync(path.join(base, 'environment.d'));
  writeFileSync(path.join(base, 'environment.d', '10-x'), 'export ORC_TEST=visible\n');
  script('configure.d/10-a');
  script('configure.d/20-os-apply-config');
  script('configure.d/55-heat-config');
  script('configure.d/90-z');
  const seen: string[] = [];
  const step = (name: string) => ({
    phase: 'configure' as const,
    name,
    run: async (env: Readonly<Record<string, string>>) => void seen.push(`${name}:${env.ORC_TEST}`),
  });
  await runRefresh(opts({ inProcessSteps: [step('55-heat-config'), step('20-os-apply-config')] }));
  t.same(readTrace(trace), ['configure.d/10-a', 'configure.d/90-z']);
  t.same(seen, ['20-os-apply-config:visible', '55-heat-config:visible']);
});

t.test('lock contention throws RefreshLockedError (exit 11) and runs nothing', async (t) => {
  const { root, trace, opts, script } = setup(t);
  script('configure.d/10-c');
  const lockfile = path.join(root, 'held.lock');
  writeFileSync(lockfile, '');
  const holder = spawn('flock', ['--nonblock', '--close', lockfile, 'sh', '-c', 'echo held; exec sleep 30'], {
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  });
  t.teardown(() => {
    try {
      process.kill(-holder.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
  const err = await runRefresh(opts({ lockfile })).catch((e: unknown) => e);
  t.ok(err instanceof RefreshLockedError);
  t.equal((err as RefreshLockedError).exitCode, 11);
  t.same(readTrace(trace), []);
});

t.test('timeout kills the running script with its background child, then error.d runs', async (t) => {
  const { root, trace, opts, script, captured } = setup(t);
  const pidFile = path.join(root, 'bg.pid');
  script('configure.d/10-hang', { extra: `sleep 300 &\necho $! > '${pidFile}'\nsleep 300` });
  script('configure.d/20-never');
  script('error.d/10-handler');
  await t.rejects(runRefresh(opts({ timeoutSeconds: 1 })), {
    code: 'ERR_PHASE_FAILED',
    details: { timedOut: true, script: '10-hang' },
  });
  t.same(readTrace(trace), ['configure.d/10-hang', 'error.d/10-handler']);
  t.ok(existsSync(pidFile));
  const bg = Number(readFileSync(pidFile, 'utf8'));
  t.ok(await pidGone(bg, 5000), 'the background child died with the group');
  t.ok(captured.lines.some((l) => l.msg === 'refresh timeout reached' && l.timeoutSeconds === 1));
});

t.test('shutdown (abort) stops the run without error.d', async (t) => {
  const { root, trace, opts, script } = setup(t);
  const ready = path.join(root, 'ready');
  script('configure.d/10-wait', { extra: `touch '${ready}'\nsleep 300` });
  script('error.d/10-handler');
  const controller = new AbortController();
  const p = runRefresh(opts({ signal: controller.signal }));
  for (let i = 0; i < 200 && !existsSync(ready); i++) await new Promise((r) => setTimeout(r, 25));
  controller.abort();
  await t.rejects(p, { code: 'ERR_PHASE_FAILED', details: { aborted: true } });
  t.same(readTrace(trace), ['configure.d/10-wait']);
});
