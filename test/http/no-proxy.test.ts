import t from 'tap';
import { bypassesProxy, isMetadataAddress, parseNoProxy } from '../../src/http/no-proxy.js';

// no_proxy as curl reads it, and the metadata addresses that never go through a proxy. URL hostnames arrive as
// URL.hostname gives them: lower case, IPv6 in brackets.

const bypass = (noProxy: string, hostname: string, port: number) =>
  bypassesProxy(parseNoProxy(noProxy).rules, hostname, port);

t.test('host names: the name and its subdomains, with or without a leading dot, case-insensitive', async (t) => {
  for (const list of ['example.com', '.example.com', 'EXAMPLE.com', 'example.com.']) {
    t.ok(bypass(list, 'example.com', 80), `${list}: the name`);
    t.ok(bypass(list, 'heat.api.example.com', 443), `${list}: a subdomain`);
    t.notOk(bypass(list, 'badexample.com', 80), `${list}: not a name that merely ends the same`);
    t.notOk(bypass(list, 'example.com.evil.test', 80), `${list}: not a name that starts the same`);
  }
  t.ok(bypass('localhost', 'localhost', 8080));
  t.ok(bypass('example.com', 'example.com.', 80), 'a fully qualified host name (trailing dot)');
  t.notOk(bypass('example.com', '93.184.216.34', 80), 'names are not resolved');
});

t.test('`*` alone exempts everything; inside a name it is not a wildcard', async (t) => {
  t.ok(bypass('*', 'anything.test', 80));
  t.ok(bypass('*', '[fd00::1]', 443));
  t.ok(bypass('other.test, *', '10.0.0.1', 80));
  const list = parseNoProxy('*.example.com');
  t.same(list.malformed, ['*.example.com']);
  t.notOk(bypassesProxy(list.rules, 'a.example.com', 80));
});

t.test('addresses and CIDRs, IPv4 and IPv6, bracketed or not, compared as addresses', async (t) => {
  t.ok(bypass('10.0.0.5', '10.0.0.5', 80));
  t.notOk(bypass('10.0.0.5', '10.0.0.50', 80));
  t.ok(bypass('10.0.0.0/8', '10.200.3.4', 80));
  t.notOk(bypass('10.0.0.0/8', '11.0.0.1', 80));
  t.ok(bypass('fd00::/8', '[fd12::1]', 443));
  t.ok(bypass('[fd00::]/8', '[fd12::1]', 443), 'a bracketed range');
  t.ok(bypass('::1', '[::1]', 80));
  t.ok(bypass('[0:0::1]', '[::1]', 80), 'another spelling of the same address');
  t.ok(bypass('127.0.0.0/8', '[::ffff:7f00:1]', 80), 'an IPv4-mapped host matches the IPv4 range');
  t.notOk(bypass('10.0.0.0/8', 'ten.example', 80));
});

t.test('host:port entries match that port only (the URL default port when it has none)', async (t) => {
  t.ok(bypass('example.com:8080', 'example.com', 8080));
  t.notOk(bypass('example.com:8080', 'example.com', 80));
  t.ok(bypass('example.com:443', 'api.example.com', 443));
  t.ok(bypass('10.0.0.1:80', '10.0.0.1', 80));
  t.ok(bypass('[fd00::1]:8000', '[fd00::1]', 8000));
  t.notOk(bypass('[fd00::1]:8000', '[fd00::1]', 8001));
  t.ok(bypass('fd00::1', '[fd00::1]', 8001), 'unbracketed IPv6 has no port part');
  t.ok(bypass('10.0.0.0/8:5000', '10.1.1.1', 5000));
  t.notOk(bypass('10.0.0.0/8:5000', '10.1.1.1', 5001));
});

t.test('separators and malformed entries: commas and white space; bad entries skipped, the rest kept', async (t) => {
  const list = parseNoProxy(
    ' a.test,b.test  c.test,,\t10.0.0.0/33, host:0, host:99999, :80, exa mple, -bad.test, bad..test, http://x.test, 10.1.0.0/16 ',
  );
  t.same(list.malformed, ['10.0.0.0/33', 'host:0', 'host:99999', ':80', '-bad.test', 'bad..test', 'http://x.test']);
  t.equal(list.rules.length, 6, 'a.test, b.test, c.test, exa, mple (white space separates) and 10.1.0.0/16 kept');
  t.ok(bypassesProxy(list.rules, 'c.test', 80));
  t.ok(bypassesProxy(list.rules, '10.1.2.3', 80));
  t.same(parseNoProxy('').rules, []);
  t.same(parseNoProxy(' , ').malformed, []);
});

t.test(
  'metadata addresses: 169.254.0.0/16, fe80::/10 (any zone), fd00:ec2::254, also IPv4-mapped; nothing else',
  async (t) => {
    for (const host of [
      '169.254.169.254',
      '169.254.0.1',
      '[fe80::a9fe:a9fe]',
      'fe80::1%eth0',
      '[febf::1]',
      '[fd00:ec2::254]',
      '[::ffff:a9fe:a9fe]',
    ]) {
      t.ok(isMetadataAddress(host), host);
    }
    for (const host of [
      '169.255.0.1',
      '127.0.0.1',
      '[::1]',
      '[fec0::1]',
      '[fd00:ec2::255]',
      'metadata.google.internal',
      'instance-data',
      '10.0.0.1',
    ]) {
      t.notOk(isMetadataAddress(host), host);
    }
  },
);
