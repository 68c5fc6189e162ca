import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
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

// The ansible hook with the real Debian ansible-core (/usr/bin/ansible-playbook) against localhost over the local
// connection, and its command-line contract with a recording fake.

function setup(t: TapTest) {
  const dirs = hookDirs(t, 'ansible');
  const ansibleHome = path.join(dirs.dir, 'ansible-home');
  mkdirSync(ansibleHome);
  const env: Record<string, string> = {
    PATH: SYSTEM_PATH,
    HOME: dirs.home,
    HEAT_ANSIBLE_WORKING: dirs.working,
    HEAT_ANSIBLE_OUTPUTS: dirs.outputs,
    ANSIBLE_HOME: ansibleHome,
    ANSIBLE_LOCAL_TEMP: path.join(ansibleHome, 'tmp'),
    ANSIBLE_REMOTE_TEMP: path.join(ansibleHome, 'remote-tmp'),
    ANSIBLE_NOCOLOR: '1',
  };
  return { ...dirs, env };
}

/** A whole line of the hook's log: heat-config's time stamp and the hook's name, the level, then `rest` (literal text). */
function logLine(level: 'INFO' | 'WARNING' | 'ERROR', rest: string): RegExp {
  const literal = rest.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
  return new RegExp(
    String.raw`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \(heat-config-ansible\) \[${level}\] ${literal}$`,
    'm',
  );
}

const deployment = (config: string, extra: Record<string, unknown> = {}) => ({
  id: 'ans-0001',
  name: 'cfg',
  group: 'ansible',
  creation_time: '2024-01-01T00:00:00Z',
  options: {},
  inputs: [
    { name: 'greeting', value: 'hello' },
    { name: 'ports', type: 'Json', value: [80, 443] },
    ...DEPLOY_INPUTS,
    ...SECRET_INPUTS,
  ],
  outputs: [],
  config,
  ...extra,
});

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: real ansible: a playbook on localhost uses inputs and writes an output`, async (t) => {
    const { dir, working, outputs, env } = setup(t);
    const target = path.join(dir, 'greeting.txt');
    const playbook = `
- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: write a file from the inputs
      copy:
        content: "{{ greeting }} {{ ports | sum }} {{ deploy_action }} {{ heat_config_id }}\\n"
        dest: ${target}
    - name: write the output
      copy:
        content: "from ansible"
        dest: "{{ heat_outputs_path }}.result"
