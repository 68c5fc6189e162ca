import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { hashConfigFiles, loadConfig, type ConfigProblem } from '../../src/config/load.js';
import { SCHEMA, SECTION_NAMES, sectionSpecs } from '../../src/config/options.js';
import { scrubText, secrets } from '../../src/log/redact.js';

// Every test loads with --root <tmpdir>, so the real /etc and home directory are never read.

function rootWith(t: { testdir(): string }, files: Record<string, string> = {}): string {
  const root = t.testdir();
  for (const [rel, text] of Object.entries(files)) {
    const file = path.join(root, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return root;
}

const MAIN = 'etc/os-collect-config.conf';
const problemsOf = (problems: readonly ConfigProblem[], severity: 'warning' | 'error') =>
  problems.filter((p) => p.severity === severity);

t.afterEach(() => secrets.clear());

t.test("defaults equal upstream's option defaults", async (t) => {
  const root = rootWith(t);
  const { config, paths, problems, files } = await loadConfig({ root });
  t.same(problems, []);
  t.same(files, [], 'no config file exists under the root');
  const unmapped = (p: string) => paths.unmap(p);
  t.same(
    {
      ...config.DEFAULT,
      cachedir: unmapped(config.DEFAULT.cachedir),
      backup_cachedir: unmapped(config.DEFAULT.backup_cachedir),
    },
    {
      command: undefined,
      cachedir: '/var/lib/os-collect-config',
      backup_cachedir: '/var/run/os-collect-config',
      collectors: ['heat_local', 'ec2', 'cfn', 'heat', 'request', 'local', 'zaqar'],
      one_time: false,
      min_polling_interval: 1,
      polling_interval: 30,
      print_cachedir: false,
      force: false,
      print_only: false,
      deployment_key: ['deployments'],
      splay: 0,
    },
  );
  t.same(config.ec2, {
    metadata_url: undefined,
    metadata_urls: [
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::a9fe:a9fe%25*]/latest/meta-data',
      'http://[fd00:ec2::254]/latest/meta-data',
    ],
    timeout: 10,
  });
  t.same(
    { ...config.cfn, heat_metadata_hint: unmapped(config.cfn.heat_metadata_hint) },
    {
      metadata_url: undefined,
      heat_metadata_hint: '/var/lib/heat-cfntools/cfn-metadata-server',
      ca_certificate: undefined,
      stack_name: undefined,
      path: [],
      secret_access_key: undefined,
      access_key_id: undefined,
      deployment_key: ['deployments'],
      timeout: 10,
    },
  );
  t.match(config.heat, {
    user_id: undefined,
    password: undefined,
    project_id: undefined,
    auth_url: undefined,
    stack_id: undefined,
    resource_name: undefined,
    region_name: undefined,
  });
  t.same(config.heat_local.path.map(unmapped), ['/var/lib/heat-cfntools/cfn-init-data']);
  t.same(config.local.path.map(unmapped), ['/var/lib/os-collect-config/local-data']);
  t.match(config.request, { metadata_url: undefined, timeout: 10 });
  t.same(config.keystone, { cache_dir: undefined, cache_ttl: 1800 });
  t.match(config.zaqar, {
    user_id: undefined,
    password: undefined,
    project_id: undefined,
    auth_url: undefined,
    queue_id: undefined,
    use_websockets: false,
    region_name: undefined,
    ssl_certificate_validation: false,
    ca_file: undefined,
  });
});

t.test('--root maps every path option (defaults and configured) but never URLs', async (t) => {
  const root = rootWith(t, {
    [MAIN]: [
      '[DEFAULT]',
      'cachedir = /srv/cache',
      '[cfn]',
      'metadata_url = http://cfn.example:8000/v1/',
      'ca_certificate = /etc/ssl/ca.pem',
      '[request]',
      'metadata_url = http://swift.example/v1/o',
      '[local]',
      'path = /data/one',
      'path = /data/two',
      '[keystone]',
      'cache_dir = /var/cache/ks',
      '[zaqar]',
      'ca_file = /etc/zaqar.pem',
      '[agent]',
      'console = /dev/console',
      '[apply]',
      'templates = /usr/libexec/os-apply-config/templates',
      '[refresh]',
      'base_dir = /usr/libexec/os-refresh-config',
    ].join('\n'),
  });
  const { config, problems } = await loadConfig({ root });
  t.same(problems, []);
  let checked = 0;
  for (const section of SECTION_NAMES) {
    for (const [name, spec] of Object.entries(sectionSpecs(section))) {
      if (!spec.path) continue;
      const value = (config[section] as Record<string, unknown>)[name];
      const values = Array.isArray(value)
        ? (value as string[])
        : value === undefined || value === ''
          ? []
          : [value as string];
      t.ok(values.length > 0, `${section}.${name} has a value in this test`);
      for (const v of values)
        t.ok(v === root || v.startsWith(`${root}/`), `${section}.${name} = ${v} is under the root`);
      checked++;
    }
  }
  t.ok(checked >= 15, `checked ${checked} path options`);
  t.equal(config.DEFAULT.cachedir, `${root}/srv/cache`);
  t.same(config.local.path, [`${root}/data/one`, `${root}/data/two`]);
  t.same(config.deploy.hooks_dir, [`${root}/usr/libexec/heat-config/hooks`, `${root}/var/lib/heat-config/hooks`]);
  t.equal(config.deploy.deployed_dir, `${root}/var/lib/heat-config/deployed`);
  t.equal(config.apply.output, root, 'the output root "/" becomes the root itself');
  t.same(
    config.ec2.metadata_urls,
    [
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::a9fe:a9fe%25*]/latest/meta-data',
      'http://[fd00:ec2::254]/latest/meta-data',
    ],
    'URLs are not paths',
  );
  t.equal(config.cfn.metadata_url, 'http://cfn.example:8000/v1/');
  t.equal(config.request.metadata_url, 'http://swift.example/v1/o');
});

