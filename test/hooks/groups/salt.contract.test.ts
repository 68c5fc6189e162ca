import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../../helpers/http-test-server.js';
import {
  DEPLOY_INPUTS,
  FAKE_TOOLS,
  SECRET_INPUTS,
  SYSTEM_PATH,
  assertNoSecrets,
  hookDirs,
  modeOf,
  readRecords,
  HOOK_MODES,
} from '../hook-process.js';

// Contract tests of the salt hook: Salt cannot be installed here, so a recording fake salt-call (on PATH, or named by
// HEAT_SALT_CMD) keeps the command line, state file and pillar the hook gives it, and replays salt's JSON output.

function setup(t: TapTest) {
  const dirs = hookDirs(t, 'salt');
  const record = path.join(dirs.dir, 'record.jsonl');
  const minion = path.join(dirs.dir, 'salt', 'minion');
  const env: Record<string, string> = {
    PATH: `${FAKE_TOOLS}:${SYSTEM_PATH}`,
    HOME: dirs.home,
    HEAT_SALT_WORKING: dirs.working,
    HEAT_SALT_OUTPUTS: dirs.outputs,
    SALT_MINION_CONFIG: minion,
    FAKE_TOOL_RECORD: record,
  };
  return { ...dirs, record, minion, env };
}

/** A whole line of the hook's log: heat-config's time stamp and the hook's name, the level, then `rest` (literal text). */
function logLine(level: 'INFO' | 'WARNING' | 'ERROR', rest: string): RegExp {
  const literal = rest.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
  return new RegExp(
    String.raw`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \(heat-config-salt\) \[${level}\] ${literal}$`,
    'm',
  );
}

/** The deployment's own minion configuration directory salt-call is pointed at. */
const minionDir = (working: string) => path.join(working, 'salt-0001.minion');

/** The `include` of the deployment's minion file: the minion configuration, and the minion.d next to it. */
function minionInclude(working: string): unknown {
  return (JSON.parse(readFileSync(path.join(minionDir(working), 'minion'), 'utf8')) as Record<string, unknown>).include;
}

const deployment = (config: unknown, extra: Record<string, unknown> = {}) => ({
  id: 'salt-0001',
  name: 'cfg',
  group: 'salt',
  creation_time: '2024-01-01T00:00:00Z',
  options: {},
  inputs: [
    { name: 'pkg', value: 'httpd' },
    { name: 'workers', type: 'Number', value: 4 },
    ...DEPLOY_INPUTS,
    ...SECRET_INPUTS,
  ],
  outputs: [],
  config,
  ...extra,
});

/** salt-call --out json output for the given state results. */
const saltOutput = (states: Record<string, unknown> | unknown[]) => JSON.stringify({ local: states }, null, 4);

