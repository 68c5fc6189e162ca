import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runPhase, type InProcessStep } from '../../src/refresh/phase-runner.js';
import { PhaseFailedError } from '../../src/refresh/refresh-errors.js';
import { runPartsFilter } from '../../src/refresh/run-parts-selection.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { captureLog } from '../helpers/log-capture.js';
import { readTrace, traceScript, writeScript } from './phase-fixtures.js';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

function setup(t: TapTest) {
  const base = t.testdir({});
  const trace = path.join(base, 'trace');
  const captured = captureLog();
  const opts = (extra: Partial<Parameters<typeof runPhase>[0]> = {}) => ({
    phase: 'configure',
    dir: path.join(base, 'configure.d'),
    envDir: path.join(base, 'environment.d'),
    env: ENV,
    filter: runPartsFilter(undefined),
    signal: new AbortController().signal,
    log: captured.log,
    output: 'ignore' as const,
    ...extra,
  });
  return { base, trace, captured, opts };
}

t.test('scripts run in dib-run-parts order; skipped names and non-executables never run', async (t) => {
  const { base, trace, captured, opts } = setup(t);
  const dir = path.join(base, 'configure.d');
  for (const name of ['20-b', '10-a', 'zz', 'foo.sh', 'foo.bak', 'foo~', '09-x'])
    writeScript(path.join(dir, name), traceScript(trace));
  writeScript(path.join(dir, '15-noexec'), traceScript(trace), 0o644);
  t.equal(await runPhase(opts()), true);
  t.same(readTrace(trace), ['configure.d/zz', 'configure.d/09-x', 'configure.d/10-a', 'configure.d/20-b']);
  const finished = captured.lines.filter((l) => l.msg === 'script finished');
  t.same(
    finished.map((l) => [l.phase, l.script, l.exitCode]),
    [
      ['configure', 'zz', 0],
      ['configure', '09-x', 0],
      ['configure', '10-a', 0],
      ['configure', '20-b', 0],
    ],
  );
  t.ok(finished.every((l) => typeof l.durationMs === 'number' && Number.isInteger(l.durationMs)));
});

t.test('a missing directory is skipped; a file in its place fails the phase', async (t) => {
  const { base, opts } = setup(t);
  t.equal(await runPhase(opts()), false);
  writeFileSync(path.join(base, 'configure.d'), 'not a dir');
  await t.rejects(runPhase(opts()), { code: 'ERR_PHASE_FAILED' });
});

t.test('the first failure stops the phase with the script named', async (t) => {
  const { base, trace, opts } = setup(t);
  const dir = path.join(base, 'configure.d');
  writeScript(path.join(dir, '10-ok'), traceScript(trace));
  writeScript(path.join(dir, '20-fail'), traceScript(trace, { exit: 7 }));
  writeScript(path.join(dir, '30-never'), traceScript(trace));
  const err = await runPhase(opts()).catch((e: unknown) => e);
  t.ok(err instanceof PhaseFailedError);
  t.match((err as PhaseFailedError).details, { phase: 'configure', script: '20-fail', scriptExitCode: 7 });
  t.equal((err as PhaseFailedError).exitCode, 1);
  t.same(readTrace(trace), ['configure.d/10-ok', 'configure.d/20-fail']);
});

t.test('environment.d exports reach scripts and in-process steps', async (t) => {
  const { base, trace, opts } = setup(t);
  mkdirSync(path.join(base, 'environment.d'));
  writeFileSync(path.join(base, 'environment.d', '10-vars'), 'export FROM_ENV_D=yes\n');
  writeScript(path.join(base, 'configure.d', '10-a'), traceScript(trace, { show: 'FROM_ENV_D' }));
  let seen: string | undefined;
  const step: InProcessStep = { phase: 'configure', name: '20-step', run: async (env) => void (seen = env.FROM_ENV_D) };
  await runPhase(opts({ steps: [step] }));
  t.same(readTrace(trace), ['configure.d/10-a FROM_ENV_D=yes']);
  t.equal(seen, 'yes');
});

t.test('a failing environment.d file fails the phase before any script', async (t) => {
  const { base, trace, opts } = setup(t);
  mkdirSync(path.join(base, 'environment.d'));
  writeFileSync(path.join(base, 'environment.d', '10-bad'), 'echo "$UNSET_VARIABLE_X"\n');
  writeScript(path.join(base, 'configure.d', '10-a'), traceScript(trace));
  await t.rejects(runPhase(opts()), { code: 'ERR_PHASE_FAILED', details: { script: 'environment.d' } });
  t.same(readTrace(trace), []);
});

