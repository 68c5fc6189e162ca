import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../../helpers/http-test-server.js';
import { DEPLOY_INPUTS, SECRET_INPUTS, SYSTEM_PATH, modeOf, runHook, HOOK_MODES } from '../hook-process.js';

// The hiera hook: hiera.yaml and the data files as upstream's hook-hiera.py writes them, read by a real puppet apply
// (Debian's puppet-agent 7 with hiera 3), and upstream's legacy-hieradata check with a stand-in command.

function setup(t: TapTest) {
  const dir = t.testdir();
  const datadir = path.join(dir, 'etc/puppet/hieradata');
  const configFile = path.join(dir, 'etc/puppet/hiera.yaml');
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  // Stands in for os-apply-config: prints what $LEGACY says, "empty" by default.
  const check = path.join(bin, 'legacy-check');
  writeFileSync(
    check,
    '#!/bin/sh\nprintf "%s\\n" "${LEGACY-empty}"\n[ -z "$LEGACY_FAIL" ] || { echo "$LEGACY_FAIL" >&2; exit 3; }\n',
    { mode: 0o755 },
  );
  const env: Record<string, string> = {
    PATH: SYSTEM_PATH,
    HEAT_PUPPET_HIERA_DATADIR: datadir,
    HEAT_HIERA_CONFIG: configFile,
    HEAT_HIERA_ELEMENT_CHECK_CMD: `${check} --key hiera.datafiles --type raw --key-default empty`,
  };
  return { dir, datadir, configFile, env };
}

const deployment = (config: unknown) => ({
  id: 'hiera-0001',
  name: 'hiera_data',
  group: 'hiera',
  options: {},
  inputs: [...DEPLOY_INPUTS, ...SECRET_INPUTS],
  outputs: [],
  config,
});

