import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { hasUnprintable, urlProblem } from '../../src/config/value-checks.js';
import { secrets } from '../../src/log/redact.js';

// Every option holding a URL is checked when the configuration is read: a wrong one is a configuration problem naming
// the option (the value before it kept), not a failure of every request later. A URL may hold a signature or a
// password, so no problem quotes it.

t.afterEach(() => secrets.clear());

const URL_OPTIONS: Array<[section: string, option: string]> = [
  ['ec2', 'metadata_url'],
  ['ec2', 'metadata_urls'],
  ['cfn', 'metadata_url'],
  ['heat', 'auth_url'],
  ['zaqar', 'auth_url'],
  ['request', 'metadata_url'],
  ['agent', 'http_proxy'],
  ['agent', 'https_proxy'],
];

const SECRET = 'sig-5e3c1a9b';
const BAD = [
  `ftp://files.example/${SECRET}`,
  `http://`,
  `http:///${SECRET}`,
  `http://host name/${SECRET}`,
  `http://host/${SECRET}\u001b[2J`,
  `http://host:port/${SECRET}`,
  `http://host/${SECRET}\u00a0x`,
  `http://[fe80::1/${SECRET}`,
];

function rootWith(t: { testdir(): string }, conf: string): string {
  const root = t.testdir();
  const file = path.join(root, 'etc/os-collect-config.conf');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, conf);
  return root;
}

t.test(
  'a malformed URL in any URL option is an error naming the option; the value is kept and never quoted',
  async (t) => {
    for (const [section, option] of URL_OPTIONS) {
      for (const bad of BAD) {
        const conf = `[${section}]\n${option} = ${bad}\n`;
        const { config, problems } = await loadConfig({ root: rootWith(t, conf) });
        const mine = problems.filter((p) => p.option === option);
        t.equal(mine.length, 1, `[${section}] ${option} = ${JSON.stringify(bad)}: one problem`);
        t.equal(mine[0]?.severity, 'error');
        t.notMatch(mine[0]?.message ?? '', SECRET, 'the URL is not quoted');
        const value = (config as unknown as Record<string, Record<string, unknown>>)[section]![option];
        t.notMatch(JSON.stringify(value) ?? '', SECRET, 'the bad value is not taken');
      }
    }
  },
);

t.test('a bad URL on the command line is reported the same way', async (t) => {
  const { config, problems } = await loadConfig({
    root: t.testdir(),
    cli: { heat: { auth_url: 'keystone:5000/v3' } },
  });
  t.equal(config.heat.auth_url, undefined);
  t.match(problems, [{ severity: 'error', option: 'auth_url', message: /^command line: .*; keeping it unset$/ }]);
});

t.test('valid URLs pass: IPv6 zones, user:password, ports, the defaults; a bare proxy host:port', async (t) => {
  const conf = [
    '[ec2]',
    'metadata_urls = http://169.254.169.254/latest/meta-data',
    'metadata_urls = http://[fe80::a9fe:a9fe%25*]/latest/meta-data',
    'metadata_urls = http://[fe80::a9fe:a9fe%25eth0]:80/latest/meta-data',
    '[heat]',
    'auth_url = https://keystone.example:5000/v3',
    '[request]',
    'metadata_url = https://swift.example/v1/AUTH_x/c/o?temp_url_sig=abc&temp_url_expires=1',
    '[agent]',
    'http_proxy = proxy.local:3128',
    'https_proxy = http://user:pa%40ss@proxy.local:3128',
    '',
  ].join('\n');
  const { config, problems } = await loadConfig({ root: rootWith(t, conf) });
  t.same(problems, []);
  t.equal(config.ec2.metadata_urls.length, 3);
  t.equal(config.agent.http_proxy, 'proxy.local:3128');
  const defaults = await loadConfig({ root: t.testdir() });
  t.same(defaults.problems, [], 'the default metadata URLs pass');
});

t.test('the cfn stack name: whitespace and control characters are refused', async (t) => {
  const { config, problems } = await loadConfig({ root: rootWith(t, '[cfn]\nstack_name = my stack\n') });
  t.equal(config.cfn.stack_name, undefined);
  t.match(problems, [{ severity: 'error', option: 'stack_name' }]);
  const ok = await loadConfig({ root: rootWith(t, '[cfn]\nstack_name = overcloud-Controller-abc/1234\n') });
  t.same(ok.problems, []);
});

t.test('urlProblem: anything WHATWG URL reads as http(s) with a host and no whitespace passes (property)', (t) => {
  fc.assert(
    fc.property(fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true }), (u) => {
      if (hasUnprintable(u)) return true;
      return urlProblem(u) === undefined;
    }),
    { numRuns: 300 },
  );
  t.pass('generated URLs pass');
  fc.assert(
    fc.property(fc.string(), (s) => {
      // Never throws, whatever the text.
      urlProblem(s);
      urlProblem(s, { schemeOptional: true });
    }),
  );
  t.end();
});

t.test('an ec2 URL that is not one never falls back to the default metadata addresses', async (t) => {
  const bad = await loadConfig({ root: rootWith(t, '[ec2]\nmetadata_url = metadata.local/latest\n') });
  t.equal(bad.config.ec2.metadata_url, '', 'empty: no metadata service is asked');
  t.match(bad.problems, [{ severity: 'error', option: 'metadata_url', message: /no metadata service is asked/ }]);
  const list = await loadConfig({
    root: rootWith(t, '[ec2]\nmetadata_urls = http://127.0.0.1:8775/m\nmetadata_urls = ftp://x/\n'),
  });
  t.same(list.config.ec2.metadata_urls, ['http://127.0.0.1:8775/m'], 'the bad entry alone is left out');
  t.match(list.problems, [{ severity: 'error', option: 'metadata_urls', message: /1 of 2 entries refused/ }]);
});
