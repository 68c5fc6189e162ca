import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ec2Collector } from '../../src/collectors/ec2.js';
import {
  configuredUrls,
  linkLocalInterfaces,
  STATE_FILE,
  type Interfaces,
  type MetadataUrlMemory,
} from '../../src/collectors/metadata-urls.js';
import { loadConfig, type CliOverrides } from '../../src/config/load.js';
import { collectAll } from '../../src/daemon/collect-all.js';
import { startEc2Server } from '../helpers/ec2-server.js';
import { collectorContext, refusedUrl } from '../helpers/http-test-server.js';

// [ec2] metadata_urls: tried in order, the answering one remembered; metadata_url's precedence; the "%25*" zone.
// Servers are real, on 127.0.0.1 and [::1]. The link-local case on a real veth is ec2-link-local.test.ts.

const IFACES: Interfaces = {
  lo: [
    {
      address: '::1',
      netmask: 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
      family: 'IPv6',
      mac: '00:00:00:00:00:00',
      internal: true,
      cidr: '::1/128',
      scopeid: 0,
    },
  ],
  eth0: [
    {
      address: '10.0.0.5',
      netmask: '255.255.255.0',
      family: 'IPv4',
      mac: '02:00:00:00:00:01',
      internal: false,
      cidr: '10.0.0.5/24',
    },
    {
      address: 'fe80::1',
      netmask: 'ffff:ffff:ffff:ffff::',
      family: 'IPv6',
      mac: '02:00:00:00:00:01',
      internal: false,
      cidr: 'fe80::1/64',
      scopeid: 2,
    },
  ],
  ens4: [
    {
      address: '10.1.0.5',
      netmask: '255.255.255.0',
      family: 'IPv4',
      mac: '02:00:00:00:00:02',
      internal: false,
      cidr: '10.1.0.5/24',
    },
  ],
  ens5: [
    {
      address: 'fe80::2',
      netmask: 'ffff:ffff:ffff:ffff::',
      family: 'IPv6',
      mac: '02:00:00:00:00:03',
      internal: false,
      cidr: 'fe80::2/64',
      scopeid: 4,
    },
  ],
};

async function config(root: string, ec2: CliOverrides['ec2']) {
  return (await loadConfig({ root, configFiles: [], cli: { ec2 } })).config;
}

t.test(
  'the default list: IPv4, fe80::a9fe:a9fe on each interface with a link-local address, fd00:ec2::254',
  async (t) => {
    t.same(linkLocalInterfaces(IFACES), ['eth0', 'ens5']);
    const { urls, invalid } = configuredUrls(await config(t.testdir(), {}), IFACES);
    t.same(urls, [
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::a9fe:a9fe%25eth0]/latest/meta-data',
      'http://[fe80::a9fe:a9fe%25ens5]/latest/meta-data',
      'http://[fd00:ec2::254]/latest/meta-data',
    ]);
    t.same(invalid, []);
    t.same(
      configuredUrls(await config(t.testdir(), {}), { lo: IFACES.lo }).urls,
      ['http://169.254.169.254/latest/meta-data', 'http://[fd00:ec2::254]/latest/meta-data'],
      'no link-local interface: no link-local URL',
    );
  },
);

t.test(
  'metadata_url, when set, is the only URL; set empty, no metadata service; metadata_urls otherwise',
  async (t) => {
    const root = t.testdir();
    t.same(
      configuredUrls(
        await config(root, { metadata_url: 'http://10.0.0.1/latest/meta-data/', metadata_urls: ['http://a/'] }),
        IFACES,
      ).urls,
      ['http://10.0.0.1/latest/meta-data'],
    );
    t.same(configuredUrls(await config(root, { metadata_url: '', metadata_urls: ['http://a/'] }), IFACES).urls, []);
    const listed = configuredUrls(
      await config(root, {
        metadata_urls: ['http://[fe80::a9fe:a9fe%eth9]/m', 'ftp://x/', 'not a url', 'http://a/m', 'http://a/m/'],
      }),
      IFACES,
    );
    t.same(listed.urls, ['http://[fe80::a9fe:a9fe%eth9]/m', 'http://a/m'], 'order kept, duplicates once');
    // Refused when the configuration is read (test/config/url-options.test.ts), before the collector sees them.
    t.same(listed.invalid, []);
  },
);