const okState = (id: string, extra: Record<string, unknown> = {}) => ({
  [`pkg_|-${id}_|-${id}_|-installed`]: {
    __id__: id,
    name: id,
    result: true,
    comment: 'All specified packages are already installed',
    changes: {},
    ...extra,
  },
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: contract: salt-call --local with the state file and the inputs as pillar; success and outputs`,
    async (t) => {
      const { dir, working, outputs, record, minion, env } = setup(t);
      const sls = 'install:\n  pkg.installed:\n    - name: {{ pillar["pkg"] }}\n';
      const stdout = saltOutput({ ...okState('install', { changes: { httpd: { new: '2.4' } } }) });
      const declared = [{ name: 'install' }, { name: 'from_file' }, { name: 'absent' }];
      const run = await runIn('salt', deployment(sls, { outputs: declared }), {
        env: {
          ...env,
          FAKE_TOOL_STDOUT: stdout,
          FAKE_TOOL_STDERR: '[WARNING ] something\n',
          FAKE_TOOL_OUTPUTS: '{"from_file":"f"}',
        },
      });
      t.equal(run.code, 0, 'the hook exits 0', { stderr: run.stderr });
      t.equal(run.result.deploy_status_code, 0);
      t.equal(run.result.deploy_stdout, stdout, "salt's JSON output");
      t.equal(run.result.deploy_stderr, '[WARNING ] something\n');
      t.equal(run.result.from_file, 'f', 'an output written at heat_outputs_path');
      t.match(
        run.result.install,
        { __id__: 'install', result: true, changes: { httpd: { new: '2.4' } } },
        'an output named after a state ID',
      );
      t.notOk('absent' in run.result);

      const [rec] = readRecords(record);
      if (!rec) throw new Error('the fake salt-call did not run');
      const pillar = {
        pkg: 'httpd',
        workers: 4,
        ...Object.fromEntries(DEPLOY_INPUTS.map((i) => [i.name, i.value])),
        db_secret: 'dbsecret-987',
        api_token: { token: 'tok-555' },
        heat_outputs_path: path.join(outputs, 'salt-0001'),
      };
      const configDir = minionDir(working);
      const stateFile = path.join(working, 'salt-0001.sls');
      t.same(
        rec.argv,
        [
          '--local',
          '--config-dir',
          configDir,
          '--file-root',
          working,
          '--retcode-passthrough',
          '--out',
          'json',
          'state.sls',
          'salt-0001',
          `pillar=${JSON.stringify(pillar)}`,
        ],
        "the command line: the deployment's own minion configuration, the working dir as file root, inputs as pillar without the agent's credentials",
      );
      t.equal(rec.cwd, working);
      t.same(rec.files[stateFile], { content: sls, mode: '600' }, 'the config as the state file');

      // Kept after the run: the state file, as upstream keeps it, and the deployment's minion configuration.
      t.same(
        readdirSync(working).sort(),
        ['salt-0001.minion', 'salt-0001.sls'],
        'the state file and the minion configuration are kept',
      );
      t.equal(readFileSync(stateFile, 'utf8'), sls);
      t.equal(modeOf(stateFile), '600');
      t.equal(modeOf(configDir), '700', 'the minion configuration directory is entered by its owner only');
      t.same(readdirSync(configDir), ['minion']);
      const minionFile = path.join(configDir, 'minion');
      t.equal(modeOf(minionFile), '600', 'the minion file (which holds the inputs) is readable by its owner only');
      t.equal(
        readFileSync(minionFile, 'utf8'),
        `${JSON.stringify(
          {
            ...pillar,
            include: [minion, path.join(dir, 'salt', 'minion.d', '*.conf')],
          },
          null,
          2,
        )}\n`,
        "the inputs as minion options (without the agent's credentials), including the real configuration and its minion.d",
      );
      t.same(readdirSync(outputs), [], 'the outputs are removed once read');

      assertNoSecrets(t, run.stderr, 'the log');
      const loggedPillar = JSON.stringify(pillar)
        .replace('"dbsecret-987"', '"***"')
        .replace('{"token":"tok-555"}', '***');
      t.match(
        run.stderr,
        logLine(
          'INFO',
          `running tool command=salt-call --local --config-dir ${configDir} --file-root ${working} ` +
            `--retcode-passthrough --out json state.sls salt-0001 'pillar=${loggedPillar}'`,
        ),
        'the command is logged, secrets masked',
      );
      t.match(run.stderr, logLine('INFO', 'tool exited tool=salt-call exitCode=0'));
      t.match(run.stderr, logLine('INFO', `salt state applied state=${stateFile}`));
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: a structured config is written as JSON (valid YAML)`, async (t) => {
    const { working, record, env } = setup(t);
    const config = { install: { 'pkg.installed': [{ name: 'httpd' }] } };
    const run = await runIn('salt', deployment(config), {
      env: { ...env, FAKE_TOOL_STDOUT: saltOutput(okState('install')) },
    });
    t.equal(run.result.deploy_status_code, 0);
    const content = readRecords(record)[0]?.files[path.join(working, 'salt-0001.sls')]?.content ?? '';
    t.equal(content, JSON.stringify(config, null, 2));
    t.same(JSON.parse(content), config);
    t.equal(readFileSync(path.join(working, 'salt-0001.sls'), 'utf8'), content, 'kept after the run');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: failed states fail the deployment with their comments`, async (t) => {
    const { working, env } = setup(t);
    const stateFile = path.join(working, 'salt-0001.sls');
    const states = {
      ...okState('first'),
      'file_|-conf_|-/etc/x.conf_|-managed': {
        __id__: 'conf',
        result: false,
        comment: 'Source file salt://x not found',
        changes: {},
      },
      'service_|-svc_|-httpd_|-running': {
        __id__: 'svc',
        result: false,
        comment: ['One or more requisite failed', 'conf'],
        changes: {},
      },
      'test_|-dry_|-dry_|-nop': { __id__: 'dry', result: null, comment: 'would change', changes: {} },
    };
    const failed = await runIn('salt', deployment('x'), {
      env: { ...env, FAKE_TOOL_STDOUT: saltOutput(states), FAKE_TOOL_EXIT: '2', FAKE_TOOL_STDERR: 'err\n' },
    });
    t.equal(failed.result.deploy_status_code, 2, "salt-call's status (--retcode-passthrough)");
    t.equal(
      failed.result.deploy_stderr,
      'err\nconf: Source file salt://x not found\nsvc: One or more requisite failed\nconf\n',
    );
    t.match(failed.stderr, logLine('INFO', 'tool exited tool=salt-call exitCode=2'));
    t.match(failed.stderr, logLine('ERROR', `salt state failed state=${stateFile} exitCode=2`));
    t.same(
      readdirSync(working).sort(),
      ['salt-0001.minion', 'salt-0001.sls'],
      'the work files are kept after a failure too',
    );

    const zeroButFailed = await runIn('salt', deployment('x'), {
      env: { ...env, FAKE_TOOL_STDOUT: saltOutput(states), FAKE_TOOL_EXIT: '0' },
    });
    t.equal(zeroButFailed.result.deploy_status_code, 1, 'a failed state is a failure whatever salt-call exits with');
    t.match(zeroButFailed.stderr, logLine('INFO', 'tool exited tool=salt-call exitCode=0'));
    t.match(zeroButFailed.stderr, logLine('ERROR', `salt state failed state=${stateFile} exitCode=1`));

    const okButNonZero = await runIn('salt', deployment('x'), {
      env: { ...env, FAKE_TOOL_STDOUT: saltOutput(okState('a')), FAKE_TOOL_EXIT: '1' },
    });
    t.equal(okButNonZero.result.deploy_status_code, 0, 'every state succeeded: success, as upstream (bug 1483336)');
    t.match(okButNonZero.stderr, logLine('INFO', 'tool exited tool=salt-call exitCode=1'));
    t.match(okButNonZero.stderr, logLine('INFO', `salt state applied state=${stateFile}`));
    t.notMatch(okButNonZero.stderr, /\[ERROR\]/);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: a state that cannot be rendered, or no JSON at all`, async (t) => {
    const { env } = setup(t);
    const renderError = ["Rendering SLS 'base:salt-0001' failed: mapping values are not allowed here"];
    const run = await runIn('salt', deployment('bad: yaml: here'), {
      env: { ...env, FAKE_TOOL_STDOUT: saltOutput(renderError), FAKE_TOOL_EXIT: '1' },
    });
    t.equal(run.result.deploy_status_code, 1);
    t.equal(run.result.deploy_stderr, `${renderError[0]}\n`);

    const zero = await runIn('salt', deployment('x'), {
      env: { ...env, FAKE_TOOL_STDOUT: saltOutput(renderError), FAKE_TOOL_EXIT: '0' },
    });
    t.equal(zero.result.deploy_status_code, 1);

    const noJson = await runIn('salt', deployment('x'), {
      env: {
        ...env,
        FAKE_TOOL_STDOUT: 'Traceback (most recent call last):',
        FAKE_TOOL_STDERR: 'crash',
        FAKE_TOOL_EXIT: '0',
      },
    });
    t.equal(noJson.result.deploy_status_code, 1);
    t.equal(noJson.result.deploy_stdout, 'Traceback (most recent call last):');
    t.equal(noJson.result.deploy_stderr, 'crash\nsalt-call printed no JSON result\n');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: HEAT_SALT_CMD and the default minion config`, async (t) => {
    const { dir, working, record, env } = setup(t);
    const { SALT_MINION_CONFIG: _unused, ...noMinion } = env;
    const saltEnv = {
      ...noMinion,
      PATH: SYSTEM_PATH,
      HEAT_SALT_CMD: path.join(FAKE_TOOLS, 'salt-call'),
      FAKE_TOOL_STDOUT: saltOutput(okState('a')),
    };
    const run = await runIn('salt', deployment('x'), { env: saltEnv });
    t.equal(run.result.deploy_status_code, 0);
    t.same(
      readRecords(record)[0]?.argv.slice(0, 3),
      ['--local', '--config-dir', minionDir(working)],
      "the deployment's own minion configuration",
    );
    t.same(
      minionInclude(working),
      ['/etc/salt/minion', '/etc/salt/minion.d/*.conf'],
      'SALT_MINION_CONFIG defaults to /etc/salt/minion, included',
    );

    // Under OS_CONFIG_AGENT_ROOT (the agent's --root), the default is under the root.
    const root = path.join(dir, 'root');
    const rooted = await runIn('salt', deployment('x'), { env: { ...saltEnv, OS_CONFIG_AGENT_ROOT: root } });
    t.equal(rooted.result.deploy_status_code, 0);
    t.same(
      readRecords(record)[1]?.argv.slice(0, 3),
      ['--local', '--config-dir', minionDir(working)],
      'HEAT_SALT_WORKING still wins',
    );
    t.same(
      minionInclude(working),
      [path.join(root, 'etc/salt/minion'), path.join(root, 'etc/salt/minion.d/*.conf')],
      'the default SALT_MINION_CONFIG is under OS_CONFIG_AGENT_ROOT',
    );
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: a minion config of any name is included, with the minion.d next to it`, async (t) => {
    const { dir, working, record, env } = setup(t);
    const run = await runIn('salt', deployment('x'), {
      env: { ...env, SALT_MINION_CONFIG: path.join(dir, 'custom.conf'), FAKE_TOOL_STDOUT: saltOutput(okState('a')) },
    });
    t.equal(run.result.deploy_status_code, 0);
    t.same(readRecords(record)[0]?.argv.slice(0, 3), ['--local', '--config-dir', minionDir(working)]);
    t.same(minionInclude(working), [path.join(dir, 'custom.conf'), path.join(dir, 'minion.d', '*.conf')]);
    t.notMatch(run.stderr, /\[WARNING\]/, 'no warning about the name');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: salt not installed: a failure result naming the package`, async (t) => {
    const { working, env } = setup(t);
    const run = await runIn('salt', deployment('x'), { env: { ...env, PATH: SYSTEM_PATH } });
    t.equal(run.code, 0);
    t.equal(run.result.deploy_status_code, 1, 'not an empty success');
    t.match(
      run.result.deploy_stderr,
      /^salt is not installed: the command "salt-call" was not found .*salt-minion.*HEAT_SALT_CMD/,
    );
    t.match(
      run.stderr,
      logLine(
        'ERROR',
        'hook failed reason=salt is not installed: the command "salt-call" was not found ' +
          `(PATH=${SYSTEM_PATH}). Install salt-minion (Salt's packages provide salt-call). Or set HEAT_SALT_CMD to the command's path.`,
      ),
    );
    const stateFile = path.join(working, 'salt-0001.sls');
    t.same(
      readdirSync(working).sort(),
      ['salt-0001.minion', 'salt-0001.sls'],
      'the state file and the minion configuration are kept anyway',
    );
    t.equal(readFileSync(stateFile, 'utf8'), 'x');
    t.equal(modeOf(stateFile), '600');
    t.equal(modeOf(minionDir(working)), '700');
    t.equal(
      modeOf(path.join(minionDir(working), 'minion')),
      '600',
      'the minion file (which holds the inputs) is readable by its owner only',
    );
    t.match(JSON.parse(readFileSync(path.join(minionDir(working), 'minion'), 'utf8')) as Record<string, unknown>, {
      pkg: 'httpd',
      workers: 4,
    });
  });