t.test('an empty path option stays empty (config_target = "" means never)', async (t) => {
  const root = rootWith(t, { [MAIN]: '[agent]\nconfig_target =\n' });
  const { config } = await loadConfig({ root });
  t.equal(config.agent.config_target, '');
});

t.test('precedence: defaults < main file < conf.d files (sorted) < command line', async (t) => {
  const root = rootWith(t, {
    [MAIN]: '[DEFAULT]\npolling_interval = 5\nmin_polling_interval = 2\nsplay = 3\ncommand = from-main\n',
    [`${MAIN}.d/20-b.conf`]: '[DEFAULT]\nsplay = 20\n',
    [`${MAIN}.d/10-a.conf`]: '[DEFAULT]\nsplay = 10\nmin_polling_interval = 4\n',
    [`${MAIN}.d/30-ignored.txt`]: '[DEFAULT]\nsplay = 99\n',
  });
  const { config, files, hashedFiles, problems } = await loadConfig({
    root,
    cli: { DEFAULT: { polling_interval: '7', command: 'from-cli' } },
  });
  t.same(problems, []);
  t.same(files, [`${root}/${MAIN}`, `${root}/${MAIN}.d/10-a.conf`, `${root}/${MAIN}.d/20-b.conf`]);
  t.same(hashedFiles, [`${root}/${MAIN}`], 'only the config file decides a reload, as upstream hashes config_file');
  t.equal(config.DEFAULT.polling_interval, 7, 'command line wins');
  t.equal(config.DEFAULT.command, 'from-cli');
  t.equal(config.DEFAULT.splay, 20, 'the last conf.d file wins');
  t.equal(config.DEFAULT.min_polling_interval, 4);
});

