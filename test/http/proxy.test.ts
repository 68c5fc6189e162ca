import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import { HttpError } from '../../src/http/http-error.js';
import { destroyProxyAgents } from '../../src/http/proxy-agent.js';
import { captureLog } from '../helpers/log-capture.js';
import { refusedUrl, startTestServer, type TapTest, type TestServer } from '../helpers/http-test-server.js';
import { startTinyproxy, tinyproxyMissing, type Tinyproxy } from '../helpers/tinyproxy.js';
import { failure } from '../helpers/assertions.js';

// Proxies in the one HTTP client against Debian's tinyproxy on loopback: its log proves which requests went through
// it, the target servers' request logs prove which went direct. HTTPS goes through CONNECT to a loopback TLS server
// whose certificate a CA made here signs. Faults: a refused, a hanging and an authenticating proxy, malformed
// settings. The decision rules themselves are unit-tested in proxy-env.test.ts and no-proxy.test.ts.

const skip = tinyproxyMissing() || (hasOpenssl() ? false : 'openssl is not installed');

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

type Config = { http_proxy?: string; https_proxy?: string; no_proxy?: string };

function client(config: Config, env: Record<string, string> = {}, log = captureLog()) {
  return {
    http: createHttpClient({
      defaultMaxBytes: 65536,
      defaultRetries: 0,
      retryBaseMs: 5,
      proxy: { config, env },
      log: log.log,
    }),
    log,
  };
}

/** The HttpError a request rejects with. */
const rejection = (p: Promise<unknown>) => failure<HttpError>(p);

async function echoServer(t: TapTest): Promise<TestServer> {
  const server = await startTestServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`origin saw ${req.url} proxy-auth=${req.headers['proxy-authorization'] ?? 'none'}`);
  });
  t.teardown(() => server.close());
  return server;
}

/** A fresh directory under the test's own (t.testdir() empties its directory on every call). */
function scratch(t: TapTest): string {
  return mkdtempSync(path.join(t.testdirName, 'x-'));
}

async function proxy(t: TapTest, options: Parameters<typeof startTinyproxy>[1] = {}): Promise<Tinyproxy> {
  const p = await startTinyproxy(scratch(t), options);
  t.teardown(() => p.stop());
  return p;
}

/** A test CA and a server certificate it signs for `names` (DNS:localhost,IP:127.0.0.1 and the like). */
function makeCerts(dir: string, names: string): { ca: string; key: string; cert: string } {
  const file = (n: string) => path.join(dir, n);
  const run = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=os-config-agent test CA',
  );
  run('req', ...ec, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=test server');
  writeFileSync(file('ext.cnf'), `subjectAltName=${names}\n`);
  run(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('server.pem'),
    '-days',
    '1',
    '-extfile',
    file('ext.cnf'),
  );
  return { ca: file('ca.pem'), key: file('server.key'), cert: file('server.pem') };
}

