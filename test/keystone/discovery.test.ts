import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import { identityV3Url, versionedV3Url } from '../../src/keystone/discovery.js';
import { KeystoneError } from '../../src/keystone/keystone-error.js';
import { startTestServer, type TapTest } from '../helpers/http-test-server.js';
import { startKeystoneServer } from '../helpers/keystone-server.js';
import { captureLog } from '../helpers/log-capture.js';
import { failure } from '../helpers/assertions.js';

// Version discovery against loopback servers answering as Keystone does (300 + versions.values at the root, 200 +
// version below it). Each test has its own server, so its own port and its own entry in the per-process cache.

const http = () => createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0, retryBaseMs: 5 });

async function versionServer(
  t: TapTest,
  answer: (path: string) => { status: number; body: string; headers?: Record<string, string> },
) {
  const server = await startTestServer((req, res) => {
    const { status, body, headers } = answer(new URL(req.url ?? '/', 'http://x').pathname);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body);
  });
  t.teardown(() => server.close());
  return server;
}

t.test(
  "versionedV3Url: /v3 kept, /v2.0 becomes /v3 (the client's behaviour before discovery), anything else is unversioned",
  async (t) => {
    t.equal(versionedV3Url('http://k:5000/v3/'), 'http://k:5000/v3');
    t.equal(versionedV3Url('http://k:5000/v3'), 'http://k:5000/v3');
    t.equal(versionedV3Url('http://k:5000/v2.0'), 'http://k:5000/v3');
    t.equal(versionedV3Url('http://k:5000/v2.0/'), 'http://k:5000/v3');
    t.equal(versionedV3Url('http://k:5000'), undefined);
    t.equal(versionedV3Url('http://k:5000/'), undefined);
    t.equal(versionedV3Url('http://k/identity/'), undefined);
    t.equal(versionedV3Url('http://k/v3x'), undefined);
  },
);

t.test('a versioned auth_url makes no request', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  t.equal(await identityV3Url(http(), ks.authUrl, { timeoutSeconds: 1 }), `${ks.url}/identity/v3`);
  t.equal(await identityV3Url(http(), `${ks.url}/identity/v2.0`, { timeoutSeconds: 1 }), `${ks.url}/identity/v3`);
  t.equal(ks.requests.length, 0);
});

t.test(
  "unversioned auth_url: GET with Accept JSON, 300 (with Keystone's Location, followed to the v3 document), v3 taken from its self link; once per auth_url",
  async (t) => {
    const ks = await startKeystoneServer();
    t.teardown(() => ks.close());
    const client = http();
    const [a, b] = await Promise.all([
      identityV3Url(client, ks.rootUrl, { timeoutSeconds: 1 }),
      identityV3Url(client, `${ks.rootUrl}/`, { timeoutSeconds: 1 }),
    ]);
    t.equal(a, `${ks.url}/identity/v3`, 'the self href, without its trailing slash');
    t.equal(b, a, 'a trailing slash is the same auth_url');
    t.equal(
      await identityV3Url(http(), `${ks.rootUrl}/`, { timeoutSeconds: 1 }),
      a,
      'remembered for the process, across clients',
    );
    t.same(
      ks.requests.map((r) => `${r.method} ${r.url} ${r.headers.accept}`),
      ['GET /identity application/json', 'GET /identity/v3/ application/json'],
      "one discovery (the root, and the redirect Keystone's 300 carries) for concurrent and later callers",
    );
  },
);

t.test('200 with a single version document; a 300 carrying Location is followed to it', async (t) => {
  const single = {
    version: { id: 'v3.10', status: 'CURRENT', links: [{ rel: 'self', href: 'https://keystone.example/v3/' }] },
  };
  const server = await versionServer(t, (path) =>
    path === '/one'
      ? { status: 200, body: JSON.stringify(single) }
      : path === '/moved'
        ? { status: 300, body: '{}', headers: { location: '/one' } }
        : { status: 404, body: '{}' },
  );
  t.equal(await identityV3Url(http(), `${server.url}/one`, { timeoutSeconds: 1 }), 'https://keystone.example/v3');
  t.equal(await identityV3Url(http(), `${server.url}/moved`, { timeoutSeconds: 1 }), 'https://keystone.example/v3');
});