t.test('discovery: ~/os-collect-config.conf (under the root) is preferred to /etc', async (t) => {
  const home = path.relative('/', os.homedir());
  const root = rootWith(t, {
    [MAIN]: '[DEFAULT]\ncommand = etc\n',
    [`${home}/os-collect-config.conf`]: '[DEFAULT]\ncommand = home\n',
  });
  const { config, files } = await loadConfig({ root });
  t.equal(config.DEFAULT.command, 'home');
  t.same(files, [path.join(root, home, 'os-collect-config.conf')]);
});

t.test('discovery: the conf.d directory is read even without the main file', async (t) => {
  const root = rootWith(t, { [`${MAIN}.d/a.conf`]: '[DEFAULT]\ncommand = from-dir\n' });
  const { config, files, hashedFiles } = await loadConfig({ root });
  t.equal(config.DEFAULT.command, 'from-dir');
  t.same(files, [`${root}/${MAIN}.d/a.conf`]);
  t.same(hashedFiles, []);
});

t.test('--config-file replaces the default file; missing ones are errors', async (t) => {
  const root = rootWith(t, {
    [MAIN]: '[DEFAULT]\ncommand = default-file\n',
    'opt/a.conf': '[DEFAULT]\ncommand = a\npolling_interval = 3\n',
    'opt/b.conf': '[DEFAULT]\ncommand = b\n',
  });
  const { config, files, hashedFiles, problems } = await loadConfig({
    root,
    configFiles: ['/opt/a.conf', '/opt/b.conf', '/opt/missing.conf'],
  });
  t.same(files, [`${root}/opt/a.conf`, `${root}/opt/b.conf`], 'given as the instance sees them, mapped under the root');
  t.same(hashedFiles, files);
  t.equal(config.DEFAULT.command, 'b', 'later files win');
  t.equal(config.DEFAULT.polling_interval, 3);
  t.same(problems, [
    { severity: 'error', file: `${root}/opt/missing.conf`, message: 'config file not found', unreadable: true },
  ]);
});

t.test('--config-dir replaces the default conf.d; its *.conf files are read sorted after the files', async (t) => {
  const root = rootWith(t, {
    [MAIN]: '[DEFAULT]\ncommand = main\nsplay = 1\n',
    [`${MAIN}.d/x.conf`]: '[DEFAULT]\nsplay = 50\n',
    'extra/b.conf': '[DEFAULT]\nsplay = 3\n',
    'extra/a.conf': '[DEFAULT]\nsplay = 2\ncommand = extra\n',
  });
  const { config, files, problems } = await loadConfig({ root, configDirs: ['/extra', '/nope'] });
  t.same(files, [`${root}/${MAIN}`, `${root}/extra/a.conf`, `${root}/extra/b.conf`]);
  t.equal(config.DEFAULT.splay, 3);
  t.equal(config.DEFAULT.command, 'extra');
  t.same(problems, [
    { severity: 'error', file: `${root}/nope`, message: 'config directory not found', unreadable: true },
  ]);
});

t.test('parse problems carry file and line; the rest of the file still applies', async (t) => {
  const root = rootWith(t, { [MAIN]: 'stray = 1\n[DEFAULT]\ncommand = ok\n' });
  const { config, problems } = await loadConfig({ root });
  t.equal(config.DEFAULT.command, 'ok');
  t.same(problems, [{ severity: 'error', file: `${root}/${MAIN}`, line: 1, message: 'option outside any [section]' }]);
});

t.test('dashed keys are ignored (as upstream) with a warning naming the file spelling', async (t) => {
  const root = rootWith(t, {
    [MAIN]: '[DEFAULT]\npolling-interval = 5\n[heat_local]\npath = /x\n[cfn]\nmetadata-url = http://h/\n',
  });
  const { config, problems } = await loadConfig({ root });
  t.equal(config.DEFAULT.polling_interval, 30, 'the dashed key did not apply');
  t.equal(config.cfn.metadata_url, undefined);
  t.same(problemsOf(problems, 'warning'), [
    {
      severity: 'warning',
      file: `${root}/${MAIN}`,
      section: 'DEFAULT',
      option: 'polling-interval',
      message: 'unknown option ignored; the option is spelled "polling_interval" in files',
    },
    {
      severity: 'warning',
      file: `${root}/${MAIN}`,
      section: 'cfn',
      option: 'metadata-url',
      message: 'unknown option ignored; the option is spelled "metadata_url" in files',
    },
  ]);
});