`;
    const run = await runIn('ansible', deployment(playbook, { outputs: [{ name: 'result' }] }), { env });
    t.equal(run.code, 0, 'the hook exits 0', { stderr: run.stderr });
    t.equal(run.result.deploy_status_code, 0, 'the playbook succeeded', { result: run.result });
    t.equal(readFileSync(target, 'utf8'), 'hello 523 CREATE ans-0001\n', 'inputs as extra vars, JSON types kept');
    t.equal(run.result.result, 'from ansible');
    t.match(run.result.deploy_stdout, /PLAY RECAP[\s\S]*localhost\s+: ok=2\s+changed=2/);
    const playbookFile = path.join(working, 'ans-0001_playbook.yaml');
    const varsFile = path.join(working, 'ans-0001_variables.json');
    t.same(
      readdirSync(working).sort(),
      ['ans-0001_playbook.yaml', 'ans-0001_variables.json'],
      'the playbook and the variables file are kept, as upstream keeps them',
    );
    t.equal(readFileSync(playbookFile, 'utf8'), playbook, 'the playbook that ran');
    t.equal(modeOf(playbookFile), '600');
    const variables = JSON.parse(readFileSync(varsFile, 'utf8')) as Record<string, unknown>;
    t.match(
      variables,
      {
        heat_config_id: 'ans-0001',
        greeting: 'hello',
        ports: [80, 443],
        heat_outputs_path: path.join(outputs, 'ans-0001'),
      },
      'the variables it ran with',
    );
    t.equal(modeOf(varsFile), '600', 'the variables file (which holds every input) is readable by its owner only');
    t.same(readdirSync(outputs), [], 'the outputs are removed once read');
    t.match(run.stderr, logLine('INFO', 'tool exited tool=ansible-playbook exitCode=0'));
    t.match(run.stderr, logLine('INFO', `playbook completed playbook=${playbookFile}`));
    assertNoSecrets(t, run.stderr, 'the log');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: real ansible: a failing task fails the deployment`, async (t) => {
    const { working, env } = setup(t);
    const playbook = `
- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - fail:
        msg: "stopped on purpose for {{ greeting }}"
`;
    const run = await runIn('ansible', deployment(playbook), { env });
    t.equal(run.code, 0);
    t.equal(run.result.deploy_status_code, 2, "ansible-playbook's own exit code");
    t.match(run.result.deploy_stdout, /stopped on purpose for hello/);
    const playbookFile = path.join(working, 'ans-0001_playbook.yaml');
    const varsFile = path.join(working, 'ans-0001_variables.json');
    t.match(
      run.stderr,
      logLine('INFO', `running tool command=ansible-playbook -i localhost, ${playbookFile} --extra-vars @${varsFile}`),
    );
    t.match(run.stderr, logLine('INFO', 'tool exited tool=ansible-playbook exitCode=2'));
    t.match(run.stderr, logLine('ERROR', `playbook failed playbook=${playbookFile} exitCode=2`));
    t.equal(readFileSync(playbookFile, 'utf8'), playbook, 'the failed playbook is kept too');
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: contract (recording fake ansible-playbook): command line, variables file, playbook`, async (t) => {
    const { dir, working, outputs, env } = setup(t);
    const record = path.join(dir, 'record.jsonl');
    const fakeEnv = { ...env, HEAT_ANSIBLE_CMD: path.join(FAKE_TOOLS, 'ansible-playbook'), FAKE_TOOL_RECORD: record };
    const options = {
      modulepath: '/opt/modules',
      skip_tags: 'slow',
      tags: ['a', 'b'],
      callback_plugins: '/opt/callbacks',
      inventory: 'hosts.ini',
    };
    const run = await runIn('ansible', deployment('- hosts: all\n', { options, outputs: [{ name: 'result' }] }), {
      env: {
        ...fakeEnv,
        FAKE_TOOL_EXIT: '4',
        FAKE_TOOL_STDOUT: 'o',
        FAKE_TOOL_STDERR: 'e',
        FAKE_TOOL_OUTPUTS: '{"result":"r"}',
      },
    });
    t.same(run.result, { result: 'r', deploy_stdout: 'o', deploy_stderr: 'e', deploy_status_code: 4 });
    const [rec] = readRecords(record);
    if (!rec) throw new Error('the fake ansible-playbook did not run');
    const playbook = path.join(working, 'ans-0001_playbook.yaml');
    const vars = path.join(working, 'ans-0001_variables.json');
    t.same(
      rec.argv,
      [
        '-i',
        path.join(working, 'hosts.ini'),
        '--module-path',
        '/opt/modules',
        '--skip-tags',
        'slow',
        '--tags',
        'a,b',
        playbook,
        '--extra-vars',
        `@${vars}`,
      ],
      'the upstream option order; the inventory option is relative to the working directory',
    );
    t.equal(rec.cwd, working);
    t.equal(rec.env.ANSIBLE_CALLBACK_PLUGINS, '/opt/callbacks');
    t.same(rec.files[playbook], { content: '- hosts: all\n', mode: '600' });
    t.equal(rec.files[vars]?.mode, '600');
    const variables = JSON.parse(rec.files[vars]?.content ?? '{}') as Record<string, unknown>;
    t.same(Object.keys(variables), [
      'heat_config_id',
      'greeting',
      'ports',
      ...DEPLOY_INPUTS.map((i) => i.name),
      ...SECRET_INPUTS.map((i) => i.name),
      'heat_outputs_path',
    ]);
    t.equal(variables.heat_config_id, 'ans-0001');
    t.same(variables.ports, [80, 443]);
    t.equal(variables.heat_outputs_path, path.join(outputs, 'ans-0001'));
    t.equal(readFileSync(playbook, 'utf8'), '- hosts: all\n', 'the playbook is kept after the run');
    t.equal(readFileSync(vars, 'utf8'), rec.files[vars]?.content, 'the variables file is kept after the run');
    t.match(run.stderr, logLine('ERROR', `playbook failed playbook=${playbook} exitCode=4`));

    // Defaults: HEAT_ANSIBLE_INVENTORY, no optional flags.
    await runIn('ansible', deployment('- hosts: all\n'), { env: { ...fakeEnv, HEAT_ANSIBLE_INVENTORY: '/etc/inv' } });
    await runIn('ansible', deployment('- hosts: all\n'), { env: fakeEnv });
    const [, second, third] = readRecords(record);
    t.same(second?.argv, ['-i', '/etc/inv', playbook, '--extra-vars', `@${vars}`]);
    t.same(third?.argv, ['-i', 'localhost,', playbook, '--extra-vars', `@${vars}`]);
    t.equal(third?.env.ANSIBLE_CALLBACK_PLUGINS, undefined);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: no config: nothing run, said so`, async (t) => {
    const { dir, env } = setup(t);
    const record = path.join(dir, 'record.jsonl');
    const run = await runIn('ansible', deployment(''), {
      env: { ...env, HEAT_ANSIBLE_CMD: path.join(FAKE_TOOLS, 'ansible-playbook'), FAKE_TOOL_RECORD: record },
    });
    t.same(run.result, {
      deploy_stdout: '',
      deploy_stderr: 'The deployment has no config (playbook): ansible-playbook was not run.\n',
      deploy_status_code: 0,
    });
    t.same(readRecords(record), []);
  });

