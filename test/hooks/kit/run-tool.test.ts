import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { formatCommand } from '../../../src/hooks/kit/run-tool.js';
import { HOOK_MODES, SYSTEM_PATH } from '../hook-process.js';

// A tool that is there but cannot start, because the interpreter its #! line names is gone (a package half removed, a
// ruby or python uninstalled): exec(2) says ENOENT as for a missing program. Every group that drives a tool fails at
// once, saying which file and which interpreter, rather than "not installed" with a PATH that holds the file.

/** A script whose interpreter does not exist, as the tool the variable names. */
function brokenTool(dir: string, name: string): string {
  const bin = path.join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const file = path.join(bin, name);
  writeFileSync(file, '#!/nonexistent/ruby -w\nputs "never"\n');
  chmodSync(file, 0o755);
  return file;
}

const GROUPS: ReadonlyArray<{ group: string; variable: string; config: unknown; dirs: string[] }> = [
  {
    group: 'puppet',
    variable: 'HEAT_PUPPET_CMD',
    config: 'notice("hi")',
    dirs: ['HEAT_PUPPET_WORKING', 'HEAT_PUPPET_OUTPUTS', 'HEAT_PUPPET_LOGDIR'],
  },
  {
    group: 'ansible',
    variable: 'HEAT_ANSIBLE_CMD',
    config: '- hosts: localhost\n',
    dirs: ['HEAT_ANSIBLE_WORKING', 'HEAT_ANSIBLE_OUTPUTS'],
  },
  { group: 'salt', variable: 'HEAT_SALT_CMD', config: 'x: {}\n', dirs: ['HEAT_SALT_WORKING', 'HEAT_SALT_OUTPUTS'] },
  { group: 'chef', variable: 'HEAT_CHEF_CMD', config: '[]', dirs: ['HEAT_CHEF_WORKING', 'HEAT_CHEF_OUTPUTS'] },
  { group: 'apply-config', variable: 'HEAT_APPLY_CONFIG_CMD', config: '', dirs: [] },
  {
    group: 'cfn-init',
    variable: 'HEAT_CFN_INIT_CMD',
    config: { 'AWS::CloudFormation::Init': { config: {} } },
    dirs: ['HEAT_CFN_INIT_LAST_METADATA_DIR'],
  },
];

for (const { name: mode, run } of HOOK_MODES)
  for (const g of GROUPS)
    t.test(`${mode}: ${g.group}: a tool whose interpreter is missing fails, naming the interpreter`, async (t) => {
      const dir = t.testdir();
      const tool = brokenTool(dir, `${g.group}-tool`);
      const env: Record<string, string> = { PATH: SYSTEM_PATH, HOME: dir, [g.variable]: tool };
      for (const variable of g.dirs) env[variable] = path.join(dir, variable.toLowerCase());
      const deployment = {
        id: 'c0ffee00-0000-4000-8000-000000000002',
        name: 'broken',
        group: g.group,
        inputs: [],
        outputs: [],
        options: {},
        config: g.config,
      };
      const res = await run(g.group, deployment, { env, timeoutMs: 30_000 });
      t.equal(res.result.deploy_status_code, 1, { stderr: res.stderr });
      t.match(
        String(res.result.deploy_stderr),
        `${tool} is there but cannot start: the interpreter its first line names (/nonexistent/ruby) is not installed.`,
      );
      t.notMatch(String(res.result.deploy_stderr), /is not installed: the command/);
    });

t.test(
  "formatCommand quotes what the shell would split and hides secret options' and assignments' values",
  async (t) => {
    t.equal(
      formatCommand('docker', ['run', '--name', 'db', '--env=MYSQL_ROOT_PASSWORD=s1', '--env=TZ=UTC', 'img', 'a b']),
      "docker run --name db '--env=MYSQL_ROOT_PASSWORD=[REDACTED]' --env=TZ=UTC img 'a b'",
    );
    t.equal(formatCommand('tool', ['--password', 'p w', '--user', 'u']), "tool --password '[REDACTED]' --user u");
  },
);
