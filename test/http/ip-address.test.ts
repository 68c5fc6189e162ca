import t from 'tap';
import { inRange, parseCidr, parseIp, sameIp } from '../../src/http/ip-address.js';

// IP literals as bytes: the forms URLs and no_proxy write them in, IPv4-mapped IPv6 seen as IPv4, CIDR bounds.

const hex = (text: string) => Buffer.from(parseIp(text)?.bytes ?? []).toString('hex');

t.test('parseIp: IPv4, IPv6 in every written form, zone ids, brackets; anything else is not an address', async (t) => {
  t.equal(hex('169.254.169.254'), 'a9fea9fe');
  t.equal(hex('fd00:ec2::254'), 'fd000ec2000000000000000000000254');
  t.equal(hex('[fe80::a9fe:a9fe%25eth0]'), 'fe80000000000000' + '0000' + '0000' + 'a9fea9fe');
  t.equal(hex('fe80::1%eth0'), 'fe800000000000000000000000000001');
  t.equal(hex('::1'), '00000000000000000000000000000001');
  t.equal(hex('1::'), '00010000000000000000000000000000');
  t.equal(hex('1:2:3:4:5:6:7:8'), '00010002000300040005000600070008');
  t.equal(hex('::1.2.3.4'), '00000000000000000000000001020304', 'dotted tail without the mapped prefix stays IPv6');
  t.same(
    parseIp('::ffff:169.254.169.254'),
    { version: 4, bytes: Uint8Array.from([169, 254, 169, 254]) },
    'IPv4-mapped: the IPv4 address',
  );
  t.same(
    parseIp('[::ffff:a9fe:a9fe]'),
    { version: 4, bytes: Uint8Array.from([169, 254, 169, 254]) },
    'as the URL parser writes it',
  );
  for (const bad of ['', 'example.com', '1.2.3', '256.1.1.1', '1.2.3.4.5', 'fe80:::1', '[1.2.3.4]x', 'g::1'])
    t.equal(parseIp(bad), undefined, bad);
});

t.test('parseCidr and inRange: prefix bounds, families kept apart, bits inside a byte', async (t) => {
  const link = parseCidr('169.254.0.0/16');
  const ll6 = parseCidr('fe80::/10');
  if (!link || !ll6) throw new Error('ranges');
  t.ok(inRange(parseIp('169.254.169.254')!, link));
  t.notOk(inRange(parseIp('169.253.255.255')!, link));
  t.ok(inRange(parseIp('febf:ffff::1')!, ll6), 'the last address of fe80::/10');
  t.notOk(inRange(parseIp('fec0::1')!, ll6), 'the first address after it');
  t.notOk(inRange(parseIp('::ffff:fe80:1')!, ll6), 'an IPv4 address is never in an IPv6 range');
  t.ok(inRange(parseIp('10.1.2.3')!, parseCidr('0.0.0.0/0')!));
  t.ok(inRange(parseIp('192.168.7.9')!, parseCidr('192.168.7.9/32')!));
  t.notOk(inRange(parseIp('192.168.7.8')!, parseCidr('192.168.7.9/32')!));
  t.ok(
    inRange(parseIp('10.0.0.1')!, parseCidr('::ffff:10.0.0.0/104')!),
    'a mapped range covers the IPv4 range it maps',
  );
  for (const bad of [
    '10.0.0.0/33',
    'fe80::/129',
    '10.0.0.0/',
    '10.0.0.0/x',
    'example.com/8',
    '10.0.0.0',
    '::ffff:10.0.0.0/95',
  ])
    t.equal(parseCidr(bad), undefined, bad);
});

t.test('sameIp compares addresses, not spellings', async (t) => {
  t.ok(sameIp(parseIp('fe80::1')!, parseIp('FE80:0:0:0:0:0:0:1')!));
  t.notOk(sameIp(parseIp('10.0.0.1')!, parseIp('10.0.0.2')!));
  t.notOk(sameIp(parseIp('::a00:1')!, parseIp('10.0.0.1')!), 'an IPv4-compatible IPv6 address is not the IPv4 address');
});