t.test('in-process steps take their place by name and replace a same-name file', async (t) => {
  const { base, trace, captured, opts } = setup(t);
  const dir = path.join(base, 'configure.d');
  for (const name of ['10-before', '20-os-apply-config', '60-after', 'aaa'])
    writeScript(path.join(dir, name), traceScript(trace));
  const steps: InProcessStep[] = [
    {
      phase: 'configure',
      name: '55-heat-config',
      run: async () => writeFileSync(trace, 'step/55-heat-config\n', { flag: 'a' }),
    },
    {
      phase: 'configure',
      name: '20-os-apply-config',
      run: async () => writeFileSync(trace, 'step/20-os-apply-config\n', { flag: 'a' }),
    },
  ];
  await runPhase(opts({ steps }));
  t.same(readTrace(trace), [
    'configure.d/aaa',
    'configure.d/10-before',
    'step/20-os-apply-config',
    'step/55-heat-config',
    'configure.d/60-after',
  ]);
  const replaced = captured.lines.filter((l) => l.msg === 'in-process step replaces script');
  t.same(
    replaced.map((l) => [l.level, l.file]),
    [['info', path.join(dir, '20-os-apply-config')]],
  );
});

t.test('steps run even when the phase directory is missing', async (t) => {
  const { opts } = setup(t);
  let ran = false;
  t.equal(
    await runPhase(opts({ steps: [{ phase: 'configure', name: '20-x', run: async () => void (ran = true) }] })),
    true,
  );
  t.ok(ran);
});

t.test('a failing step fails the phase and later scripts do not run', async (t) => {
  const { base, trace, opts } = setup(t);
  writeScript(path.join(base, 'configure.d', '90-later'), traceScript(trace));
  const boom = new Error('render failed');
  const err = await runPhase(
    opts({ steps: [{ phase: 'configure', name: '20-os-apply-config', run: async () => Promise.reject(boom) }] }),
  ).catch((e: unknown) => e);
  t.ok(err instanceof PhaseFailedError);
  t.equal((err as PhaseFailedError).cause, boom);
  t.match((err as PhaseFailedError).message, /20-os-apply-config failed: render failed/);
  t.same(readTrace(trace), []);
});

t.test('the deadline aborts an in-process step', async (t) => {
  const { opts } = setup(t);
  const step: InProcessStep = {
    phase: 'configure',
    name: '55-heat-config',
    run: (_env, signal) =>
      new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
      ),
  };
  await t.rejects(runPhase(opts({ steps: [step], deadline: performance.now() + 100 })), {
    code: 'ERR_PHASE_FAILED',
    details: { timedOut: true },
  });
});

t.test(
  'trust rule: a script, environment.d file or phase directory others can write: nothing of the phase runs',
  async (t) => {
    const { base, trace, opts } = setup(t);
    const dir = path.join(base, 'configure.d');
    writeScript(path.join(dir, '10-first'), traceScript(trace));
    writeScript(path.join(dir, '20-planted'), traceScript(trace));
    chmodSync(path.join(dir, '20-planted'), 0o777);
    const err = await runPhase(opts()).catch((e: unknown) => e);
    t.ok(err instanceof PhaseFailedError);
    t.match(err, {
      code: 'ERR_UNTRUSTED_PATH',
      exitCode: 1,
      details: { phase: 'configure', script: '20-planted' },
      message:
        /^phase configure: .*20-planted is not trusted: is writable by others \(mode 0777\); make it .*; nothing of the phase ran$/,
    });
    t.same(readTrace(trace), [], 'not even the scripts before it ran');
    chmodSync(path.join(dir, '20-planted'), 0o755);
    mkdirSync(path.join(base, 'environment.d'));
    writeFileSync(path.join(base, 'environment.d', '10-env'), 'export X=1\n', { mode: 0o666 });
    chmodSync(path.join(base, 'environment.d', '10-env'), 0o666);
    await t.rejects(runPhase(opts()), { code: 'ERR_UNTRUSTED_PATH', details: { script: '10-env' } });
    chmodSync(path.join(base, 'environment.d', '10-env'), 0o644);
    chmodSync(dir, 0o777);
    await t.rejects(runPhase(opts()), {
      code: 'ERR_UNTRUSTED_PATH',
      message: /configure\.d is not trusted: is writable by others/,
    });
    t.same(readTrace(trace), []);
    chmodSync(dir, 0o755);
    t.equal(await runPhase(opts()), true);
    t.same(readTrace(trace), ['configure.d/10-first', 'configure.d/20-planted']);
  },
);