const CONFIG = {
  hierarchy: ['"%{::fqdn}"', 'nodes/web', 'compute', 'common'],
  datafiles: {
    compute: { 'app::greeting': 'hello from hiera', 'app::ports': [80, 443], zeta: 'é' },
    common: { 'app::greeting': 'from common', 'app::only_common': true },
    'nodes/web': {},
  },
};

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: hiera.yaml and the data files as upstream writes them`, async (t) => {
    const { datadir, configFile, env } = setup(t);
    const run = await runIn('hiera', deployment(CONFIG), { env });
    t.same(run.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 }, "upstream's result", {
      stderr: run.stderr,
    });
    t.equal(
      readFileSync(configFile, 'utf8'),
      [
        '',
        '---',
        ':backends:',
        '  - json',
        ':json:',
        `  :datadir: ${datadir}`,
        ':hierarchy:',
        '  - "%{::fqdn}"',
        '  - nodes/web',
        '  - compute',
        '  - common',
        '',
      ].join('\n'),
      "upstream's hiera 3 configuration, the hierarchy in the given order",
    );
    t.equal(
      readFileSync(path.join(datadir, 'compute.json'), 'utf8'),
      '{\n    "app::greeting": "hello from hiera",\n    "app::ports": [\n        80,\n        443\n    ],\n    "zeta": "\\u00e9"\n}',
    );
    t.equal(
      readFileSync(path.join(datadir, 'nodes/web.json'), 'utf8'),
      '{}',
      'a name with a "/" goes in a subdirectory, made for it',
    );
    for (const f of [configFile, path.join(datadir, 'compute.json'), path.join(datadir, 'common.json')])
      t.equal(modeOf(f), '600', `${f} is private`);
    t.equal(modeOf(datadir), '700');
    t.same(readdirSync(datadir).sort(), ['common.json', 'compute.json', 'nodes'], 'no temp file left');

    // Only what is given is written: without "hierarchy", hiera.yaml is left alone.
    const again = await runIn('hiera', deployment({ datafiles: { common: { x: 1 } } }), { env });
    t.equal(again.result.deploy_status_code, 0);
    t.match(readFileSync(configFile, 'utf8'), '  - compute\n', 'hiera.yaml unchanged');
    t.equal(readFileSync(path.join(datadir, 'common.json'), 'utf8'), '{\n    "x": 1\n}');
    const none = await runIn('hiera', deployment({}), {
      env: { ...env, HEAT_PUPPET_HIERA_DATADIR: path.join(datadir, 'fresh') },
    });
    t.equal(none.result.deploy_status_code, 0);
    t.ok(existsSync(path.join(datadir, 'fresh')), 'the data directory is made even with no data files, as upstream');
  });

t.test('real puppet: a manifest looks up what a hiera deployment wrote', async (t) => {
  const { dir, configFile, env } = setup(t);
  const run = await runHook('hiera', deployment(CONFIG), { env });
  t.equal(run.result.deploy_status_code, 0, 'hiera deployment', { stderr: run.stderr });
  const out = path.join(dir, 'out.txt');
  const state = path.join(dir, 'puppet-state');
  const dirs = ['confdir', 'vardir', 'logdir', 'rundir', 'codedir', 'publicdir'].flatMap((d) => [
    `--${d}`,
    path.join(state, d),
  ]);
  const manifest = `file { '${out}': content => "\${lookup('app::greeting')} \${lookup('app::ports')[1]} \${lookup('app::only_common')}\\n" }`;
  const { spawnSync } = await import('node:child_process');
  const puppet = spawnSync(
    '/usr/bin/puppet',
    ['apply', ...dirs, '--hiera_config', configFile, '--color', 'false', '-e', manifest],
    {
      env: { PATH: SYSTEM_PATH, HOME: dir },
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  t.equal(puppet.status, 0, 'puppet apply succeeds', { stdout: puppet.stdout, stderr: puppet.stderr });
  t.equal(
    readFileSync(out, 'utf8'),
    'hello from hiera 443 true\n',
    'values from the first level that has them, and from the next',
  );
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: legacy hiera data in os-apply-config's metadata fails the deployment, as upstream`, async (t) => {
    const { configFile, env } = setup(t);
    const run = await runIn('hiera', deployment(CONFIG), { env: { ...env, LEGACY: '{"compute": {"a": 1}}' } });
    t.equal(run.code, 0);
    t.same(run.result, {
      deploy_stdout: '{"compute": {"a": 1}}\n',
      deploy_stderr:
        'Legacy hieradata from os-apply-config has been detected - {"compute": {"a": 1}}. Please update all of your ' +
        'interfaces to use the new heat-agents hiera hook before proceeding',
      deploy_status_code: 1,
    });
    t.notOk(existsSync(configFile), 'nothing written');

    const failing = await runIn('hiera', deployment(CONFIG), {
      env: { ...env, LEGACY: '', LEGACY_FAIL: 'no metadata' },
    });
    t.equal(failing.result.deploy_status_code, 1, 'a failing check is not "empty", as upstream');
    t.match(
      failing.result.deploy_stderr,
      /has been detected - \. .* \(the check ".*legacy-check --key hiera\.datafiles --type raw --key-default empty" exited with status 3: no metadata\)$/,
    );

    const missing = await runIn('hiera', deployment(CONFIG), {
      env: { ...env, HEAT_HIERA_ELEMENT_CHECK_CMD: 'no-such-os-apply-config --key x' },
    });
    t.equal(missing.result.deploy_status_code, 0, 'no os-apply-config: no legacy data, as upstream');
    t.match(missing.stderr, 'legacy hiera data check skipped: command not found command=no-such-os-apply-config');
    t.ok(existsSync(configFile));
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: bad input: a failure result naming the cause, nothing written`, async (t) => {
    const { datadir, configFile, env } = setup(t);
    const cases: Array<[unknown, string | RegExp]> = [
      [['compute'], /^the hiera config must be an object with "hierarchy"/],
      [null, /^the hiera config must be an object/],
      [
        { hierarchy: ['a'], datafile: {} },
        'the hiera config has unknown keys "datafile": only "hierarchy" and "datafiles" are read',
      ],
      [{ hierarchy: 'compute' }, /^the hiera config's "hierarchy" must be a list of hierarchy levels/],
      [{ hierarchy: ['a', 7] }, /^the hiera config's "hierarchy" must be a list/],
      [{ hierarchy: ['a\n:backends: evil'] }, /^the hiera config's "hierarchy" must be a list .*one line each/],
      [{ datafiles: [] }, 'the hiera config\'s "datafiles" must be an object of data by file name'],
      [
        { hierarchy: ['a'], datafiles: { a: 1, '../escape': {} } },
        /^the hiera data file name "\.\.\/escape" cannot be a file under the data directory/,
      ],
      [{ datafiles: { '/etc/passwd': {} } }, /^the hiera data file name "\/etc\/passwd" cannot be/],
    ];
    // The checks are the same code either way; the executable runs two of them (each start costs about a second).
    for (const [config, message] of mode === 'executable' ? cases.slice(2, 4) : cases) {
      const run = await runIn('hiera', deployment(config), { env });
      t.equal(run.code, 0, 'no crash');
      t.equal(run.result.deploy_status_code, 1, JSON.stringify(config));
      t.match(run.result.deploy_stderr, message);
    }
    t.notOk(existsSync(configFile), 'no hiera.yaml');
    t.notOk(existsSync(path.join(datadir, 'a.json')), 'no data file');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: an unwritable directory: a failure naming the file, hiera.yaml unchanged`, async (t) => {
    const { datadir, configFile, env } = setup(t);
    mkdirSync(path.dirname(configFile), { recursive: true });
    writeFileSync(configFile, 'old');
    chmodSync(configFile, 0o600);
    // /proc refuses new files and directories to everyone, root included.
    const run = await runIn('hiera', deployment(CONFIG), {
      env: { ...env, HEAT_PUPPET_HIERA_DATADIR: '/proc/os-config-agent-hieradata' },
    });
    t.equal(run.code, 0, 'no crash');
    t.same(run.result, {
      deploy_stdout: '',
      deploy_stderr: 'could not make the directory /proc/os-config-agent-hieradata: ENOENT: no such file or directory',
      deploy_status_code: 1,
    });
    t.equal(readFileSync(configFile, 'utf8'), 'old', 'hiera.yaml is not replaced');

    // The data directory exists but refuses the data files: hiera.yaml, staged first, stays as it was.
    const run2 = await runIn('hiera', deployment(CONFIG), {
      env: { ...env, HEAT_PUPPET_HIERA_DATADIR: '/proc' },
    });
    t.equal(run2.code, 0, 'no crash');
    t.equal(
      run2.result.deploy_stderr,
      'could not write /proc/compute.json: ENOENT: no such file or directory; no file was changed',
    );
    t.equal(readFileSync(configFile, 'utf8'), 'old', 'hiera.yaml is not replaced');
    t.same(readdirSync(path.dirname(configFile)), ['hiera.yaml'], 'no temp file left');
    t.notOk(existsSync(datadir));
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: a data directory that is a link out of the root is refused; nothing is written outside`,
    async (t) => {
      const { dir, env } = setup(t);
      const root = path.join(dir, 'root');
      const outside = path.join(dir, 'outside');
      mkdirSync(path.join(root, 'etc/puppet'), { recursive: true });
      mkdirSync(outside);
      symlinkSync(outside, path.join(root, 'etc/puppet/hieradata'));
      const { HEAT_PUPPET_HIERA_DATADIR: _d, HEAT_HIERA_CONFIG: _c, ...rest } = env;
      const run = await runIn('hiera', deployment(CONFIG), { env: { ...rest, OS_CONFIG_AGENT_ROOT: root } });
      t.equal(run.code, 0, 'no crash', { stderr: run.stderr });
      t.equal(run.result.deploy_status_code, 1);
      t.match(run.result.deploy_stderr, /is a symbolic link to .*outside, outside /);
      t.same(readdirSync(outside), [], 'nothing written outside the root');
      t.notOk(existsSync(path.join(root, 'etc/puppet/hiera.yaml')), 'nor hiera.yaml');
    },
  );