for (const { name: mode, run: runIn } of HOOK_MODES)
  t.test(`${mode}: ansible not installed: a failure result naming the package`, async (t) => {
    const { working, env } = setup(t);
    const run = await runIn('ansible', deployment('- hosts: all\n'), {
      env: { ...env, HEAT_ANSIBLE_CMD: 'no-such-ansible-playbook' },
    });
    t.equal(run.code, 0);
    t.equal(run.result.deploy_status_code, 1, 'not an empty success');
    t.match(
      run.result.deploy_stderr,
      /^ansible is not installed: the command "no-such-ansible-playbook" was not found .*Install the ansible package .*HEAT_ANSIBLE_CMD/,
    );
    t.match(
      run.stderr,
      logLine(
        'ERROR',
        'hook failed reason=ansible is not installed: the command "no-such-ansible-playbook" was not found ' +
          `(PATH=${env.PATH}). Install the ansible package (ansible-core on CentOS and RHEL). Or set HEAT_ANSIBLE_CMD to the command's path.`,
      ),
    );
    t.same(
      readdirSync(working).sort(),
      ['ans-0001_playbook.yaml', 'ans-0001_variables.json'],
      'the playbook and the variables file are kept anyway',
    );
    t.equal(readFileSync(path.join(working, 'ans-0001_playbook.yaml'), 'utf8'), '- hosts: all\n');
    t.equal(modeOf(path.join(working, 'ans-0001_playbook.yaml')), '600');
    const varsFile = path.join(working, 'ans-0001_variables.json');
    t.match(JSON.parse(readFileSync(varsFile, 'utf8')) as Record<string, unknown>, {
      heat_config_id: 'ans-0001',
      greeting: 'hello',
    });
    t.equal(modeOf(varsFile), '600', 'the variables file (which holds every input) is readable by its owner only');
    t.equal(modeOf(working), '700');
  });
