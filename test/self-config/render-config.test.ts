import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { parseOsloIni } from '../../src/config/oslo-ini.js';
import { mergedAgentSection, renderAgentConfig } from '../../src/self-config/render-config.js';

// Rendering /etc/os-collect-config.conf from Heat's os-collect-config metadata, as upstream's template did, and
// reading the result back through the agent's own config loader.

const HEADER =
  '# Written by os-config-agent from the os-collect-config metadata Heat provides.\n# [DEFAULT] lines Heat does not set and sections other than cfn/heat/zaqar/request are kept on rewrite.\n';

// The shape real Heat 19 writes for POLL_SERVER_CFN (heat-metadata/server-metadata-POLL_SERVER_CFN-CFN_SIGNAL.json).
const CFN_SECTION = {
  collectors: ['cfn', 'local'],
  cfn: {
    metadata_url: 'http://127.0.0.1:8000/v1/',
    access_key_id: 'c85bc1de14b64b889e311fcdd958a3f1',
    secret_access_key: 'sEcReT/with$dollar',
    stack_name: 'demo-cfn',
    path: 'server.Metadata',
  },
};
// ...and for POLL_SERVER_HEAT, after a transport change from CFN (Heat nulls the old transport's values).
const HEAT_SECTION = {
  collectors: ['heat', 'local'],
  heat: {
    user_id: '820cdad7',
    password: 'pw',
    auth_url: 'http://127.0.0.1:5000/v3/',
    project_id: '04aae072',
    stack_id: 'demo-heat/d9632b16',
    resource_name: 'server',
    region_name: null,
  },
  cfn: { metadata_url: null, access_key_id: null, secret_access_key: null, stack_name: null, path: null },
};

function render(section: Record<string, unknown>, existing?: string) {
  const warnings: string[] = [];
  const text = renderAgentConfig(section, existing === undefined ? undefined : parseOsloIni(existing).doc, (_f, m) =>
    warnings.push(m),
  );
  return { text, warnings };
}

async function readBack(t: { testdir(): string }, text: string) {
  const file = path.join(t.testdir(), 'os-collect-config.conf');
  writeFileSync(file, text);
  const loaded = await loadConfig({ configFiles: [file] });
  return loaded;
}

t.test("cold boot, CFN transport: the template's lines, command defaulting to os-refresh-config", async (t) => {
  const { text, warnings } = render(CFN_SECTION);
  t.equal(
    text,
    `${HEADER}[DEFAULT]\ncommand = os-refresh-config\ncollectors = cfn\ncollectors = local\n\n[cfn]\nmetadata_url = http://127.0.0.1:8000/v1/\naccess_key_id = c85bc1de14b64b889e311fcdd958a3f1\nsecret_access_key = sEcReT/with$$dollar\nstack_name = demo-cfn\npath = server.Metadata\n`,
  );
  t.same(warnings, []);
  const loaded = await readBack(t, text);
  t.same(loaded.problems, []);
  t.same(loaded.config.DEFAULT.collectors, ['cfn', 'local']);
  t.equal(loaded.config.cfn.secret_access_key, 'sEcReT/with$dollar', 'a "$" in a secret reads back literally');
  t.same(loaded.config.cfn.path, ['server.Metadata']);
});

t.test('transport change: nulled values leave the old section out; a null region is simply unset', async (t) => {
  const { text } = render(HEAT_SECTION);
  t.notMatch(text, /\[cfn\]/);
  t.notMatch(text, /region_name/);
  const loaded = await readBack(t, text);
  t.same(loaded.config.DEFAULT.collectors, ['heat', 'local']);
  t.equal(loaded.config.heat.stack_id, 'demo-heat/d9632b16');
  t.equal(loaded.config.heat.region_name, undefined);
  t.equal(loaded.config.cfn.access_key_id, undefined);
});

t.test(
  'an existing file: its command, intervals, cachedir and other [DEFAULT] lines and non-transport sections are kept',
  async (t) => {
    const existing = [
      '# image-provided',
      '[DEFAULT]',
      'command = os-refresh-config --timeout 600',
      'polling_interval = 5',
      'min_polling_interval = 0.2',
      'cachedir = /var/lib/occ',
      'collectors = heat_local',
      'collectors = local',
      'deployment_key = deployments',
      'deployment_key = more',
      'backup_cachedir = ${cachedir}-backup',
      'splay = 3',
      '',
      '[cfn]',
      'metadata_url = http://old/v1/',
      '',
      '[agent]',
      'poll_jitter = 0',
      'log_level = debug',
      '',
      '[deploy]',
      'hook_timeout = 60',
      '',
      '[apply]',
      'templates = "  /srv/templates  "',
      '',
    ].join('\n');
    const { text } = render(CFN_SECTION, existing);
    t.equal(
      text,
      HEADER +
        [
          '[DEFAULT]',
          'command = os-refresh-config --timeout 600',
          'polling_interval = 5',
          'cachedir = /var/lib/occ',
          'splay = 3',
          'min_polling_interval = 0.2',
          'deployment_key = deployments',
          'deployment_key = more',
          'collectors = cfn',
          'collectors = local',
          'backup_cachedir = ${cachedir}-backup',
          '',
          '[cfn]',
          'metadata_url = http://127.0.0.1:8000/v1/',
          'access_key_id = c85bc1de14b64b889e311fcdd958a3f1',
          'secret_access_key = sEcReT/with$$dollar',
          'stack_name = demo-cfn',
          'path = server.Metadata',
          '',
          '[agent]',
          'poll_jitter = 0',
          'log_level = debug',
          '',
          '[deploy]',
          'hook_timeout = 60',
          '',
          '[apply]',
          'templates = "  /srv/templates  "',
          '',
        ].join('\n'),
    );
    const loaded = await readBack(t, text);
    t.same(loaded.problems, []);
    t.equal(loaded.config.DEFAULT.backup_cachedir, '/var/lib/occ-backup', 'an interpolated line is kept as written');
    t.equal(loaded.config.DEFAULT.polling_interval, 5);
    t.equal(loaded.config.agent.log_level, 'debug');
    t.equal(loaded.config.apply.templates, '  /srv/templates  ');
    t.same(loaded.config.DEFAULT.deployment_key, ['deployments', 'more']);
    t.equal(render(CFN_SECTION, text).text, text, 'rendering its own output again changes nothing');
  },
);