async function tlsServer(t: TapTest, names: string): Promise<{ port: number; ca: string; requests: string[] }> {
  const certs = makeCerts(scratch(t), names);
  const requests: string[] = [];
  const server: HttpsServer = createHttpsServer(
    { key: readFileSync(certs.key), cert: readFileSync(certs.cert) },
    (req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.end(`secure ${req.url}`);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, ca: certs.ca, requests };
}

t.teardown(() => destroyProxyAgents());
t.beforeEach((t) => {
  mkdirSync(t.testdirName, { recursive: true });
  t.teardown(() => rmSync(t.testdirName, { recursive: true, force: true }));
});

t.test('http: every request is forwarded through the proxy (absolute URL, no CONNECT)', { skip }, async (t) => {
  const origin = await echoServer(t);
  const p = await proxy(t);
  const { http, log } = client({}, { http_proxy: p.url });
  for (let i = 0; i < 5; i++) {
    const res = await http.request({ url: `${origin.url}/doc/${i}` });
    t.equal(res.statusCode, 200);
    t.equal(res.body.toString(), `origin saw /doc/${i} proxy-auth=none`);
  }
  t.same(
    p.requests(),
    [0, 1, 2, 3, 4].map((i) => `GET ${origin.url}/doc/${i} HTTP/1.1`),
    'tinyproxy handled each request, in order',
  );
  t.equal(origin.requests.length, 5);
  // tinyproxy closes after every answer without saying so: the second request found its kept-alive connection
  // closed, was sent again on a new one, and the pool for this proxy stopped keeping connections.
  t.same(
    log.lines
      .filter((l) => l.msg === 'proxy closes connections after each answer: not keeping them open')
      .map((l) => l.proxy),
    [p.url],
  );
});

t.test('no_proxy: a matching host goes direct; the others still go through the proxy', { skip }, async (t) => {
  const origin = await echoServer(t);
  const other = await echoServer(t);
  const p = await proxy(t);
  // Only the origin's port is exempt, by host:port; a malformed entry beside it is skipped with a warning.
  const { http, log } = client({}, { http_proxy: p.url, no_proxy: `bad/entry, 127.0.0.1:${origin.port}` });
  t.equal((await http.request({ url: `${origin.url}/direct` })).statusCode, 200);
  t.equal((await http.request({ url: `${other.url}/proxied` })).statusCode, 200);
  t.same(p.requests(), [`GET ${other.url}/proxied HTTP/1.1`], 'only the request to the other port reached tinyproxy');
  t.same(
    origin.requests.map((r) => r.url),
    ['/direct'],
    'the exempt request reached its server directly (origin-form path)',
  );
  t.same(
    other.requests.map((r) => r.url),
    ['/proxied'],
  );
  const warning = log.lines.find((l) => l.msg === 'ignoring malformed no_proxy entries');
  t.same(warning?.entries, ['bad/entry']);
  t.equal(warning?.source, 'the no_proxy environment variable');

  // A host name and its subdomains, written with a leading dot.
  const byName = client({}, { http_proxy: p.url, no_proxy: '.localhost' }).http;
  t.equal((await byName.request({ url: `http://localhost:${origin.port}/by-name` })).statusCode, 200);
  t.same(
    origin.requests.map((r) => r.url),
    ['/direct', '/by-name'],
  );
  t.equal(p.requests().length, 1, 'still only the one proxied request');
});

t.test('the [agent] options replace the environment, and an empty one turns the proxy off', { skip }, async (t) => {
  const origin = await echoServer(t);
  const p = await proxy(t);
  const dead = await refusedUrl();
  const viaConfig = client({ http_proxy: p.url }, { http_proxy: dead, HTTP_PROXY: dead }).http;
  t.equal((await viaConfig.request({ url: `${origin.url}/a` })).statusCode, 200);
  t.same(p.requests(), [`GET ${origin.url}/a HTTP/1.1`]);
  const off = client({ http_proxy: '' }, { http_proxy: p.url }).http;
  t.equal((await off.request({ url: `${origin.url}/b` })).statusCode, 200);
  t.equal(p.requests().length, 1, 'an empty option: direct');
  const noProxyOption = client({ no_proxy: '127.0.0.1' }, { http_proxy: p.url, no_proxy: '' }).http;
  t.equal((await noProxyOption.request({ url: `${origin.url}/c` })).statusCode, 200);
  t.equal(p.requests().length, 1, 'the no_proxy option applies over the variable');
  const upperOnly = client({}, { HTTP_PROXY: p.url }).http;
  t.equal((await upperOnly.request({ url: `${origin.url}/d` })).statusCode, 200);
  t.equal(p.requests().length, 2, 'HTTP_PROXY is read when http_proxy is not set');
  const lowerEmpty = client({}, { http_proxy: '', HTTP_PROXY: p.url }).http;
  t.equal((await lowerEmpty.request({ url: `${origin.url}/e` })).statusCode, 200);
  t.equal(p.requests().length, 2, 'an empty http_proxy hides HTTP_PROXY');
  t.same(
    origin.requests.map((r) => r.url),
    ['/a', '/b', '/c', '/d', '/e'],
  );
});

t.test(
  'https: CONNECT tunnel, TLS checked end to end against the origin name and the configured CA',
  { skip },
  async (t) => {
    const tls = await tlsServer(t, 'DNS:localhost,IP:127.0.0.1');
    const p = await proxy(t);
    const { http } = client({}, { https_proxy: p.url, http_proxy: 'http://127.0.0.1:9' });
    const url = `https://localhost:${tls.port}/secret-path`;
    const res = await http.request({ url, caFile: tls.ca });
    t.equal(res.body.toString(), 'secure /secret-path');
    const byIp = await http.request({ url: `https://127.0.0.1:${tls.port}/by-ip`, caFile: tls.ca });
    t.equal(byIp.body.toString(), 'secure /by-ip', 'an IP origin is checked against its IP SAN');
    t.same(
      p.requests(),
      [`CONNECT localhost:${tls.port} HTTP/1.1`, `CONNECT 127.0.0.1:${tls.port} HTTP/1.1`],
      'only CONNECT lines: the proxy never saw the path',
    );
    t.same(tls.requests, ['GET /secret-path', 'GET /by-ip']);

    const untrusted = await rejection(http.request({ url }));
    t.match(
      untrusted,
      { code: 'ERR_HTTP', message: /through proxy http:\/\/127\.0\.0\.1:\d+: TLS verification failed/ },
      'without the CA the origin is refused',
    );
  },
);

t.test('https: a certificate for another name is refused through the tunnel', { skip }, async (t) => {
  const tls = await tlsServer(t, 'DNS:metadata.other.test');
  const p = await proxy(t);
  const { http } = client({ https_proxy: p.url });
  const err = await rejection(http.request({ url: `https://localhost:${tls.port}/`, caFile: tls.ca }));
  t.match(err, { code: 'ERR_HTTP', message: /TLS verification failed \(ERR_TLS_CERT_ALTNAME_INVALID\)/ });
  t.equal(tls.requests.length, 0, 'nothing was sent to the wrong server');
  t.equal(p.requests().length, 1, 'the tunnel was made');
});

t.test(
  'proxy credentials: sent as Proxy-Authorization, a 407 names what to fix, the password is never shown',
  { skip },
  async (t) => {
    const origin = await echoServer(t);
    const tls = await tlsServer(t, 'DNS:localhost');
    const password = 'pr0xy-Pa55word';
    const p = await proxy(t, { basicAuth: { user: 'agent', password } });
    const { http, log } = client({ http_proxy: p.url, https_proxy: p.url });
    const ok = await http.request({ url: `${origin.url}/with-auth` });
    t.equal(
      ok.body.toString(),
      'origin saw /with-auth proxy-auth=none',
      'tinyproxy accepted the credentials and did not pass them on',
    );
    t.equal(
      (await http.request({ url: `https://localhost:${tls.port}/tunnel`, caFile: tls.ca })).body.toString(),
      'secure /tunnel',
    );

    const anonymousUrl = p.url.replace(/\/\/[^@]*@/, '//');
    const anonymous = client({ http_proxy: anonymousUrl, https_proxy: anonymousUrl }).http;
    for (const url of [`${origin.url}/no-auth`, `https://localhost:${tls.port}/no-auth`]) {
      const err = await rejection(anonymous.request({ url, caFile: tls.ca }));
      t.match(
        err,
        {
          code: 'ERR_HTTP',
          message:
            /proxy http:\/\/127\.0\.0\.1:\d+ requires a user and password \(407 Proxy Authentication Required\); put them in the \[agent\] https?_proxy option/,
        },
        url,
      );
    }
    // tinyproxy answers wrong credentials with 401 rather than 407: the caller gets that status as it is.
    const wrong = client({ http_proxy: p.url.replace(password, 'wrong-pa55') }, {}, log).http;
    t.equal((await wrong.request({ url: `${origin.url}/wrong` })).statusCode, 401);
    t.equal(origin.requests.length, 1, 'only the authenticated request reached the origin');
    log.log.info(
      {
        proxy: p.url,
        headers: { 'proxy-authorization': `Basic ${Buffer.from(`agent:${password}`).toString('base64')}` },
      },
      'audit line',
    );
    const text = log.text();
    t.notOk(text.includes(password), 'the password is in no log line');
    t.notOk(text.includes(Buffer.from(`agent:${password}`).toString('base64')), 'nor its Basic form');
    t.notOk(p.log().includes(password), 'tinyproxy did not log it either');
  },
);

t.test(
  'a proxy answering 407 to credentials it refuses: the error says to fix them, for forward and CONNECT',
  { skip },
  async (t) => {
    // A minimal proxy that refuses every credential with 407, as squid does (tinyproxy says 401).
    const refusing = await startTestServer((_req, res) => {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"' });
      res.end();
    });
    t.teardown(() => refusing.close());
    const refusingTunnels = new Set<Socket>();
    const rawServer = createTcpServer((s) => {
      refusingTunnels.add(s);
      s.once('data', () =>
        s.end(
          'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n',
        ),
      );
    });
    await new Promise<void>((resolve) => rawServer.listen(0, '127.0.0.1', resolve));
    t.teardown(() => {
      for (const s of refusingTunnels) s.destroy();
      return new Promise<void>((resolve) => rawServer.close(() => resolve()));
    });
    const creds = 'agent:not-this-one';
    const { http, log } = client(
      {},
      {
        http_proxy: `http://${creds}@127.0.0.1:${refusing.port}`,
        https_proxy: `${creds}@127.0.0.1:${(rawServer.address() as AddressInfo).port}`,
      },
    );
    const forward = await rejection(http.request({ url: 'http://127.0.0.1:9/x' }));
    t.match(forward, {
      code: 'ERR_HTTP',
      statusCode: 407,
      message:
        /proxy http:\/\/127\.0\.0\.1:\d+ refused the user and password given in the http_proxy environment variable \(407 Proxy Authentication Required\); fix them/,
    });
    t.match(
      refusing.requests[0],
      {
        url: 'http://127.0.0.1:9/x',
        headers: { 'proxy-authorization': `Basic ${Buffer.from(creds).toString('base64')}` },
      },
      'the credentials were sent as Proxy-Authorization',
    );
    const tunnel = await rejection(http.request({ url: 'https://localhost:9/x' }));
    t.match(
      tunnel.message,
      /refused the user and password given in the https_proxy environment variable \(407/,
      'a scheme-less proxy value means http://',
    );
    log.log.warn({ err: tunnel }, 'source unavailable');
    t.notOk(log.text().includes('not-this-one'));
  },
);

t.test(
  'a proxy that refuses connections: a clear error naming the proxy (without its credentials)',
  { skip },
  async (t) => {
    const dead = (await refusedUrl()).replace('http://', 'http://someone:hunter2-secret@');
    const { http, log } = client({}, { http_proxy: dead, https_proxy: dead });
    for (const url of ['http://127.0.0.1:9/x', 'https://localhost:9/x']) {
      const err = await rejection(http.request({ url }));
      t.match(
        err,
        {
          code: 'ERR_HTTP',
          message:
            /^request to \S+ failed: proxy http:\/\/127\.0\.0\.1:\d+ refused the connection; check that it runs, or fix or unset the https?_proxy environment variable$/,
        },
        url,
      );
      t.notMatch(err.message, /hunter2|someone/);
      log.log.warn({ err }, 'source unavailable');
    }
    t.notOk(log.text().includes('hunter2-secret'), 'no log line holds the password');
  },
);

t.test(
  'a proxy that accepts and never answers: bounded by the request timeout (plain and CONNECT)',
  { skip },
  async (t) => {
    const held = new Set<Socket>();
    const silent = createTcpServer((s) => held.add(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.teardown(() => {
      for (const s of held) s.destroy();
      return new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const hanging = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const { http } = client({ http_proxy: hanging, https_proxy: hanging });
    for (const url of ['http://127.0.0.1:9/x', 'https://localhost:9/x']) {
      const err = await rejection(http.request({ url, timeoutSeconds: 0.3 }));
      t.match(
        err,
        {
          code: 'ERR_HTTP',
          message:
            /through proxy http:\/\/127\.0\.0\.1:\d+: no answer within 0\.3 s .*check the proxy, or fix or unset the \[agent\] https?_proxy option/,
        },
        url,
      );
    }
  },
);

t.test(
  'a malformed proxy setting: every request it would carry fails with a clear error, others go direct',
  { skip },
  async (t) => {
    const origin = await echoServer(t);
    const captured = captureLog();
    const { http } = client(
      { https_proxy: 'http://user:pa55w0rd@[not-a-host' },
      { http_proxy: 'socks5://127.0.0.1:1080' },
      captured,
    );
    const err = await rejection(http.request({ url: 'https://localhost:9/x' }));
    t.match(err, {
      code: 'ERR_HTTP',
      message:
        /not sent: the \[agent\] https_proxy option is not a valid proxy URL \(expected http:\/\/\[user:password@\]host\[:port\]\); fix or unset it/,
    });
    t.notMatch(err.message, /pa55w0rd/);
    const socks = await rejection(http.request({ url: `${origin.url}/x` }));
    t.match(socks.message, /the http_proxy environment variable names a socks5 proxy, which is not supported/);
    t.equal(origin.requests.length, 0, 'nothing was sent around the unusable proxy');
    t.equal(
      captured.lines.filter((l) => l.msg === 'proxy setting unusable').length,
      2,
      'each unusable setting is reported once when the client is made',
    );
    t.notOk(captured.text().includes('pa55w0rd'));
    const direct = client({ http_proxy: 'http://user:pa55w0rd@[not-a-host', no_proxy: '127.0.0.1' }).http;
    t.equal(
      (await direct.request({ url: `${origin.url}/exempt` })).statusCode,
      200,
      'a no_proxy host does not need the proxy at all',
    );
  },
);

t.test('a redirect to a no_proxy host leaves the proxy for the next hop', { skip }, async (t) => {
  const target = await echoServer(t);
  const start = await startTestServer((_req, res) => {
    res.writeHead(302, { location: `http://localhost:${target.port}/landed` });
    res.end();
  });
  t.teardown(() => start.close());
  const p = await proxy(t);
  const { http } = client({ http_proxy: p.url, no_proxy: 'localhost' });
  const res = await http.request({ url: `${start.url}/go` });
  t.equal(res.body.toString(), 'origin saw /landed proxy-auth=none');
  t.same(p.requests(), [`GET ${start.url}/go HTTP/1.1`], 'the first hop through the proxy, the redirect direct');
  t.equal(target.requests.length, 1);
});
