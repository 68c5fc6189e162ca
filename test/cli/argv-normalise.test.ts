import { Command } from 'commander';
import t from 'tap';
import { normaliseArgv } from '../../src/cli/argv-normalise.js';
import { ALL_OPTIONS, addConfigOptions, readConfigOverrides } from '../../src/cli/config-options.js';
import { SECTION_NAMES, flagName, sectionSpecs } from '../../src/config/options.js';

t.test('oslo mixed spellings become the dashed flags', async (t) => {
  t.same(normaliseArgv(['--heat_local-path', '/x']), ['--heat-local-path', '/x']);
  t.same(normaliseArgv(['--cfn-ca_certificate=/ca.pem']), ['--cfn-ca-certificate=/ca.pem']);
  t.same(normaliseArgv(['--keystone-cache_dir', '/k', '--keystone-cache_ttl=5']), [
    '--keystone-cache-dir',
    '/k',
    '--keystone-cache-ttl=5',
  ]);
  t.same(normaliseArgv(['--one_time', '--polling_interval', '5']), ['--one-time', '--polling-interval', '5']);
  t.same(
    normaliseArgv(['--polling-interval', '5', '--print']),
    ['--polling-interval', '5', '--print'],
    'already dashed: unchanged',
  );
});

t.test('--noX negations become --no-X, only for booleans', async (t) => {
  t.same(normaliseArgv(['--noforce']), ['--no-force']);
  t.same(normaliseArgv(['--noone_time', '--noprint']), ['--no-one-time', '--no-print']);
  t.same(normaliseArgv(['--no-force']), ['--no-force'], 'the dashed form is kept');
  t.same(
    normaliseArgv(['--nocommand', 'x']),
    ['--nocommand', 'x'],
    'command is not a boolean: left for commander to reject',
  );
  t.same(normaliseArgv(['--nosuchflag']), ['--nosuchflag']);
});

t.test("group booleans: oslo's --<group>-no<name> and the prefix form both work", async (t) => {
  t.same(normaliseArgv(['--zaqar-nouse_websockets']), ['--no-zaqar-use-websockets']);
  t.same(normaliseArgv(['--zaqar-nossl_certificate_validation']), ['--no-zaqar-ssl-certificate-validation']);
  t.same(normaliseArgv(['--nozaqar-use_websockets']), ['--no-zaqar-use-websockets']);
  t.same(normaliseArgv(['--zaqar-use_websockets']), ['--zaqar-use-websockets']);
  t.same(normaliseArgv(['--agent-nowatch']), ['--no-agent-watch']);
});

t.test('every boolean option has its oslo inverse spelling mapped', async (t) => {
  for (const section of SECTION_NAMES) {
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      if (spec.kind !== 'bool') continue;
      const flag = flagName(section, name, spec);
      const oslo = section === 'DEFAULT' ? `--no${spec.flag ?? name}` : `--${section}-no${spec.flag ?? name}`;
      t.same(normaliseArgv([oslo]), [`--no-${flag}`], oslo);
    }
  }
});

t.test('option values are never rewritten, even when they look like flags', async (t) => {
  t.same(normaliseArgv(['--command', '--some_value', 'local']), ['--command', '--some_value', 'local']);
  t.same(normaliseArgv(['-c', '--noforce', '-i', '5']), ['-c', '--noforce', '-i', '5']);
  t.same(normaliseArgv(['--root', '/tmp/a_b', '--config-file', '--odd_name.conf']), [
    '--root',
    '/tmp/a_b',
    '--config-file',
    '--odd_name.conf',
  ]);
  t.same(normaliseArgv(['--command=echo --x_y']), ['--command=echo --x_y'], 'the = form keeps its value');
  t.same(
    normaliseArgv(['--local-path', '/a_b', 'heat_local']),
    ['--local-path', '/a_b', 'heat_local'],
    'positional collector names untouched',
  );
  t.same(normaliseArgv(['--command']), ['--command'], 'a trailing value flag is left for commander to report');
});

t.test('everything after -- is passed through untouched', async (t) => {
  t.same(normaliseArgv(['--one_time', '--', '--heat_local-path', '--noforce']), [
    '--one-time',
    '--',
    '--heat_local-path',
    '--noforce',
  ]);
  t.same(normaliseArgv(['--']), ['--']);
  t.same(normaliseArgv([]), []);
});

t.test('single-dash and positional arguments are untouched', async (t) => {
  t.same(normaliseArgv(['-d', '-x_y', 'ec2', 'heat_local']), ['-d', '-x_y', 'ec2', 'heat_local']);
});

t.test('normalised upstream spellings parse with the real option set', async (t) => {
  const cmd = new Command().exitOverride().allowExcessArguments();
  cmd.option('--root <dir>');
  const bindings = addConfigOptions(cmd, { scope: ALL_OPTIONS, helpAll: false });
  cmd.parse(
    normaliseArgv([
      '--heat_local-path',
      '/h1',
      '--heat_local-path=/h2',
      '--cfn-ca_certificate',
      '/ca',
      '--noforce',
      '--zaqar-nouse_websockets',
      '--command',
      '--odd_value',
      '--root',
      '/r',
    ]),
    { from: 'user' },
  );
  t.same(readConfigOverrides(cmd, bindings), {
    DEFAULT: { force: false, command: '--odd_value' },
    heat_local: { path: ['/h1', '/h2'] },
    cfn: { ca_certificate: '/ca' },
    zaqar: { use_websockets: false },
  });
});
