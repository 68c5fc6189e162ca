import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import { splitZone, withZone } from '../../src/http/zoned-url.js';
import { startTestServer } from '../helpers/http-test-server.js';

// Zone ids in IPv6 URLs ("http://[fe80::a9fe:a9fe%25eth0]/"), which the WHATWG URL parser refuses: split off before
// got parses the URL, and used for the socket. The real link-local case (a veth pair in a network namespace) is in
// test/collectors/ec2-link-local.test.ts; here the zone rides on ::1, where Linux accepts and ignores it.

t.test('splitZone: RFC 6874 "%25" and bare "%" forms; the address canonical; anything else untouched', async (t) => {
  t.same(splitZone('http://[fe80::a9fe:a9fe%25eth0]/latest/meta-data'), {
    url: 'http://[fe80::a9fe:a9fe]/latest/meta-data',
    address: 'fe80::a9fe:a9fe',
    zone: 'eth0',
  });
  t.same(splitZone('http://[fe80::a9fe:a9fe%ens3]:8080/x'), {
    url: 'http://[fe80::a9fe:a9fe]:8080/x',
    address: 'fe80::a9fe:a9fe',
    zone: 'ens3',
  });
  t.same(splitZone('http://[FE80:0::A9FE:A9FE%25br-1.20]/'), {
    url: 'http://[fe80::a9fe:a9fe]/',
    address: 'fe80::a9fe:a9fe',
    zone: 'br-1.20',
  });
  for (const plain of [
    'http://169.254.169.254/latest/meta-data',
    'http://[fd00:ec2::254]/latest',
    'http://[fe80::1%25bad/zone]/',
    'http://[fe80::1%25]/',
    'http://[nothex%25eth0]/',
    'http://[fe80::1%25averyveryverylongname]/',
  ]) {
    t.same(splitZone(plain), { url: plain }, plain);
  }
  t.equal(
    withZone('http://[fe80::a9fe:a9fe]/latest/api/token', 'fe80::a9fe:a9fe', 'eth0'),
    'http://[fe80::a9fe:a9fe%25eth0]/latest/api/token',
  );
});

t.test(
  'the HTTP client reaches a zoned URL; the Host header carries no zone; redirects are not followed',
  async (t) => {
    const server = await startTestServer((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' });
        return void res.end();
      }
      res.writeHead(200);
      res.end(`hello ${req.url}`);
    }, '::1');
    t.teardown(() => server.close());
    const http = createHttpClient({ defaultMaxBytes: 4096, defaultRetries: 0 });
    for (const zoned of [`http://[::1%25lo]:${server.port}/a`, `http://[::1%lo]:${server.port}/a`]) {
      const res = await http.request({ url: zoned, timeoutSeconds: 5 });
      t.equal(res.statusCode, 200, zoned);
      t.equal(res.body.toString(), 'hello /a');
      t.equal(res.redactedUrl, zoned, 'the URL reported is the one asked for, zone included');
    }
    t.equal(server.requests[0]?.headers.host, `[::1]:${server.port}`);
    const redirected = await http.request({ url: `http://[::1%25lo]:${server.port}/redirect`, timeoutSeconds: 5 });
    t.equal(redirected.statusCode, 302, 'the redirect is returned, not followed through the zoned socket');
    t.equal(server.requests.length, 3);
  },
);

t.test('a zone naming no interface fails as a transport error, not a crash', async (t) => {
  const server = await startTestServer((_req, res) => void res.end('x'), '::1');
  t.teardown(() => server.close());
  const http = createHttpClient({ defaultMaxBytes: 4096, defaultRetries: 0 });
  const err = await http
    .request({ url: `http://[fe80::a9fe:a9fe%25nosuchif0]:${server.port}/`, timeoutSeconds: 2 })
    .then(
      () => undefined,
      (e: unknown) => e as Error,
    );
  t.match(err, { name: 'HttpError', message: /request to http:\/\/\[fe80::a9fe:a9fe%25nosuchif0\].* failed/ });
  t.equal(server.requests.length, 0);
});
