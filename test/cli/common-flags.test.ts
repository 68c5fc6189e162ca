import { Command } from 'commander';
import t from 'tap';
import { addCommonFlags, chooseLogLevel, configSources, type CommonFlags } from '../../src/cli/common-flags.js';

const parse = (argv: string[]) =>
  addCommonFlags(new Command('x').exitOverride()).parse(argv, { from: 'user' }).opts<CommonFlags>();

t.test('root, repeated config files and directories, log level', async (t) => {
  const flags = parse([
    '--root',
    '/r',
    '--config-file',
    'a.conf',
    '--config-file',
    'b.conf',
    '--config-dir',
    'd',
    '--log-level',
    'warn',
  ]);
  t.same(flags, { root: '/r', configFile: ['a.conf', 'b.conf'], configDir: ['d'], logLevel: 'warn' });
  t.same(configSources(flags, { DEFAULT: { polling_interval: '3' } }), {
    root: '/r',
    configFiles: ['a.conf', 'b.conf'],
    configDirs: ['d'],
    cli: { DEFAULT: { polling_interval: '3' } },
  });
});

t.test("oslo.log's flags are accepted (and hidden from help) so existing unit files keep working", async (t) => {
  const cmd = addCommonFlags(new Command('x').exitOverride());
  t.doesNotThrow(() =>
    cmd.parse(['--log-file', '/var/log/x', '--use-syslog', '--use-journal', '--verbose', '--log-dir', '/d'], {
      from: 'user',
    }),
  );
  t.notMatch(cmd.helpInformation(), /--use-syslog|--log-file/);
});

t.test(
  'log level: --debug wins, then --log-level, then the configured level; a bad configured level falls back to info',
  async (t) => {
    t.equal(chooseLogLevel({ debug: true, logLevel: 'error' }, 'warn'), 'debug');
    t.equal(chooseLogLevel({ logLevel: 'error' }, 'warn'), 'error');
    t.equal(chooseLogLevel({}, 'WARNING'), 'warn', 'oslo spelling');
    t.equal(chooseLogLevel({}, 'loud'), 'info');
  },
);