t.test('unknown options and sections are warnings; known sections match in any case', async (t) => {
  const root = rootWith(t, {
    [MAIN]:
      '[DEFAULT]\nno_such = 1\n[nosection]\nx = 1\n[Heat]\nuser_id = u1\n[CFN]\nstack_name = s\n[default]\ncommand = lower\n',
  });
  const { config, problems } = await loadConfig({ root });
  t.equal(config.heat.user_id, 'u1', '[Heat] is [heat], as oslo.config normalises group names');
  t.equal(config.cfn.stack_name, 's');
  t.equal(config.DEFAULT.command, undefined, '[default] is not [DEFAULT]');
  t.same(
    problems.map((p) => [p.severity, p.section, p.option, p.message]),
    [
      ['warning', 'DEFAULT', 'no_such', 'unknown option ignored'],
      ['warning', 'nosection', undefined, 'unknown section [nosection] ignored'],
      ['warning', 'default', undefined, 'unknown section [default] ignored'],
    ],
  );
});

t.test('names that exist on Object.prototype are unknown, not a crash', async (t) => {
  const root = rootWith(t, {
    [MAIN]:
      '[DEFAULT]\nconstructor = x\n__proto__ = y\ntoString = z\n[constructor]\nkeys = 1\n[__proto__]\na = 1\n[hasOwnProperty]\nb = 2\n',
  });
  const { config, problems } = await loadConfig({ root });
  t.equal(problems.length, 6);
  t.ok(problems.every((p) => p.severity === 'warning'));
  t.equal(Object.getPrototypeOf(config.DEFAULT), Object.prototype);
  t.equal(config.DEFAULT.command, undefined);
});

t.test('bad values are errors that name the problem, and the previous value is kept', async (t) => {
  const root = rootWith(t, {
    [MAIN]:
      '[DEFAULT]\npolling_interval = fast\nsplay = -1\none_time = maybe\nmin_polling_interval =\n[keystone]\ncache_ttl = 1.5\n[agent]\nhttp_retries = 3\n',
  });
  const { config, problems } = await loadConfig({ root, cli: { DEFAULT: { polling_interval: 'slow' } } });
  t.equal(config.DEFAULT.polling_interval, 30);
  t.equal(config.DEFAULT.splay, 0);
  t.equal(config.DEFAULT.one_time, false);
  t.equal(config.DEFAULT.min_polling_interval, 1);
  t.equal(config.keystone.cache_ttl, 1800);
  t.equal(config.agent.http_retries, 3, 'good values around bad ones still apply');
  t.same(
    problems.map((p) => [p.severity, p.option, p.message]),
    [
      ['error', 'polling_interval', '"fast" is not a number; keeping 30'],
      ['error', 'splay', '-1 is below the minimum 0; keeping 0'],
      ['error', 'one_time', '"maybe" is not a boolean (true/false); keeping false'],
      ['error', 'min_polling_interval', '"" is not a number; keeping 1'],
      ['error', 'cache_ttl', '"1.5" is not a whole number; keeping 1800'],
      ['error', 'polling_interval', 'command line: "slow" is not a number; keeping 30'],
    ],
  );
});

t.test('booleans accept the oslo spellings', async (t) => {
  for (const [text, value] of [
    ['true', true],
    ['True', true],
    ['1', true],
    ['yes', true],
    ['on', true],
    ['false', false],
    ['FALSE', false],
    ['0', false],
    ['no', false],
    ['off', false],
  ] as const) {
    const root = rootWith(t, { [MAIN]: `[DEFAULT]\none_time = ${text}\n` });
    t.equal((await loadConfig({ root })).config.DEFAULT.one_time, value, text);
  }
});

