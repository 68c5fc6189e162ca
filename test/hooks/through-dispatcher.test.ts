import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { TapTest } from '../helpers/http-test-server.js';
import { runDeployments } from '../../src/deploy/dispatch.js';
import { deployHarness, deployment, HOOKS_DIR as ROOT_HOOKS_DIR } from '../helpers/deploy-fixtures.js';
import { startSignalSink } from '../helpers/signal-sink.js';
import { FAKE_TOOLS, HOOKS_DIR, SYSTEM_PATH, readRecords } from './hook-process.js';

// Each built-in hook through the dispatcher, end to end: its dist/hooks/<group> installed into an instance root like
// the image element does, chosen by the deployment's group, and its result signalled over CFN to a server that checks
// the signature. Twice: recognised as the agent's own build and run inside the agent, and forced out of process
// ([deploy] hooks_in_process = false), where the file gets the deployment on stdin. Under --root the hooks' default
// work paths move under the root (OS_CONFIG_AGENT_ROOT). puppet and ansible are the real Debian tools; chef and salt
// are recording fakes (contract).

interface Case {
  group: string;
  title: string;
  config: unknown;
  env(dir: string): Record<string, string>;
  /** Checks beyond the common ones (status 0, the output, one signal). */
  check?(t: TapTest, dir: string): void;
}

function realPuppet(dir: string): string {
  const state = path.join(dir, 'puppet-state');
  const wrapper = path.join(dir, 'puppet');
  const flags = ['confdir', 'vardir', 'logdir', 'rundir', 'codedir', 'publicdir']
    .map((d) => `--${d} ${state}/${d}`)
    .join(' ');
  writeFileSync(wrapper, `#!/bin/sh\nshift\nexec /usr/bin/puppet apply ${flags} "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}

const CASES: Case[] = [
  {
    group: 'script',
    title: 'script (real bash)',
    config: '#!/bin/bash\necho "hello $greeting"\nprintf "from script" > "$heat_outputs_path.result"\n',
    env: () => ({}),
  },
  {
    group: 'puppet',
    title: 'puppet (real Debian puppet)',
    config: 'file { "${facts[\'heat_outputs_path\']}.result": content => "from puppet ${facts[\'greeting\']}" }',
    env: (dir) => ({ HEAT_PUPPET_CMD: realPuppet(dir) }),
  },
  {
    group: 'ansible',
    title: 'ansible (real Debian ansible-core)',
    config: [
      '- hosts: localhost',
      '  connection: local',
      '  gather_facts: false',
      '  tasks:',
      '    - copy:',
      '        dest: "{{ heat_outputs_path }}.result"',
      '        content: "from ansible {{ greeting }}"',
    ].join('\n'),
    env: (dir) => {
      const home = path.join(dir, 'ansible-home');
      mkdirSync(home, { recursive: true });
      return {
        ANSIBLE_HOME: home,
        ANSIBLE_LOCAL_TEMP: path.join(home, 'tmp'),
        ANSIBLE_REMOTE_TEMP: path.join(home, 'rtmp'),
        ANSIBLE_NOCOLOR: '1',
      };
    },
  },
  {
    group: 'chef',
    title: 'chef (contract: recording fake chef-client)',
    config: '[]',
    env: (dir) => ({
      PATH: `${FAKE_TOOLS}:${SYSTEM_PATH}`,
      FAKE_TOOL_RECORD: path.join(dir, 'record.jsonl'),
      FAKE_TOOL_OUTPUTS: '{"result":"from chef"}',
    }),
    check: (t, dir) =>
      t.equal(readRecords(path.join(dir, 'record.jsonl'))[0]?.tool, 'chef-client', 'the hook ran chef-client'),
  },
  {
    group: 'salt',
    title: 'salt (contract: recording fake salt-call)',
    config: 'greet:\n  cmd.run:\n    - name: echo hello\n',
    env: (dir) => ({
      PATH: `${FAKE_TOOLS}:${SYSTEM_PATH}`,
      FAKE_TOOL_RECORD: path.join(dir, 'record.jsonl'),
      FAKE_TOOL_OUTPUTS: '{"result":"from salt"}',
      FAKE_TOOL_STDOUT: JSON.stringify({
        local: { 'cmd_|-greet_|-echo hello_|-run': { __id__: 'greet', result: true, changes: {}, comment: 'ok' } },
      }),
    }),
    check: (t, dir) =>
      t.equal(readRecords(path.join(dir, 'record.jsonl'))[0]?.tool, 'salt-call', 'the hook ran salt-call'),
  },
];

for (const c of CASES)
  for (const inProcess of [true, false]) {
    t.test(
      `${c.title}: run ${inProcess ? 'in-process' : 'as a process'} by the dispatcher for group "${c.group}" and signalled over CFN`,
      async (t) => {
        const dir = t.testdir();
        const root = path.join(dir, 'root');
        mkdirSync(path.join(root, ROOT_HOOKS_DIR), { recursive: true });
        copyFileSync(path.join(HOOKS_DIR, c.group), path.join(root, ROOT_HOOKS_DIR, c.group));
        chmodSync(path.join(root, ROOT_HOOKS_DIR, c.group), 0o755);
        const sink = await startSignalSink();
        t.teardown(() => sink.close());
        const h = await deployHarness(root, { deploy: { hooks_in_process: inProcess } });
        const dep = deployment({
          id: `${c.group}-0001`,
          name: `${c.group}_config`,
          group: c.group,
          config: c.config,
          inputs: [{ name: 'greeting', value: 'hello' }],
          outputs: [{ name: 'result' }],
          signal: sink.inputs('CFN_SIGNAL', `${c.group}-0001`, `${c.group}_config`),
        });
        const env = { PATH: SYSTEM_PATH, HOME: dir, ...c.env(dir) };
        const report = await runDeployments(h.ctx([dep], { env }));
        t.same(report.ran, [`${c.group}-0001`], 'the hook ran');
        t.equal(sink.received.length, 1, 'one signal');
        const body = sink.received[0]?.body ?? {};
        t.equal(body.deploy_status_code, 0, 'success', { body });
        t.match(String(body.result), new RegExp(`^from ${c.group}`), 'the declared output came back from the hook');
        t.ok(
          readFileSync(path.join(root, 'var/lib/heat-config/deployed', `${c.group}-0001.notify.json`), 'utf8').includes(
            'deploy_status_code',
          ),
          'notify file written',
        );
        if (c.group === 'script') t.match(String(body.deploy_stdout), /hello hello/);
        else c.check?.(t, dir);
        const finished = h.captured.lines.find((l) => l.msg === 'hook finished');
        t.equal(
          finished?.inProcess,
          inProcess,
          inProcess ? 'the agent recognised its own hook and ran it inside itself' : 'forced out of process',
        );
      },
    );
  }
