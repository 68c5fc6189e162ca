import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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

// The puppet hook with the real Debian puppet (/usr/bin/puppet), and its command-line contract with a recording fake.

function setup(t: TapTest) {
  const dirs = hookDirs(t, 'puppet');
  const logDir = path.join(dirs.dir, 'deployed');
  const hieraDir = path.join(dirs.dir, 'hieradata');
  const env: Record<string, string> = {
    PATH: SYSTEM_PATH,
    HOME: dirs.home,
    HEAT_PUPPET_WORKING: dirs.working,
    HEAT_PUPPET_OUTPUTS: dirs.outputs,
    HEAT_PUPPET_LOGDIR: logDir,
    HEAT_PUPPET_HIERA_DATADIR: hieraDir,
  };
  return { ...dirs, logDir, hieraDir, env };
}

/** A whole line of the hook's log: heat-config's time stamp and the hook's name, the level, then `rest` (literal text). */
function logLine(level: 'INFO' | 'WARNING' | 'ERROR', rest: string): RegExp {
  const literal = rest.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
  return new RegExp(
    String.raw`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \(heat-config-puppet\) \[${level}\] ${literal}$`,
    'm',
  );
}

/**
 * Real puppet, kept out of the system's own directories: a wrapper that adds puppet's directory settings after
 * `apply` and passes the hook's arguments on unchanged.
 */