t.test(
  'the metadata wins for what it sets: command, polling_interval, cachedir, splay; null restores the default',
  async (t) => {
    const existing = '[DEFAULT]\ncommand = old\npolling_interval = 5\ncachedir = /old\n';
    const { text } = render(
      {
        command: 'os-refresh-config',
        polling_interval: 30,
        cachedir: '/var/lib/os-collect-config',
        splay: 2.5,
        collectors: ['request'],
        request: { metadata_url: 'http://swift/x?temp_url_sig=abc&temp_url_expires=1' },
      },
      existing,
    );
    t.match(
      text,
      /command = os-refresh-config\npolling_interval = 30\ncachedir = \/var\/lib\/os-collect-config\nsplay = 2.5\ncollectors = request\n\n\[request\]\nmetadata_url = http:\/\/swift\/x\?temp_url_sig=abc&temp_url_expires=1\n/,
    );
    const nulled = render(
      { command: null, polling_interval: null, collectors: null },
      '[DEFAULT]\ncommand = old\npolling_interval = 5\ncollectors = cfn\n',
    ).text;
    t.equal(nulled, `${HEADER}[DEFAULT]\ncommand = os-refresh-config\n`);
  },
);

t.test('values: numbers, booleans and lists where allowed; odd values are refused with a warning', async (t) => {
  const { text, warnings } = render({
    collectors: ['zaqar', 'bogus', 'local'],
    zaqar: {
      auth_url: 'http://k/v3',
      user_id: 'u',
      password: 'p',
      project_id: 'p1',
      queue_id: 'q',
      use_websockets: false,
      ssl_certificate_validation: true,
      region_name: '',
    },
    cfn: {
      path: ['a.Metadata', 'b.Metadata'],
      stack_name: ['x', 'y'],
      metadata_url: { nested: 1 },
      no_such_option: 'x',
      access_key_id: 'line1\nline2\r\n[DEFAULT]',
    },
    heat: 'not an object',
  });
  t.match(text, /collectors = zaqar\ncollectors = local\n/);
  t.match(
    text,
    /\[zaqar\]\nauth_url = http:\/\/k\/v3\nuser_id = u\npassword = p\nproject_id = p1\nqueue_id = q\nuse_websockets = false\nssl_certificate_validation = true\n/,
  );
  t.notMatch(text, /region_name/, 'an empty value is unset');
  t.match(
    text,
    /\[cfn\]\npath = a\.Metadata\npath = b\.Metadata\naccess_key_id = line1 line2 \[DEFAULT\]\n/,
    'a newline cannot start a new line or section',
  );
  t.notMatch(text, /\[heat\]/);
  t.same(warnings.sort(), [
    'os-collect-config names an unknown collector; left out of the configuration',
    'os-collect-config names an unknown option; left out of the configuration',
    'os-collect-config section is not an object; ignored',
    'os-collect-config value is a list where one value is expected; ignored',
    'os-collect-config value is not a string, number or boolean; ignored',
  ]);
  const loaded = await readBack(t, text);
  t.equal(loaded.config.zaqar.ssl_certificate_validation, true);
  t.same(loaded.config.cfn.path, ['a.Metadata', 'b.Metadata']);
});

t.test('no collectors in the metadata: the existing collectors lines are kept', async (t) => {
  const { text } = render(
    { request: { metadata_url: 'http://x/' } },
    '[DEFAULT]\ncollectors = heat_local\ncollectors = request\n',
  );
  t.match(text, /collectors = heat_local\ncollectors = request\n/);
});

t.test('continuation lines and backslash-dollar in kept values are copied raw', async (t) => {
  const existing = '[DEFAULT]\ncommand = first\n  second\n[agent]\nstate_dir = a\\$b\n';
  const { text } = render({ collectors: ['local'] }, existing);
  t.match(text, /command = first\n {4}second\n/);
  t.match(text, /\[agent\]\nstate_dir = a\\\$b\n/);
  const again = render({ collectors: ['local'] }, text).text;
  t.equal(again, text, 'stable');
});

t.test(
  'mergedAgentSection: os-collect-config of all pairs deep-merged in order; pairs without it ignored',
  async (t) => {
    t.equal(
      mergedAgentSection([
        { key: 'a', value: { x: 1 } },
        { key: 'b', value: [1] },
        { key: 'c', value: null },
      ]),
      undefined,
    );
    const merged = mergedAgentSection([
      {
        key: 'heat_local',
        value: { 'os-collect-config': { collectors: ['heat_local'], cfn: { stack_name: 's', path: 'a.Metadata' } } },
      },
      { key: 'nothing', value: { 'os-collect-config': 'not an object' } },
      {
        key: 'cfn',
        value: JSON.parse(
          '{"os-collect-config": {"collectors": ["cfn"], "cfn": {"path": "b.Metadata"}, "__proto__": {"polluted": true}}}',
        ) as unknown,
      },
    ]);
    t.same(merged, {
      collectors: ['cfn'],
      cfn: { stack_name: 's', path: 'b.Metadata' },
      ['__proto__']: { polluted: true },
    });
    t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');
  },
);
