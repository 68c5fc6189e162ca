import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../../helpers/http-test-server.js';
import {
  DEPLOY_INPUTS,
  HOOKS_DIR,
  SECRET_INPUTS,
  SYSTEM_PATH,
  assertNoSecrets,
  hookDirs,
  modeOf,
  runHook,
  HOOK_MODES,
} from '../hook-process.js';

// The script hook with real bash scripts.

function setup(t: TapTest) {
  const dirs = hookDirs(t, 'script');
  const env = {
    PATH: SYSTEM_PATH,
    HOME: dirs.home,
    HEAT_SCRIPT_WORKING: dirs.working,
    HEAT_SCRIPT_OUTPUTS: dirs.outputs,
  };
  return { ...dirs, env };
}

const deployment = (config: string, extra: Record<string, unknown> = {}) => ({
  id: 'dep-0001',
  name: 'cfg',
  group: 'script',
  creation_time: '2024-01-01T00:00:00Z',
  options: {},
  inputs: [...DEPLOY_INPUTS, ...SECRET_INPUTS],
  outputs: [],
  config,
  ...extra,
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: every input type reaches the script as an environment variable; outputs come back from files`,
    async (t) => {
      const { working, outputs, env } = setup(t);
      const inputs = [
        { name: 'text', type: 'String', value: 'hello world' },
        { name: 'count', type: 'Number', value: 42 },
        { name: 'ratio', value: 1.5 },
        { name: 'enabled', type: 'Boolean', value: true },
        { name: 'off', value: false },
        { name: 'nothing', value: null },
        { name: 'missing' },
        { name: 'listy', type: 'CommaDelimitedList', value: ['a', 'b'] },
        { name: 'doc', type: 'Json', value: { a: [1, 2], é: 'ü' } },
        { name: 'multi', value: 'line 1\nline "2"' },
        ...DEPLOY_INPUTS,
        ...SECRET_INPUTS,
      ];
      const script = [
        '#!/bin/bash',
        'for v in text count ratio enabled off nothing missing listy doc multi deploy_action; do',
        '  printf "%s=[%s]\\n" "$v" "${!v}"',
        'done',
        'printf "cwd=%s\\n" "$PWD"',
        'printf "outputs=%s\\n" "$heat_outputs_path"',
        'printf "the result" > "$heat_outputs_path.result"',
        'printf "{\\"x\\": 1}\\n" > "$heat_outputs_path.json_out"',
        'printf "undeclared" > "$heat_outputs_path.other"',
        'echo to-stderr >&2',
      ].join('\n');
      const outputsDeclared = [{ name: 'result' }, { name: 'json_out' }, { name: 'absent' }];
      const run = await runIn('script', deployment(script, { inputs, outputs: outputsDeclared }), { env });

      t.equal(run.code, 0, 'the hook exits 0', { stderr: run.stderr });
      t.equal(run.result.deploy_status_code, 0);
      t.equal(
        run.result.deploy_stdout,
        [
          'text=[hello world]',
          'count=[42]',
          'ratio=[1.5]',
          'enabled=[true]',
          'off=[false]',
          'nothing=[]',
          'missing=[]',
          // Python's json.dumps, as upstream's hook-script.py writes lists and objects into the environment.
          'listy=[["a", "b"]]',
          'doc=[{"a": [1, 2], "\\u00e9": "\\u00fc"}]',
          'multi=[line 1\nline "2"]',
          'deploy_action=[CREATE]',
          `cwd=${working}`,
          `outputs=${path.join(outputs, 'dep-0001')}`,
          '',
        ].join('\n'),
      );
      t.equal(run.result.deploy_stderr, 'to-stderr\n');
      t.same(
        Object.keys(run.result),
        ['result', 'json_out', 'deploy_stdout', 'deploy_stderr', 'deploy_status_code'],
        'declared outputs that exist, then the status keys; undeclared and missing outputs left out',
      );
      t.equal(run.result.result, 'the result');
      t.equal(run.result.json_out, '{"x": 1}\n', 'an output is the whole file, not trimmed or parsed');

      t.equal(modeOf(working), '700', 'working dir created 0700');
      t.equal(modeOf(outputs), '700', 'outputs dir created 0700');
      t.same(readdirSync(working), ['dep-0001'], 'the script is kept after the run, as upstream keeps it');
      t.equal(modeOf(path.join(working, 'dep-0001')), '700', 'the kept script is 0700');
      t.same(readdirSync(outputs), [], 'the output files are removed once read');
      t.match(
        run.stderr,
        /\(heat-config-script\) \[INFO\] input text=hello world\n/,
        'inputs are logged, upstream format',
      );
      t.match(run.stderr, /deploy_password=\*\*\*/);
      assertNoSecrets(t, run.stderr, 'the log');
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: a failing script: its exit code, stderr and outputs`, async (t) => {
    const { env } = setup(t);
    const script =
      '#!/bin/bash\necho partial\necho "went wrong" >&2\nprintf half > "$heat_outputs_path.result"\nexit 7\n';
    const run = await runIn('script', deployment(script, { outputs: [{ name: 'result' }] }), { env });
    t.equal(run.code, 0, 'the hook itself succeeded: it reports the failure in its result');
    t.same(run.result, {
      result: 'half',
      deploy_stdout: 'partial\n',
      deploy_stderr: 'went wrong\n',
      deploy_status_code: 7,
    });
    t.match(run.stderr, /\[ERROR\] script failed script=.*dep-0001 exitCode=7/);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: a rewrite with a shorter config leaves nothing of the longer one`, async (t) => {
    const { working, env } = setup(t);
    const long = `#!/bin/bash\necho long\n${'# padding padding padding\n'.repeat(20)}`;
    const first = await runIn('script', deployment(long), { env });
    t.equal(first.result.deploy_stdout, 'long\n');
    const second = await runIn('script', deployment('#!/bin/bash\necho short\n'), { env });
    t.same(second.result, { deploy_stdout: 'short\n', deploy_stderr: '', deploy_status_code: 0 });

    // A longer file left behind (an upstream agent's, or a crashed run's), with the wrong mode: truncated, made 0700.
    writeFileSync(path.join(working, 'dep-0001'), `#!/bin/bash\necho stale\nexit 9\n${'x'.repeat(500)}\n`, {
      mode: 0o644,
    });
    const third = await runIn('script', deployment('#!/bin/bash\necho fresh\n'), { env });
    t.same(third.result, { deploy_stdout: 'fresh\n', deploy_stderr: '', deploy_status_code: 0 });
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: outputs left by an earlier run of the same deployment are not reported again`, async (t) => {
    const { outputs, env } = setup(t);
    mkdirSync(outputs, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(outputs, 'dep-0001.result'), 'stale');
    writeFileSync(path.join(outputs, 'dep-0002.result'), 'another deployment');
    const run = await runIn('script', deployment('#!/bin/sh\ntrue\n', { outputs: [{ name: 'result' }] }), { env });
    t.notOk('result' in run.result);
    t.same(readdirSync(outputs), ['dep-0002.result'], "only this deployment's files are touched");
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: an output name with a slash is not read`, async (t) => {
    const { dir, env } = setup(t);
    writeFileSync(path.join(dir, 'secret-file'), 'private');
    const outputs = [{ name: '/../../secret-file' }, { name: 'ok' }];
    const run = await runIn('script', deployment('#!/bin/sh\nprintf yes > "$heat_outputs_path.ok"\n', { outputs }), {
      env,
    });
    t.same(run.result, { ok: 'yes', deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
    t.match(run.stderr, /cannot be a file name; not read/);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: interpreters`, async (t) => {
    const { env } = setup(t);
    const noHashBang = await runIn('script', deployment('echo "run by $0"\n'), { env });
    t.equal(noHashBang.result.deploy_status_code, 0, 'a config without #! runs under /bin/sh');
    t.match(noHashBang.result.deploy_stdout, /^run by /);

    const missing = await runIn('script', deployment('#!/nonexistent/interpreter\necho hi\n'), { env });
    t.equal(missing.code, 0);
    t.equal(missing.result.deploy_status_code, 1, 'a missing interpreter is a failure, not an empty success');
    t.match(
      missing.result.deploy_stderr,
      /the script's interpreter \(\/nonexistent\/interpreter\) was not found: check the #! line/,
    );

    const structured = await runIn('script', deployment('', { config: { not: 'a script' } }), { env });
    t.not(structured.result.deploy_status_code, 0, 'a structured config is written as JSON, which does not run');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: a killed script: status 128 + signal number`, async (t) => {
    const { env } = setup(t);
    const run = await runIn('script', deployment('#!/bin/bash\necho before\nkill -KILL $$\n'), { env });
    t.equal(run.result.deploy_status_code, 137);
    t.equal(run.result.deploy_stdout, 'before\n');
    t.match(run.result.deploy_stderr, /killed by SIGKILL/);
  });

t.test('SIGTERM to the hook reaches the script, and the hook still reports', async (t) => {
  const { dir, env } = setup(t);
  const ready = path.join(dir, 'ready');
  const script = `#!/bin/bash\ntrap 'echo got-term; exit 143' TERM\ntouch ${ready}\nfor i in $(seq 600); do sleep 0.1; done\n`;
  let pid = 0;
  const running = runHook('script', deployment(script), {
    env,
    started: (p) => {
      pid = p;
    },
  });
  for (let i = 0; i < 300 && !existsSync(ready); i++) await new Promise((r) => setTimeout(r, 50));
  t.ok(existsSync(ready), 'the script started');
  process.kill(pid, 'SIGTERM');
  const run = await running;
  t.equal(run.signal, null, 'the hook was not killed by the signal');
  t.same(run.result, { deploy_stdout: 'got-term\n', deploy_stderr: '', deploy_status_code: 143 });
});

t.test('bad input is a failure result and exit 1, never an empty success', async (t) => {
  const { env } = setup(t);
  const notJson = await runHook('script', 'this is not json', { env });
  t.equal(notJson.result.deploy_status_code, 1);
  t.match(notJson.result.deploy_stderr, /stdin is not JSON/);
  const notObject = await runHook('script', '[1, 2]', { env });
  t.match(notObject.result.deploy_stderr, /not a JSON object/);
  const badId = await runHook('script', deployment('#!/bin/sh\n', { id: '../escape' }), { env });
  t.equal(badId.result.deploy_status_code, 1);
  t.match(badId.result.deploy_stderr, /deployment id "\.\.\/escape" cannot be used as a file name/);
  const noId = await runHook('script', { config: '#!/bin/sh\n' }, { env });
  t.match(noId.result.deploy_stderr, /the deployment has no id/);
  // The agent's one name rule: an id the agent records (here with a space, a colon and a non-ASCII letter) is one its
  // hooks run, and the kept script is named after it.
  const agentId = await runHook('script', deployment('#!/bin/sh\necho ran\n', { id: 'dép 1:a' }), { env });
  t.same(agentId.result, { deploy_stdout: 'ran\n', deploy_stderr: '', deploy_status_code: 0 });
  // The result is printed, and the hook then exits 1 as upstream's hooks died on such stdin (docs/hooks.md).
  for (const r of [notJson, notObject, badId, noId]) t.equal(r.code, 1, 'exit 1 after a failure result');
  t.equal(agentId.code, 0);
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: an unexpected error: failure result and exit status 1`, async (t) => {
    const { dir, env } = setup(t);
    const file = path.join(dir, 'a-file');
    writeFileSync(file, '');
    const run = await runIn('script', deployment('#!/bin/sh\n'), {
      env: { ...env, HEAT_SCRIPT_WORKING: path.join(file, 'sub') },
    });
    t.equal(run.code, 1);
    t.equal(run.result.deploy_status_code, 1);
    t.match(run.result.deploy_stderr, /^the script hook failed: .*(ENOTDIR|EEXIST)/);
    t.match(run.stderr, /\[ERROR\] hook crashed reason=Error: ENOTDIR.*\n\s+at /, 'the stack goes to the log');
  });

t.test('dist/hooks/script copied alone into an empty directory runs a deployment', async (t) => {
  const { env } = setup(t);
  // Outside the repository: no package.json above it, as in /var/lib/heat-config/hooks.
  const alone = mkdtempSync(path.join(os.tmpdir(), 'oca-hook-alone-'));
  t.teardown(() => rmSync(alone, { recursive: true, force: true }));
  cpSync(path.join(HOOKS_DIR, 'script'), path.join(alone, 'script'));
  t.same(readdirSync(alone), ['script'], 'nothing beside it');
  const run = await runHook(path.join(alone, 'script'), deployment('#!/bin/sh\necho "alone $deploy_action"\n'), {
    env,
  });
  t.equal(run.code, 0, run.stderr);
  t.same(run.result, { deploy_stdout: 'alone CREATE\n', deploy_stderr: '', deploy_status_code: 0 });
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: secret values are masked wherever they appear in a log line`, async (t) => {
    const { env } = setup(t);
    // The script's own output is the deployment's business (it goes to Heat); the hook's log must stay clean.
    const run = await runIn('script', deployment('#!/bin/sh\necho "$deploy_password"\n'), { env });
    t.equal(run.result.deploy_stdout, 'pw-0123456789\n');
    assertNoSecrets(t, run.stderr, 'the log');
    t.match(run.stderr, /api_token=\*\*\*/);
    t.match(run.stderr, /deploy_signal_id=\*\*\*/);
    t.match(run.stderr, /db_secret=\*\*\*/);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: under OS_CONFIG_AGENT_ROOT the default work and outputs paths move under the root`, async (t) => {
    const { home } = setup(t);
    const root = t.testdir();
    const script = '#!/bin/bash\nprintf "%s" "$heat_outputs_path"\nprintf "x" > "$heat_outputs_path.result"\n';
    const run = await runIn(
      'script',
      { ...deployment(script), outputs: [{ name: 'result' }] },
      {
        env: { PATH: SYSTEM_PATH, HOME: home, OS_CONFIG_AGENT_ROOT: root },
      },
    );
    t.equal(run.result.deploy_status_code, 0);
    t.equal(run.result.deploy_stdout, path.join(root, 'var/run/heat-config/heat-config-script/dep-0001'));
    t.equal(run.result.result, 'x');
    t.ok(
      existsSync(path.join(root, 'var/lib/heat-config/heat-config-script')),
      'working directory created under the root',
    );
  });
