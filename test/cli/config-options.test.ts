import { Command, CommanderError } from 'commander';
import t from 'tap';
import { ALL_OPTIONS, addConfigOptions, readConfigOverrides, type ConfigScope } from '../../src/cli/config-options.js';
import { loadConfig } from '../../src/config/load.js';
import { SECTION_NAMES, flagName, sectionSpecs } from '../../src/config/options.js';

function parse(args: string[], scope: ConfigScope = ALL_OPTIONS) {
  const cmd = new Command().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  const bindings = addConfigOptions(cmd, { scope, helpAll: false });
  cmd.parse(args, { from: 'user' });
  return readConfigOverrides(cmd, bindings);
}

t.test('no flags: no overrides (config-file values are not hidden by defaults)', async (t) => {
  t.same(parse([]), {});
});

t.test('only the flags given appear, under their section and option name', async (t) => {
  t.same(parse(['--polling-interval', '5', '--cfn-metadata-url', 'http://h/v1/', '--heat-local-path', '/x']), {
    DEFAULT: { polling_interval: '5' },
    cfn: { metadata_url: 'http://h/v1/' },
    heat_local: { path: ['/x'] },
  });
});

t.test('short aliases: -c for command, -i for polling_interval', async (t) => {
  t.same(parse(['-c', 'os-refresh-config', '-i', '7']), {
    DEFAULT: { command: 'os-refresh-config', polling_interval: '7' },
  });
});

t.test('--print sets print_only', async (t) => {
  t.same(parse(['--print']), { DEFAULT: { print_only: true } });
});

t.test('multi-valued flags repeat and keep order', async (t) => {
  t.same(
    parse([
      '--deployment-key',
      'a',
      '--deployment-key',
      'b',
      '--local-path',
      '/one',
      '--local-path=/two',
      '--cfn-path',
      'r.Metadata',
    ]),
    {
      DEFAULT: { deployment_key: ['a', 'b'] },
      local: { path: ['/one', '/two'] },
      cfn: { path: ['r.Metadata'] },
    },
  );
});

t.test('booleans: --x gives true, --no-x gives false, last one wins', async (t) => {
  t.same(parse(['--one-time']), { DEFAULT: { one_time: true } });
  t.same(parse(['--no-one-time']), { DEFAULT: { one_time: false } });
  t.same(parse(['--force', '--no-force']), { DEFAULT: { force: false } });
  t.same(parse(['--no-zaqar-ssl-certificate-validation', '--agent-watch']), {
    zaqar: { ssl_certificate_validation: false },
    agent: { watch: true },
  });
});

t.test('collectors (file only) have no flag; unknown flags are usage errors', async (t) => {
  t.throws(() => parse(['--collectors', 'ec2']), CommanderError);
  t.throws(() => parse(['--no-command']), CommanderError, 'a string option has no --no- form');
});

t.test('a value flag without a value is a usage error', async (t) => {
  t.throws(() => parse(['--cachedir']), CommanderError);
});

t.test('every non-file-only option has exactly its derived flag', async (t) => {
  const cmd = new Command();
  addConfigOptions(cmd, { scope: ALL_OPTIONS, helpAll: true });
  const longs = new Set(cmd.options.map((o) => o.long));
  for (const section of SECTION_NAMES) {
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      const flag = `--${flagName(section, name, spec)}`;
      if (spec.fileOnly) t.notOk(longs.has(flag), `${flag} is file-only`);
      else t.ok(longs.has(flag), flag);
      if (spec.kind === 'bool')
        t.ok(longs.has(`--no-${flagName(section, name, spec)}`), `--no-${flagName(section, name, spec)}`);
    }
  }
  t.equal(new Set(cmd.options.map((o) => o.long)).size, cmd.options.length, 'no duplicate flags');
});

t.test('a command is offered the options it reads, nothing else', async (t) => {
  t.same(parse(['--polling-interval', '3'], { DEFAULT: 'all' }), { DEFAULT: { polling_interval: '3' } });
  t.throws(() => parse(['--cfn-metadata-url', 'x'], { DEFAULT: 'all' }), CommanderError);
  const status: ConfigScope = { DEFAULT: ['cachedir'], agent: ['state_dir'] };
  t.same(parse(['--cachedir', '/c', '--agent-state-dir', '/s'], status), {
    DEFAULT: { cachedir: '/c' },
    agent: { state_dir: '/s' },
  });
  for (const flag of ['--one-time', '--print', '--force', '--agent-watch'])
    t.throws(() => parse([flag], status), { code: 'commander.unknownOption' }, `${flag} is not status's`);
});

t.test('a value of the wrong kind is a usage error before anything runs', async (t) => {
  for (const [flag, value] of [
    ['--polling-interval', 'abc'],
    ['--polling-interval', '-1'],
    ['--agent-http-retries', '1.5'],
    ['--agent-log-format', 'xml'],
  ] as const)
    t.throws(() => parse([flag, value]), { code: 'commander.invalidArgument' }, `${flag} ${value}`);
  t.same(
    parse(['--polling-interval', '$min_polling_interval']),
    {
      DEFAULT: { polling_interval: '$min_polling_interval' },
    },
    "a reference to another option is the loader's to expand and check",
  );
  t.same(parse(['--agent-log-format', 'text']), { agent: { log_format: 'text' } });
});

t.test('help: overrides counted, listed only with help-all; promoted ones with the own flags', async (t) => {
  let text = '';
  const short = new Command('x').configureOutput({ writeOut: (s) => (text += s) });
  addConfigOptions(short, { scope: ALL_OPTIONS, own: ['DEFAULT.one_time'], helpAll: false });
  short.outputHelp();
  t.match(text, /--one-time/);
  t.notMatch(text, /--cfn-metadata-url|--agent-state-dir/);
  t.match(text, /Configuration overrides: \d+ more flags/);
  const all = new Command('x');
  addConfigOptions(all, { scope: ALL_OPTIONS, own: ['DEFAULT.one_time'], helpAll: true });
  t.match(all.helpInformation(), /Configuration overrides[^\n]*:\n(.|\n)*--cfn-metadata-url <value>/);
  t.match(all.helpInformation(), /--cachedir <path>/, 'a path option says so (and is completed as one)');
});

t.test('overrides feed loadConfig: flags beat the file, absent flags do not', async (t) => {
  const root = t.testdir({
    etc: { 'os-collect-config.conf': '[DEFAULT]\npolling_interval = 9\ncommand = from-file\none_time = true\n' },
  });
  const cli = parse(['--polling-interval', '4', '--no-one-time']);
  const { config, problems } = await loadConfig({ root, cli });
  t.same(problems, []);
  t.equal(config.DEFAULT.polling_interval, 4);
  t.equal(config.DEFAULT.one_time, false);
  t.equal(config.DEFAULT.command, 'from-file', 'not overridden by an absent flag');
});