t.test('collectors: repeated lines, comma list, JSON list; unknown names reported', async (t) => {
  const cases: Array<[string, string[]]> = [
    ['collectors = heat_local\ncollectors = cfn\ncollectors = local\n', ['heat_local', 'cfn', 'local']],
    ['collectors = ec2,cfn\n', ['ec2', 'cfn']],
    ['collectors = ec2, cfn , local\n', ['ec2', 'cfn', 'local']],
    ['collectors = ["ec2","cfn"]\n', ['ec2', 'cfn']],
    ["collectors = ['request', 'local']\n", ['request', 'local']],
    ['collectors = ec2 local\n', ['ec2', 'local']],
  ];
  for (const [lines, expected] of cases) {
    const root = rootWith(t, { [MAIN]: `[DEFAULT]\n${lines}` });
    const { config, problems } = await loadConfig({ root });
    t.same(config.DEFAULT.collectors, expected, JSON.stringify(lines));
    t.same(problems, []);
  }
  const root = rootWith(t, { [MAIN]: '[DEFAULT]\ncollectors = local\ncollectors = config_drive,bogus\n' });
  const { config, problems } = await loadConfig({ root });
  t.same(config.DEFAULT.collectors, ['local']);
  t.same(
    problems.map((p) => [p.severity, p.option, p.message]),
    [
      [
        'error',
        'collectors',
        'unknown collector "config_drive" ignored (known: heat_local, ec2, cfn, heat, request, local, zaqar)',
      ],
      [
        'error',
        'collectors',
        'unknown collector "bogus" ignored (known: heat_local, ec2, cfn, heat, request, local, zaqar)',
      ],
    ],
  );
});

t.test('multi-valued options add up across files (oslo.config); the command line replaces them', async (t) => {
  const root = rootWith(t, {
    [MAIN]: '[DEFAULT]\ncollectors = ec2\n[local]\npath = /a\n',
    [`${MAIN}.d/x.conf`]: '[DEFAULT]\ncollectors = local\n[local]\npath = /b\n',
  });
  const fromFiles = (await loadConfig({ root })).config;
  t.same(fromFiles.DEFAULT.collectors, ['ec2', 'local']);
  t.same(fromFiles.local.path, [`${root}/a`, `${root}/b`]);
  const withCli = (
    await loadConfig({ root, cli: { DEFAULT: { collectors: ['heat_local'] }, local: { path: ['/c'] } } })
  ).config;
  t.same(withCli.DEFAULT.collectors, ['heat_local'], 'positional collectors replace the file list');
  t.same(withCli.local.path, [`${root}/c`]);
});

t.test('command-line values: strings, numbers, booleans and lists convert like file values', async (t) => {
  const root = rootWith(t);
  const { config, problems } = await loadConfig({
    root,
    cli: {
      DEFAULT: { polling_interval: 12, one_time: true, print_only: false, deployment_key: ['a', 'b'] },
      heat_local: { path: '/single' },
    },
  });
  t.same(problems, []);
  t.equal(config.DEFAULT.polling_interval, 12);
  t.equal(config.DEFAULT.one_time, true);
  t.equal(config.DEFAULT.print_only, false);
  t.same(config.DEFAULT.deployment_key, ['a', 'b']);
  t.same(config.heat_local.path, [`${root}/single`]);
  const unknown = await loadConfig({ root, cli: { DEFAULT: { not_an_option: 'x' }, nosection: { y: 1 } } as never });
  t.same(unknown.problems, [], 'unknown command-line keys are ignored (commander rejects them earlier)');
});