t.test(
  'the highest usable 3.x wins; experimental, unknown and other majors are skipped; a relative self link is resolved',
  async (t) => {
    const doc = {
      versions: [
        { id: 'v3.4', status: 'stable', links: [{ rel: 'self', href: '/old-v3/' }] },
        { id: 'v3.99', status: 'experimental', links: [{ rel: 'self', href: '/experimental/' }] },
        { id: 'v3.50', status: 'mystery', links: [{ rel: 'self', href: '/unknown/' }] },
        { id: 'v4.0', status: 'stable', links: [{ rel: 'self', href: '/v4/' }] },
        {
          id: 'v3.8',
          status: 'deprecated',
          links: [
            { rel: 'describedby', href: '/docs' },
            { rel: 'SELF', href: 'rel-v3/' },
          ],
        },
        { id: 'v3.9', status: 'stable', links: [{ rel: 'self', href: 'javascript:alert(1)' }] },
        { id: 'v3.12', status: 'stable' },
        'garbage',
      ],
    };
    const server = await versionServer(t, () => ({ status: 300, body: JSON.stringify(doc) }));
    t.equal(
      await identityV3Url(http(), `${server.url}/base/`, { timeoutSeconds: 1 }),
      `${server.url}/base/rel-v3`,
      'v3.8 (deprecated still counts, as in keystoneauth)',
    );
  },
);

t.test('a document without v3 is an error naming the URL and what to set, and is not remembered', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  ks.versionsDocument = {
    versions: {
      values: [{ id: 'v2.0', status: 'stable', links: [{ rel: 'self', href: `${ks.url}/identity/v2.0/` }] }],
    },
  };
  const err = await failure(identityV3Url(http(), ks.rootUrl, { timeoutSeconds: 1 }));
  t.type(err, KeystoneError);
  t.equal((err as KeystoneError).code, 'ERR_HTTP');
  t.equal(
    err.message,
    `the Keystone version document at ${ks.rootUrl} offers no usable Identity v3 (versions: v2.0 (stable)); set auth_url to Keystone's v3 endpoint, for example ${ks.rootUrl}/v3`,
  );
  ks.versionsDocument = undefined;
  t.equal(
    await identityV3Url(http(), ks.rootUrl, { timeoutSeconds: 1 }),
    `${ks.url}/identity/v3`,
    'asked again once the server offers v3',
  );
  t.equal(ks.discoveries(), 3, 'one GET for the failed discovery, two (root and redirect) for the next');
});

t.test(
  'no version document at all (404, HTML, JSON of another shape): /v3 appended as before discovery existed, with one warning',
  async (t) => {
    for (const [status, body] of [
      [404, '{"error":"not found"}'],
      [200, '<html>welcome</html>'],
      [300, '{"links":[]}'],
      [403, 'forbidden'],
    ] as const) {
      const server = await versionServer(t, () => ({ status, body }));
      const captured = captureLog();
      t.equal(
        await identityV3Url(http(), `${server.url}/identity`, { timeoutSeconds: 1, log: captured.log }),
        `${server.url}/identity/v3`,
        `${status} ${body}`,
      );
      t.equal(
        await identityV3Url(http(), `${server.url}/identity`, { timeoutSeconds: 1, log: captured.log }),
        `${server.url}/identity/v3`,
      );
      t.equal(server.requests.length, 1, 'remembered');
      t.same(
        captured.lines.map((l) => [l.level, l.msg, l.httpStatus]),
        [['warn', 'no Keystone version document at auth_url; appending /v3', status]],
      );
    }
  },
);

t.test('server errors, hangs and refused connections are errors that are tried again next time', async (t) => {
  let mode: 'fail' | 'hang' | 'ok' = 'fail';
  const server = await startTestServer((_req, res) => {
    if (mode === 'hang') return;
    if (mode === 'fail') {
      res.writeHead(503);
      return void res.end('busy');
    }
    res.writeHead(300, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        versions: {
          values: [{ id: 'v3.14', status: 'stable', links: [{ rel: 'self', href: 'http://127.0.0.1:9/v3/' }] }],
        },
      }),
    );
  });
  t.teardown(() => server.close());
  const url = `${server.url}/`;
  t.match(await failure(identityV3Url(http(), url, { timeoutSeconds: 1 })), {
    message: /^Keystone version discovery at .* answered 503; check auth_url, or set it to the v3 endpoint/,
    statusCode: 503,
  });
  mode = 'hang';
  const hung = await failure(identityV3Url(http(), url, { timeoutSeconds: 0.2 }));
  t.match(hung, { message: /^Keystone version discovery at .* failed: .*no answer within 0.2 s.*; check auth_url$/ });
  t.equal((hung as KeystoneError).statusCode, undefined, 'no answer, no status');
  mode = 'ok';
  t.equal(await identityV3Url(http(), url, { timeoutSeconds: 1 }), 'http://127.0.0.1:9/v3');
  const gone = await startTestServer(() => undefined);
  const goneUrl = gone.url;
  await gone.close();
  t.match(await failure(identityV3Url(http(), goneUrl, { timeoutSeconds: 1 })), { message: /connection refused/ });
});

t.test('an oversized document is refused, not parsed', async (t) => {
  const server = await versionServer(t, () => ({
    status: 300,
    body: JSON.stringify({ versions: { values: [], pad: 'x'.repeat(300 * 1024) } }),
  }));
  t.match(await failure(identityV3Url(http(), server.url, { timeoutSeconds: 1 })), {
    message: /over the 262144-byte limit/,
  });
});