t.test(
  'tried in order; the first that answers is used and remembered (memory and state file), and tried first next time',
  async (t) => {
    const root = t.testdir();
    const broken = await startEc2Server({ tree: { 'instance-id': 'i-broken' } });
    const v6 = await startEc2Server({ tree: { 'instance-id': 'i-v6' }, listenHost: '::1' });
    t.teardown(() => Promise.all([broken.close(), v6.close()]));
    broken.fault = '500';
    const zonedV6 = v6.metadataUrl.replace('[::1]', '[::1%25lo]');
    const urls = [broken.metadataUrl, `${await refusedUrl()}/latest/meta-data`, zonedV6];
    const first = await collectorContext('ec2', { root, cli: { ec2: { metadata_urls: urls, timeout: 2 } } });
    t.same((await ec2Collector.collect(first.ctx)).pairs, [{ key: 'ec2', value: { 'instance-id': 'i-v6' } }]);
    t.ok(broken.requests.length > 0, 'the first URL was tried');
    t.equal(v6.requests[0]?.headers.host, `[::1]:${v6.port}`, 'the zone never reaches the Host header');
    t.ok(
      v6.requests.some((r) => r.method === 'PUT' && r.url === '/latest/api/token'),
      'the token URL keeps the zone',
    );
    const stateFile = path.join(root, 'var/lib/os-config-agent', STATE_FILE);
    t.same(JSON.parse(readFileSync(stateFile, 'utf8')), { metadata_url: zonedV6 });
    t.equal(statSync(stateFile).mode & 0o777, 0o600);

    // A restart: fresh memory, the state file says which URL answered; the broken one is now healthy but not asked.
    broken.fault = undefined;
    broken.requests.length = 0;
    const second = await collectorContext('ec2', { root, cli: { ec2: { metadata_urls: urls, timeout: 2 } } });
    t.same((await ec2Collector.collect(second.ctx)).pairs[0]?.value, { 'instance-id': 'i-v6' });
    t.equal(broken.requests.length, 0, 'the remembered URL is asked first');
    // Still in memory: the state file is not read again (its removal changes nothing).
    t.equal((second.ctx.memory as MetadataUrlMemory).metadataUrl, zonedV6);

    // A remembered URL no longer configured is ignored.
    const third = await collectorContext('ec2', {
      root,
      cli: { ec2: { metadata_urls: [broken.metadataUrl], timeout: 2 } },
    });
    t.same((await ec2Collector.collect(third.ctx)).pairs[0]?.value, { 'instance-id': 'i-broken' });
  },
);

t.test(
  'every URL failing: one "source unavailable" line with each reason; last good data kept; next pass recovers',
  async (t) => {
    const root = t.testdir();
    const server = await startEc2Server({ tree: { 'instance-id': 'i-good' }, listenHost: '::1' });
    const hanging = await startEc2Server();
    t.teardown(() => Promise.all([server.close(), hanging.close()]));
    hanging.fault = 'hang';
    const refused = `${await refusedUrl()}/latest/meta-data`;
    const ec2 = { metadata_urls: [refused, hanging.metadataUrl, server.metadataUrl, 'gopher://nope/'], timeout: 0.5 };
    const loaded = await loadConfig({ root, configFiles: [], cli: { DEFAULT: { collectors: ['ec2'] }, ec2 } });
    const tc = await collectorContext('ec2', { root, cli: { ec2 } });
    const deps = {
      config: loaded.config,
      paths: loaded.paths,
      log: tc.ctx.log,
      http: tc.http,
      signal: new AbortController().signal,
      memory: new Map(),
      failing: new Set<string>(),
    };
    const good = await collectAll(deps, undefined);
    t.same(good.pairs, [{ key: 'ec2', value: { 'instance-id': 'i-good' } }]);

    server.fault = '500';
    const before = tc.captured.lines.length;
    const bad = await collectAll(deps, undefined);
    t.same(bad.pairs, good.pairs, 'last good data kept');
    t.match(bad.failures, [{ collector: 'ec2', code: 'ERR_HTTP' }], 'the code every URL failed with');
    const loud = tc.captured.lines.slice(before).filter((l) => ['warn', 'error', 'fatal'].includes(String(l.level)));
    t.equal(loud.length, 1, 'one log line');
    t.equal(loud[0]?.msg, 'source unavailable');
    // The URL that answered last time first, then the others in their order.
    t.match(
      loud[0]?.reason,
      // gopher://nope/ was refused when the configuration was read: the collector never sees it.
      /^none of 3 metadata URLs answered: .*answered 500.*connection refused.*no answer within 0.5 s/,
    );

    const again = await collectAll(deps, undefined);
    t.equal(
      tc.captured.lines.slice(before).filter((l) => String(l.level) === 'warn').length,
      1,
      'a repeat failure is not logged again at warn',
    );
    t.same(again.pairs, good.pairs);
    server.fault = undefined;
    const recovered = await collectAll(deps, undefined);
    t.same(recovered.failures, []);
    t.ok(tc.captured.lines.some((l) => l.msg === 'source available again'));
  },
);