t.test('force implies one_time', async (t) => {
  const root = rootWith(t, { [MAIN]: '[DEFAULT]\nforce = true\n' });
  t.equal((await loadConfig({ root })).config.DEFAULT.one_time, true);
  t.equal((await loadConfig({ root: rootWith(t), cli: { DEFAULT: { force: true } } })).config.DEFAULT.one_time, true);
  t.equal((await loadConfig({ root: rootWith(t) })).config.DEFAULT.one_time, false);
});

t.test('interpolation uses final values: defaults, later files, the command line, other sections', async (t) => {
  const root = rootWith(t, {
    [MAIN]: [
      '[DEFAULT]',
      'backup_cachedir = ${cachedir}/backup',
      'command = echo $$OS_CONFIG_FILES in $cachedir for $heat.user_id',
      '[heat]',
      'user_id = $stack_id-user',
      'stack_id = stack/1',
      '[cfn]',
      'stack_name = $cachedir',
      'access_key_id = \\$literal',
    ].join('\n'),
  });
  const { config, problems } = await loadConfig({ root });
  t.same(problems, []);
  t.equal(
    config.DEFAULT.backup_cachedir,
    `${root}/var/lib/os-collect-config/backup`,
    'the default of cachedir, then mapped under the root',
  );
  t.equal(
    config.DEFAULT.command,
    'echo $OS_CONFIG_FILES in /var/lib/os-collect-config for stack/1-user',
    'recursive and dotted references',
  );
  t.equal(config.cfn.stack_name, '/var/lib/os-collect-config', 'a name unknown in [cfn] falls back to [DEFAULT]');
  t.equal(config.cfn.access_key_id, '$literal');

  const withCli = await loadConfig({ root, cli: { DEFAULT: { cachedir: '/elsewhere' } } });
  t.equal(
    withCli.config.DEFAULT.backup_cachedir,
    `${root}/elsewhere/backup`,
    'the command-line value is the one substituted',
  );

  const later = rootWith(t, {
    [MAIN]: '[DEFAULT]\nbackup_cachedir = $cachedir/b\n',
    [`${MAIN}.d/z.conf`]: '[DEFAULT]\ncachedir = /late\n',
  });
  t.equal(
    (await loadConfig({ root: later })).config.DEFAULT.backup_cachedir,
    `${later}/late/b`,
    'a value set by a later file',
  );

  const cliRef = await loadConfig({ root: rootWith(t), cli: { DEFAULT: { command: 'ls $$HOME $cachedir' } } });
  t.equal(
    cliRef.config.DEFAULT.command,
    'ls $HOME /var/lib/os-collect-config',
    'command-line values are interpolated too',
  );
});

t.test('unknown, unset and self-referencing names are kept literally with a warning', async (t) => {
  const root = rootWith(t, {
    [MAIN]:
      '[DEFAULT]\ncommand = echo $OS_CONFIG_FILES ${cfn.stack_name}\n[heat]\nuser_id = $password\nproject_id = $project_id\n',
  });
  const { config, problems } = await loadConfig({ root });
  t.equal(config.DEFAULT.command, 'echo $OS_CONFIG_FILES ${cfn.stack_name}');
  t.equal(config.heat.user_id, '$password', 'heat.password is unset');
  t.equal(config.heat.project_id, '$project_id');
  t.same(
    problems.map((p) => [p.severity, p.section, p.option, p.message.replace(/ names no option.*/, '')]),
    [
      ['warning', 'DEFAULT', 'command', '"$OS_CONFIG_FILES"'],
      ['warning', 'DEFAULT', 'command', '"$cfn.stack_name"'],
      ['warning', 'heat', 'user_id', '"$password"'],
      ['warning', 'heat', 'project_id', '"$project_id"'],
    ],
  );
  t.match(problems[0]?.message, /write \$\$ for a literal \$/);
});

