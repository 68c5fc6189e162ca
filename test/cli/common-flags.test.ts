import { Command } from 'commander';
import t from 'tap';
import {
  addCommonFlags,
  chooseLogLevel,
  commonFlagsOf,
  configSources,
  type CommonFlags,
} from '../../src/cli/common-flags.js';

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

t.test('given before the subcommand or after it: after wins, files add up (before first)', async (t) => {
  const program = addCommonFlags(new Command('p').exitOverride().enablePositionalOptions());
  let flags: CommonFlags = {};
  const sub = addCommonFlags(program.command('s'), 'Common options:').action(() => {
    flags = commonFlagsOf(sub);
  });
  program.parse(
    ['--root', '/before', '--log-level', 'debug', '--config-file', 'a', 's', '--root', '/after', '--config-file', 'b'],
    { from: 'user' },
  );
  t.same(flags, { root: '/after', logLevel: 'debug', configFile: ['a', 'b'] });
});

t.test('a bad --log-level is a usage error', async (t) => {
  t.throws(() => parse(['--log-level', 'loud']), { code: 'commander.invalidArgument' });
  t.equal(parse(['--log-level', 'WARNING']).logLevel, 'warn');
});