function realPuppet(dir: string): string {
  const state = path.join(dir, 'puppet-state');
  const wrapper = path.join(dir, 'puppet');
  const dirs = ['confdir', 'vardir', 'logdir', 'rundir', 'codedir', 'publicdir']
    .map((d) => `--${d} ${state}/${d}`)
    .join(' ');
  writeFileSync(
    wrapper,
    `#!/bin/sh\n[ "$1" = apply ] || { echo "wrapper: expected apply, got $1" >&2; exit 99; }\nshift\n` +
      `exec /usr/bin/puppet apply ${dirs} "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  return wrapper;
}

const deployment = (config: string, extra: Record<string, unknown> = {}) => ({
  id: 'pup-0001',
  name: 'web_config',
  group: 'puppet',
  creation_time: '2024-05-06T07:08:09Z',
  options: {},
  inputs: [
    { name: 'greeting', value: 'hello' },
    { name: 'count', type: 'Number', value: 42 },
    ...DEPLOY_INPUTS,
    ...SECRET_INPUTS,
  ],
  outputs: [],
  config,
  ...extra,
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(
    `${mode}: real puppet: a manifest writes a file from facts and an output; changes applied (2) is success`,
    async (t) => {
      const { dir, working, outputs, logDir, env } = setup(t);
      const target = path.join(dir, 'motd');
      const manifest = [
        `file { '${target}': content => "\${facts['greeting']} \${facts['count']} \${facts['deploy_action']}\\n" }`,
        'file { "${facts[\'heat_outputs_path\']}.result": content => "made by puppet" }',
      ].join('\n');
      const run = await runIn('puppet', deployment(manifest, { outputs: [{ name: 'result' }] }), {
        env: { ...env, HEAT_PUPPET_CMD: realPuppet(dir) },
      });
      t.equal(run.code, 0, 'the hook exits 0', { stderr: run.stderr });
      t.equal(run.result.deploy_status_code, 0, "puppet's 2 (changes applied) is a success", { result: run.result });
      t.equal(readFileSync(target, 'utf8'), 'hello 42 CREATE\n', 'facts from the inputs, non-strings as JSON text');
      t.equal(run.result.result, 'made by puppet');
      t.match(run.result.deploy_stdout, /Notice: .*File\[.*motd\]\/ensure: defined content/);
      t.same(Object.keys(run.result), ['result', 'deploy_stdout', 'deploy_stderr', 'deploy_status_code']);

      const stamp = '2024-05-06-07-08-09Z-pup-0001';
      t.same(
        readdirSync(logDir).sort(),
        [`${stamp}-stderr.log`, `${stamp}-stdout.log`],
        "puppet's output kept where upstream kept it",
      );
      t.equal(readFileSync(path.join(logDir, `${stamp}-stdout.log`), 'utf8'), run.result.deploy_stdout);
      t.equal(modeOf(path.join(logDir, `${stamp}-stdout.log`)), '600');
      const manifestFile = path.join(working, 'pup-0001.pp');
      t.same(readdirSync(working), ['pup-0001.pp'], 'the manifest is kept, as upstream keeps it');
      t.equal(readFileSync(manifestFile, 'utf8'), manifest, 'the manifest that ran');
      t.equal(modeOf(manifestFile), '600', 'the manifest is readable by its owner only');
      t.same(readdirSync(outputs), [], 'the outputs are removed once read');
      t.match(run.stderr, logLine('INFO', `manifest applied manifest=${manifestFile}`));
      assertNoSecrets(t, run.stderr, 'the log');
    },
  );

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: real puppet: a failing manifest reports puppet's detailed exit code`, async (t) => {
    const { dir, working, env } = setup(t);
    const run = await runIn('puppet', deployment("exec { 'fails': command => '/bin/false' }\n"), {
      env: { ...env, HEAT_PUPPET_CMD: realPuppet(dir) },
    });
    t.equal(run.code, 0);
    t.equal(run.result.deploy_status_code, 4, '4 = failures, passed through');
    t.match(
      `${String(run.result.deploy_stdout)}${String(run.result.deploy_stderr)}`,
      /'\/bin\/false' returned 1 instead of one of \[0\]/,
    );
    t.match(run.stderr, logLine('INFO', 'tool exited tool=puppet exitCode=4'));
    t.match(run.stderr, logLine('ERROR', `manifest failed manifest=${path.join(working, 'pup-0001.pp')} exitCode=4`));
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract (recording fake puppet): command line, facts, hiera data, exit codes`, async (t) => {
    const { dir, working, outputs, hieraDir, env } = setup(t);
    const record = path.join(dir, 'record.jsonl');
    const fakeEnv = { ...env, HEAT_PUPPET_CMD: path.join(FAKE_TOOLS, 'puppet'), FAKE_TOOL_RECORD: record };
    const options = {
      enable_hiera: true,
      modulepath: '/etc/puppet/modules:/opt/modules',
      tags: 'a,b',
      enable_debug: true,
      enable_verbose: true,
    };
    const run = await runIn('puppet', deployment('notice("hi")\n', { options, outputs: [{ name: 'result' }] }), {
      env: {
        ...fakeEnv,
        FAKE_TOOL_EXIT: '2',
        FAKE_TOOL_STDOUT: 'out',
        FAKE_TOOL_STDERR: 'err',
        FAKE_TOOL_OUTPUTS: '{"result":"r"}',
      },
    });
    t.same(run.result, { result: 'r', deploy_stdout: 'out', deploy_stderr: 'err', deploy_status_code: 0 });
    const [rec] = readRecords(record);
    if (!rec) throw new Error('the fake puppet did not run');
    const manifest = path.join(working, 'pup-0001.pp');
    t.same(
      rec.argv,
      [
        'apply',
        '--color',
        'false',
        '--detailed-exitcodes',
        '--logdest',
        'console',
        '--modulepath',
        '/etc/puppet/modules:/opt/modules',
        '--tags',
        'a,b',
        '--debug',
        '--logdest',
        '/var/log/puppet/heat-debug.log',
        '--verbose',
        '--logdest',
        '/var/log/puppet/heat-verbose.log',
        manifest,
      ],
      'the upstream option order',
    );
    t.equal(rec.cwd, working);
    t.same(rec.files[manifest], { content: 'notice("hi")\n', mode: '600' });
    t.equal(readFileSync(manifest, 'utf8'), 'notice("hi")\n', 'the manifest is kept after the run');
    t.equal(modeOf(manifest), '600');
    t.equal(rec.env.FACTER_greeting, 'hello');
    t.equal(rec.env.FACTER_count, '42');
    t.equal(
      rec.env.FACTER_deploy_password,
      'pw-0123456789',
      'every input is a fact, as upstream (the environment is private)',
    );
    t.equal(rec.env.FACTER_heat_outputs_path, path.join(outputs, 'pup-0001'));
    t.equal(rec.env.FACTER_deploy_config_name, 'web_config');
    t.equal(
      rec.env.FACTER_fqdn,
      (await import('node:child_process')).execFileSync('hostname', ['-f'], { encoding: 'utf8' }).trim(),
    );
    t.equal(rec.env.greeting, undefined, 'inputs are facts only, not plain variables');
    const hieraFile = path.join(hieraDir, 'heat_config_web_config.json');
    t.equal(modeOf(hieraFile), '600');
    const hiera = JSON.parse(readFileSync(hieraFile, 'utf8')) as Record<string, unknown>;
    t.same(hiera.count, 42, 'hiera data keeps JSON types');
    t.equal(hiera.greeting, 'hello');
    t.equal(Object.keys(hiera).length, 2 + DEPLOY_INPUTS.length + SECRET_INPUTS.length);
    t.ok(existsSync(hieraFile), 'the hiera file stays for later puppet runs');

    // Other exit codes pass through; facter off leaves only the hook's own facts.
    const failed = await runIn('puppet', deployment('x', { options: { enable_facter: false } }), {
      env: { ...fakeEnv, FAKE_TOOL_EXIT: '6' },
    });
    t.equal(failed.result.deploy_status_code, 6);
    const rec2 = readRecords(record)[1];
    t.same(
      Object.keys(rec2?.env ?? {})
        .filter((k) => k.startsWith('FACTER_'))
        .sort(),
      ['FACTER_fqdn', 'FACTER_heat_outputs_path'],
    );
    t.same(rec2?.argv, ['apply', '--color', 'false', '--detailed-exitcodes', '--logdest', 'console', manifest]);
    t.equal(readFileSync(manifest, 'utf8'), 'x', 'the kept manifest is rewritten by the next run');
    t.match(failed.stderr, logLine('ERROR', `manifest failed manifest=${manifest} exitCode=6`));
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract: without hostname -f, no fqdn fact and a warning`, async (t) => {
    const { dir, env } = setup(t);
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'hostname'), '#!/bin/sh\necho "hostname: no fqdn" >&2\nexit 1\n', { mode: 0o755 });
    const record = path.join(dir, 'record.jsonl');
    const run = await runIn('puppet', deployment('x'), {
      env: {
        ...env,
        PATH: `${bin}:${env.PATH}`,
        HEAT_PUPPET_CMD: path.join(FAKE_TOOLS, 'puppet'),
        FAKE_TOOL_RECORD: record,
      },
    });
    t.equal(run.result.deploy_status_code, 0);
    t.equal(readRecords(record)[0]?.env.FACTER_fqdn, undefined);
    t.match(run.stderr, logLine('WARNING', '"hostname -f" failed reason=status 1: hostname: no fqdn'));
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: enable_hiera needs a usable deployment name`, async (t) => {
    const { env } = setup(t);
    const run = await runIn('puppet', deployment('x', { name: '../etc', options: { enable_hiera: true } }), {
      env: { ...env, HEAT_PUPPET_CMD: path.join(FAKE_TOOLS, 'puppet') },
    });
    t.equal(run.result.deploy_status_code, 1);
    t.match(run.result.deploy_stderr, /enable_hiera needs a deployment name usable as a file name/);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: puppet not installed: a failure result naming the package`, async (t) => {
    const { working, env } = setup(t);
    const run = await runIn('puppet', deployment('x'), { env: { ...env, HEAT_PUPPET_CMD: 'no-such-puppet' } });
    t.equal(run.code, 0);
    t.equal(run.result.deploy_status_code, 1, 'not an empty success');
    t.match(
      run.result.deploy_stderr,
      /^puppet is not installed: the command "no-such-puppet" was not found .*Install the puppet package .*HEAT_PUPPET_CMD/,
    );
    t.match(
      run.stderr,
      logLine(
        'ERROR',
        'hook failed reason=puppet is not installed: the command "no-such-puppet" was not found ' +
          `(PATH=${env.PATH}). Install the puppet package (Debian, Ubuntu, Fedora) or Puppet's puppet-agent. Or set HEAT_PUPPET_CMD to the command's path.`,
      ),
    );
    const manifest = path.join(working, 'pup-0001.pp');
    t.same(readdirSync(working), ['pup-0001.pp'], 'the manifest is kept anyway');
    t.equal(readFileSync(manifest, 'utf8'), 'x');
    t.equal(modeOf(manifest), '600');
  });