t.test('the result is deeply frozen', async (t) => {
  const { config, files, problems } = await loadConfig({ root: rootWith(t) });
  t.ok(Object.isFrozen(config));
  for (const section of SECTION_NAMES) t.ok(Object.isFrozen(config[section]), section);
  t.ok(Object.isFrozen(config.DEFAULT.collectors));
  t.ok(Object.isFrozen(config.local.path));
  t.ok(Object.isFrozen(files));
  t.ok(Object.isFrozen(problems));
  t.throws(() => {
    (config.DEFAULT as { command?: string }).command = 'x';
  }, TypeError);
  t.throws(() => (config.DEFAULT.collectors as string[]).push('x'), TypeError);
});

t.test('secret option values are registered for scrubbing', async (t) => {
  const root = rootWith(t, {
    [MAIN]:
      '[heat]\npassword = heat-pw-1234\n[zaqar]\npassword = zaqar-pw-5678\n[cfn]\nsecret_access_key = cfn-sk-9012\naccess_key_id = AKID-visible\n',
  });
  const { config } = await loadConfig({ root });
  t.equal(config.heat.password, 'heat-pw-1234', 'the config itself keeps the value');
  t.equal(
    scrubText('a heat-pw-1234 b zaqar-pw-5678 c cfn-sk-9012 d AKID-visible'),
    'a [REDACTED] b [REDACTED] c [REDACTED] d AKID-visible',
  );
  const secretOptions = SECTION_NAMES.flatMap((s) =>
    Object.entries(sectionSpecs(s))
      .filter(([, spec]) => spec.secret)
      .map(([n]) => `${s}.${n}`),
  );
  t.same(secretOptions.sort(), ['cfn.secret_access_key', 'heat.password', 'zaqar.password']);
});

t.test('what the URLs of the configuration carry is registered: user-info passwords, signatures, tokens', async (t) => {
  const root = rootWith(t, {
    [MAIN]: [
      '[request]',
      'metadata_url = http://u:url-pw-1111@127.0.0.1/o?temp_url_sig=url-sig-2222&temp_url_expires=1700000000',
      '[zaqar]',
      'auth_url = http://zu:auth-pw-3333@127.0.0.1:5000/v3',
      '[ec2]',
      'metadata_urls = http://127.0.0.1/latest?token=url-tok-4444',
      '',
    ].join('\n'),
  });
  await loadConfig({ root });
  t.equal(
    scrubText('url-pw-1111 url-sig-2222 auth-pw-3333 url-tok-4444 1700000000'),
    '[REDACTED] [REDACTED] [REDACTED] [REDACTED] 1700000000',
    'each is scrubbed wherever it turns up, not only inside its URL',
  );
  await loadConfig({ root: rootWith(t, { [MAIN]: '[DEFAULT]\n' }) });
  t.equal(scrubText('url-sig-2222'), 'url-sig-2222', 'a new configuration replaces them');
});

t.test('an unknown option with a secret name is ignored, and its value scrubbed all the same', async (t) => {
  const root = rootWith(t, { [MAIN]: '[heat]\npasswd = typo-pw-9999\nuser = not-secret-1234\n' });
  const { problems } = await loadConfig({ root });
  t.ok(
    problems.some((p) => p.option === 'passwd' && /unknown option/.test(p.message)),
    'reported as unknown',
  );
  t.equal(scrubText('typo-pw-9999 not-secret-1234'), '[REDACTED] not-secret-1234');
});

t.test('hashConfigFiles changes exactly when content changes', async (t) => {
  const root = rootWith(t, { 'a.conf': '[DEFAULT]\ncommand = a\n', 'b.conf': 'x' });
  const a = path.join(root, 'a.conf');
  const b = path.join(root, 'b.conf');
  const first = await hashConfigFiles([a, b]);
  t.match(first, /^[0-9a-f]{32}$/);
  t.equal(await hashConfigFiles([a, b]), first, 'stable');
  writeFileSync(a, '[DEFAULT]\ncommand = b\n');
  const second = await hashConfigFiles([a, b]);
  t.not(second, first, 'content change changes the hash');
  t.equal(await hashConfigFiles([a, b, path.join(root, 'missing')]), second, 'missing files are skipped');
  t.equal(await hashConfigFiles([]), 'd41d8cd98f00b204e9800998ecf8427e', 'no files: MD5 of nothing');
});

