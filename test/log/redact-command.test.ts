import t from 'tap';
import { redactArgs, redactShellCommand } from '../../src/log/redact-command.js';

// Command lines as they may be logged (src/log/redact-command.ts): secret-named options' and assignments' values go.

t.test(
  'redactArgs: the value of a secret-named option, given apart or after "=", and secret assignments',
  async (t) => {
    t.same(
      redactArgs(['run', '--name', 'db', '--env=MYSQL_ROOT_PASSWORD=s1', '--env=MYSQL_USER=app', '-e', 'API_TOKEN=t1']),
      [
        'run',
        '--name',
        'db',
        '--env=MYSQL_ROOT_PASSWORD=[REDACTED]',
        '--env=MYSQL_USER=app',
        '-e',
        'API_TOKEN=[REDACTED]',
      ],
    );
    t.same(redactArgs(['cfn-init', '--secret-key', 's2', '--region', 'r1', '--password=p w']), [
      'cfn-init',
      '--secret-key',
      '[REDACTED]',
      '--region',
      'r1',
      '--password=[REDACTED]',
    ]);
    t.same(redactArgs(['ls', '--color=auto', '--keystone', 'x', 'name=value', '--', 'KEY=1']), [
      'ls',
      '--color=auto',
      '--keystone',
      'x',
      'name=value',
      '--',
      'KEY=[REDACTED]',
    ]);
    t.same(redactArgs(['tool', '--password']), ['tool', '--password'], 'an option at the end has no value to hide');
  },
);

t.test('redactShellCommand: options and assignments at the start of a word, quoted values whole', async (t) => {
  for (const [text, expected] of [
    [
      '/opt/aws/bin/cfn-init -s st -r web --region r1 --secret-key s3cr3t --configsets all',
      '/opt/aws/bin/cfn-init -s st -r web --region r1 --secret-key [REDACTED] --configsets all',
    ],
    ['tool --verbose --password "two words" --user=admin', 'tool --verbose --password [REDACTED] --user=admin'],
    [
      "DB_PASSWORD='a b' ./run.sh; tool --api-token=t1&&x",
      'DB_PASSWORD=[REDACTED] ./run.sh; tool --api-token=[REDACTED]&&x',
    ],
    ['systemctl restart --no-block httpd', 'systemctl restart --no-block httpd'],
    ['echo a--password=x', 'echo a--password=x'],
    ['touch /tmp/fired', 'touch /tmp/fired'],
  ] as const)
    t.equal(redactShellCommand(text), expected, text);
});
