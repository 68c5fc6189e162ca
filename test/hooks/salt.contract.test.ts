import { readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../helpers/http-test-server.js';
import {
  DEPLOY_INPUTS, FAKE_TOOLS, SECRET_INPUTS, SYSTEM_PATH, assertNoSecrets, hookDirs, readRecords, runHook,
} from './hook-process.js';

// Contract tests of the salt hook: Salt cannot be installed here, so a recording fake salt-call (on PATH, or named by
// HEAT_SALT_CMD) keeps the command line, state file and pillar the hook gives it, and replays salt's JSON output.

function setup(t: TapTest) {
  const dirs = hookDirs(t, 'salt');
  const record = path.join(dirs.dir, 'record.jsonl');
  const minion = path.join(dirs.dir, 'salt', 'minion');
  const env: Record<string, string> = {
    PATH: `${FAKE_TOOLS}:${SYSTEM_PATH}`, HOME: dirs.home, HEAT_SALT_WORKING: dirs.working, HEAT_SALT_OUTPUTS: dirs.outputs,
    SALT_MINION_CONFIG: minion, FAKE_TOOL_RECORD: record,
  };
  return { ...dirs, record, minion, env };
}

const deployment = (config: unknown, extra: Record<string, unknown> = {}) => ({
  id: 'salt-0001', name: 'cfg', group: 'salt', creation_time: '2024-01-01T00:00:00Z', options: {},
  inputs: [{ name: 'pkg', value: 'httpd' }, { name: 'workers', type: 'Number', value: 4 }, ...DEPLOY_INPUTS, ...SECRET_INPUTS],
  outputs: [], config, ...extra,
});

/** salt-call --out json output for the given state results. */
const saltOutput = (states: Record<string, unknown> | unknown[]) => JSON.stringify({ local: states }, null, 4);

const okState = (id: string, extra: Record<string, unknown> = {}) => ({
  [`pkg_|-${id}_|-${id}_|-installed`]: { __id__: id, name: id, result: true, comment: 'All specified packages are already installed', changes: {}, ...extra },
});

t.test('contract: salt-call --local with the state file and the inputs as pillar; success and outputs', async (t) => {
  const { dir, working, outputs, record, env } = setup(t);
  const sls = 'install:\n  pkg.installed:\n    - name: {{ pillar["pkg"] }}\n';
  const stdout = saltOutput({ ...okState('install', { changes: { httpd: { new: '2.4' } } }) });
  const declared = [{ name: 'install' }, { name: 'from_file' }, { name: 'absent' }];
  const run = await runHook('salt', deployment(sls, { outputs: declared }), {
    env: { ...env, FAKE_TOOL_STDOUT: stdout, FAKE_TOOL_STDERR: '[WARNING ] something\n', FAKE_TOOL_OUTPUTS: '{"from_file":"f"}' },
  });
  t.equal(run.code, 0, 'the hook exits 0', { stderr: run.stderr });
  t.equal(run.result.deploy_status_code, 0);
  t.equal(run.result.deploy_stdout, stdout, 'salt\'s JSON output');
  t.equal(run.result.deploy_stderr, '[WARNING ] something\n');
  t.equal(run.result.from_file, 'f', 'an output written at heat_outputs_path');
  t.match(run.result.install, { __id__: 'install', result: true, changes: { httpd: { new: '2.4' } } }, 'an output named after a state ID');
  t.notOk('absent' in run.result);

  const [rec] = readRecords(record);
  if (!rec) throw new Error('the fake salt-call did not run');
  const pillar = {
    pkg: 'httpd', workers: 4, ...Object.fromEntries(DEPLOY_INPUTS.map((i) => [i.name, i.value])),
    db_secret: 'dbsecret-987', api_token: { token: 'tok-555' }, heat_outputs_path: path.join(outputs, 'salt-0001'),
  };
  t.same(rec.argv, [
    '--local', '--config-dir', path.join(dir, 'salt'), '--file-root', working, '--retcode-passthrough', '--out', 'json',
    'state.sls', 'salt-0001', `pillar=${JSON.stringify(pillar)}`,
  ], 'the command line: the minion config\'s directory, the working dir as file root, inputs as pillar without the agent\'s credentials');
  t.equal(rec.cwd, working);
  t.same(rec.files[path.join(working, 'salt-0001.sls')], { content: sls, mode: '700' }, 'the config as the state file');
  t.same(readdirSync(working), [], 'the state file is removed after the run');
  t.same(readdirSync(outputs), []);
  assertNoSecrets(t, run.stderr, 'the log');
  t.match(run.stderr, /running salt-call .*pillar=/, 'the command is logged');
});

t.test('contract: a structured config is written as JSON (valid YAML)', async (t) => {
  const { working, record, env } = setup(t);
  const config = { install: { 'pkg.installed': [{ name: 'httpd' }] } };
  const run = await runHook('salt', deployment(config), { env: { ...env, FAKE_TOOL_STDOUT: saltOutput(okState('install')) } });
  t.equal(run.result.deploy_status_code, 0);
  const content = readRecords(record)[0]?.files[path.join(working, 'salt-0001.sls')]?.content ?? '';
  t.same(JSON.parse(content), config);
});

t.test('contract: failed states fail the deployment with their comments', async (t) => {
  const { env } = setup(t);
  const states = {
    ...okState('first'),
    'file_|-conf_|-/etc/x.conf_|-managed': { __id__: 'conf', result: false, comment: 'Source file salt://x not found', changes: {} },
    'service_|-svc_|-httpd_|-running': { __id__: 'svc', result: false, comment: ['One or more requisite failed', 'conf'], changes: {} },
    'test_|-dry_|-dry_|-nop': { __id__: 'dry', result: null, comment: 'would change', changes: {} },
  };
  const failed = await runHook('salt', deployment('x'), { env: { ...env, FAKE_TOOL_STDOUT: saltOutput(states), FAKE_TOOL_EXIT: '2', FAKE_TOOL_STDERR: 'err\n' } });
  t.equal(failed.result.deploy_status_code, 2, 'salt-call\'s status (--retcode-passthrough)');
  t.equal(failed.result.deploy_stderr, 'err\nconf: Source file salt://x not found\nsvc: One or more requisite failed\nconf\n');
  t.match(failed.stderr, /\[ERROR\] salt state .*salt-0001\.sls failed: status 2/);

  const zeroButFailed = await runHook('salt', deployment('x'), { env: { ...env, FAKE_TOOL_STDOUT: saltOutput(states), FAKE_TOOL_EXIT: '0' } });
  t.equal(zeroButFailed.result.deploy_status_code, 1, 'a failed state is a failure whatever salt-call exits with');

  const okButNonZero = await runHook('salt', deployment('x'), { env: { ...env, FAKE_TOOL_STDOUT: saltOutput(okState('a')), FAKE_TOOL_EXIT: '1' } });
  t.equal(okButNonZero.result.deploy_status_code, 0, 'every state succeeded: success, as upstream (bug 1483336)');
});

t.test('contract: a state that cannot be rendered, or no JSON at all', async (t) => {
  const { env } = setup(t);
  const renderError = ['Rendering SLS \'base:salt-0001\' failed: mapping values are not allowed here'];
  const run = await runHook('salt', deployment('bad: yaml: here'), { env: { ...env, FAKE_TOOL_STDOUT: saltOutput(renderError), FAKE_TOOL_EXIT: '1' } });
  t.equal(run.result.deploy_status_code, 1);
  t.equal(run.result.deploy_stderr, `${renderError[0]}\n`);

  const zero = await runHook('salt', deployment('x'), { env: { ...env, FAKE_TOOL_STDOUT: saltOutput(renderError), FAKE_TOOL_EXIT: '0' } });
  t.equal(zero.result.deploy_status_code, 1);

  const noJson = await runHook('salt', deployment('x'), { env: { ...env, FAKE_TOOL_STDOUT: 'Traceback (most recent call last):', FAKE_TOOL_STDERR: 'crash', FAKE_TOOL_EXIT: '0' } });
  t.equal(noJson.result.deploy_status_code, 1);
  t.equal(noJson.result.deploy_stdout, 'Traceback (most recent call last):');
  t.equal(noJson.result.deploy_stderr, 'crash\nsalt-call printed no JSON result\n');
});

t.test('contract: HEAT_SALT_CMD and the default minion config', async (t) => {
  const { record, env } = setup(t);
  const { SALT_MINION_CONFIG: _unused, ...noMinion } = env;
  const run = await runHook('salt', deployment('x'), {
    env: { ...noMinion, PATH: SYSTEM_PATH, HEAT_SALT_CMD: path.join(FAKE_TOOLS, 'salt-call'), FAKE_TOOL_STDOUT: saltOutput(okState('a')) },
  });
  t.equal(run.result.deploy_status_code, 0);
  t.same(readRecords(record)[0]?.argv.slice(0, 3), ['--local', '--config-dir', '/etc/salt'], 'SALT_MINION_CONFIG defaults to /etc/salt/minion');
});

t.test('contract: a minion config not named "minion" is warned about', async (t) => {
  const { dir, env } = setup(t);
  const run = await runHook('salt', deployment('x'), {
    env: { ...env, SALT_MINION_CONFIG: path.join(dir, 'custom.conf'), FAKE_TOOL_STDOUT: saltOutput(okState('a')) },
  });
  t.equal(run.result.deploy_status_code, 0);
  t.match(run.stderr, /\[WARNING\] salt-call reads the file named "minion" in /);
});

t.test('salt not installed: a failure result naming the package', async (t) => {
  const { working, env } = setup(t);
  const run = await runHook('salt', deployment('x'), { env: { ...env, PATH: SYSTEM_PATH } });
  t.equal(run.code, 0);
  t.equal(run.result.deploy_status_code, 1, 'not an empty success');
  t.match(run.result.deploy_stderr, /^salt is not installed: the command "salt-call" was not found .*salt-minion.*HEAT_SALT_CMD/);
  t.same(readdirSync(working), []);
});