t.test("SCHEMA sections are the ones upstream registers plus the agent's own", async (t) => {
  t.same(Object.keys(SCHEMA), [
    'DEFAULT',
    'ec2',
    'cfn',
    'heat',
    'heat_local',
    'local',
    'request',
    'keystone',
    'zaqar',
    'agent',
    'apply',
    'refresh',
    'deploy',
  ]);
});

t.test(
  'a value outside what an option accepts is an error, from a file as from a flag; the default is kept',
  async (t) => {
    const root = rootWith(t, {
      [MAIN]: '[agent]\nlog_level = shout\npoll_jitter = 5\n[deploy]\nhook_memory_max = lots\nhook_cpu_quota = 50\n',
    });
    const { config, problems } = await loadConfig({ root, cli: { deploy: { hook_cpu_quota: 'half' } } });
    t.equal(config.agent.log_level, 'info');
    t.equal(config.agent.poll_jitter, 0.1);
    t.equal(config.deploy.hook_memory_max, '');
    t.equal(config.deploy.hook_cpu_quota, '');
    t.same(
      problems.map((p) => [p.severity, p.file === undefined ? 'cli' : path.basename(p.file), p.option, p.message]),
      [
        [
          'error',
          'os-collect-config.conf',
          'log_level',
          '"shout" is not a log level (fatal, error, warn, info, debug, trace, silent); keeping "info"',
        ],
        ['error', 'os-collect-config.conf', 'poll_jitter', '5 is above the maximum 1; keeping 0.1'],
        [
          'error',
          'os-collect-config.conf',
          'hook_memory_max',
          '"lots" is not a memory limit (512M, 2G, 50%, infinity); keeping ""',
        ],
        ['error', 'os-collect-config.conf', 'hook_cpu_quota', '"50" is not a CPU quota (50%, 200%); keeping ""'],
        ['error', 'cli', 'hook_cpu_quota', 'command line: "half" is not a CPU quota (50%, 200%); keeping ""'],
      ],
    );
  },
);

t.test('the accepted spellings of checked options load without a problem', async (t) => {
  const root = rootWith(t, {
    [MAIN]: '[agent]\nlog_level = WARNING\npoll_jitter = 1\n[deploy]\nhook_memory_max = 1.5G\nhook_cpu_quota = 200%\n',
  });
  const { config, problems } = await loadConfig({ root });
  t.same(problems, []);
  t.equal(config.agent.log_level, 'WARNING');
  t.equal(config.deploy.hook_memory_max, '1.5G');
  for (const value of ['512M', '50%', 'infinity', '1048576', '']) {
    const r = rootWith(t, { [MAIN]: `[deploy]\nhook_memory_max = ${value}\n` });
    t.same((await loadConfig({ root: r })).problems, [], value);
  }
});

t.test('a duration longer than a timer can wait is an error, not a busy loop; the default is kept', async (t) => {
  const root = rootWith(t, {
    [MAIN]: '[DEFAULT]\npolling_interval = 3000000\n[deploy]\nhook_timeout = 2147483\nsignal_max_backoff = 1e7\n',
  });
  const { config, problems } = await loadConfig({ root });
  t.equal(config.DEFAULT.polling_interval, 30);
  t.equal(config.deploy.hook_timeout, 2147483, 'the longest wait a timer can do is accepted');
  t.equal(config.deploy.signal_max_backoff, 300);
  t.same(
    problems.map((p) => [p.option, p.message]),
    [
      ['polling_interval', '3000000 is above the maximum 2147483; keeping 30'],
      ['signal_max_backoff', '10000000 is above the maximum 2147483; keeping 300'],
    ],
  );
});
