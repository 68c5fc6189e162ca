import { Command, CommanderError } from 'commander';
import t from 'tap';
import { addConfigOptions, readConfigOverrides } from '../../src/cli/config-options.js';
import { loadConfig } from '../../src/config/load.js';
import { SECTION_NAMES, flagName, sectionSpecs } from '../../src/config/options.js';

function parse(args: string[], sections?: Parameters<typeof addConfigOptions>[1]) {
  const cmd = new Command().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  const bindings = addConfigOptions(cmd, sections);
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
  addConfigOptions(cmd);
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

t.test('sections can be limited', async (t) => {
  t.same(parse(['--polling-interval', '3'], ['DEFAULT']), { DEFAULT: { polling_interval: '3' } });
  t.throws(() => parse(['--cfn-metadata-url', 'x'], ['DEFAULT']), CommanderError);
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
