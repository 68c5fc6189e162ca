import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import { findEndpoint, KeystoneError, KeystoneSession, rememberedSession, v3Url, type CatalogEntry } from '../../src/keystone/keystone-client.js';
import { scrubText } from '../../src/log/redact.js';
import { startTestServer } from '../helpers/http-test-server.js';
import { startKeystoneServer } from '../helpers/keystone-server.js';

const http = () => createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0, retryBaseMs: 5 });

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

t.test('v3Url: /v3 kept, /v2.0 replaced, anything else gets /v3', async (t) => {
  t.equal(v3Url('http://k:5000/v3/'), 'http://k:5000/v3');
  t.equal(v3Url('http://k:5000/v3'), 'http://k:5000/v3');
  t.equal(v3Url('http://k:5000/v2.0'), 'http://k:5000/v3');
  t.equal(v3Url('http://k:5000/v2.0/'), 'http://k:5000/v3');
  t.equal(v3Url('http://k:5000'), 'http://k:5000/v3');
  t.equal(v3Url('http://k/identity/'), 'http://k/identity/v3');
});

t.test('password login: token and catalog; cached until a minute before expiry; invalidate forces a login', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  ks.catalog = [{ type: 'orchestration', endpoints: [{ interface: 'public', region: 'RegionOne', url: 'http://heat/v1/p/' }] }];
  let now = Date.now();
  const session = new KeystoneSession(http(), { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId }, { timeoutSeconds: 2, now: () => now });
  const first = await session.token();
  t.ok(ks.validate(first.token));
  t.equal(findEndpoint(first.catalog, 'orchestration'), 'http://heat/v1/p');
  t.equal(await session.token(), first, 'cached');
  t.equal(ks.tokensIssued(), 1);
  now += 3600_000 - 30_000; // inside the one-minute margin
  const second = await session.token();
  t.not(second.token, first.token, 'renewed before expiry');
  t.equal(ks.tokensIssued(), 2);
  session.invalidate();
  await session.token();
  t.equal(ks.tokensIssued(), 3);
  t.equal(scrubText(`x ${second.token} ${ks.password}`), 'x [REDACTED] [REDACTED]', 'token and password are registered secrets');
  const body = JSON.parse(ks.requests[0]!.body) as { auth: { identity: { methods: string[] }; scope: unknown } };
  t.same(body.auth.identity.methods, ['password']);
  t.same(body.auth.scope, { project: { id: ks.projectId } });
});

t.test('concurrent callers share one login', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const session = new KeystoneSession(http(), { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId });
  const [a, b, c] = await Promise.all([session.token(), session.token(), session.token()]);
  t.equal(a.token, b.token);
  t.equal(b.token, c.token);
  t.equal(ks.tokensIssued(), 1);
});

t.test('refused credentials, server errors and transport failures are KeystoneErrors with clear messages', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const bad = new KeystoneSession(http(), { authUrl: ks.authUrl, userId: ks.userId, password: 'wrong-password', projectId: ks.projectId });
  const err = await rejection(bad.token());
  t.type(err, KeystoneError);
  t.match(err.message, /refused the credentials \(401\); check user_id, password and project_id/);
  t.notOk(err.message.includes('wrong-password'));

  ks.fault = '500';
  const good = new KeystoneSession(http(), { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId });
  t.match(await rejection(good.token()), { message: /answered 500; check auth_url/ });
  ks.fault = 'non-json';
  t.match(await rejection(good.token()), { message: /returned no X-Subject-Token/ });
  ks.fault = 'hang';
  const slow = new KeystoneSession(http(), { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId }, { timeoutSeconds: 0.2 });
  t.match(await rejection(slow.token()), { message: /Keystone authentication failed: .*no answer within 0.2 s/ });
});

t.test('a token answer without a JSON token body is refused; bad catalog entries are dropped', async (t) => {
  let body = 'not json';
  const server = await startTestServer((_req, res) => {
    res.writeHead(201, { 'x-subject-token': 'tok-abcdef-123456', 'content-type': 'application/json' });
    res.end(body);
  });
  t.teardown(() => server.close());
  const session = () => new KeystoneSession(http(), { authUrl: `${server.url}/v3`, userId: 'u', password: 'p-12345', projectId: 'p' });
  t.match(await rejection(session().token()), { message: /not JSON/ });
  body = '{"nottoken":1}';
  t.match(await rejection(session().token()), { message: /no "token" object/ });
  body = JSON.stringify({
    token: {
      expires_at: 'garbage',
      catalog: [null, { type: 'x' }, { type: 'orchestration', endpoints: [null, { url: 1 }, { interface: 'public', url: 'http://h/', region_id: 'R2' }] }],
    },
  });
  const tok = await session().token();
  t.same(tok.catalog, [{ type: 'orchestration', endpoints: [{ interface: 'public', url: 'http://h/', region_id: 'R2' }] }]);
  t.ok(tok.expiresAt > Date.now() + 3000_000, 'an unreadable expires_at means an hour');
  t.equal(server.requests[0]?.url, '/v3/auth/tokens');
});

t.test('findEndpoint: public interface, region when given, "null"/"None" mean no region', async (t) => {
  const catalog: CatalogEntry[] = [
    { type: 'orchestration', endpoints: [{ interface: 'internal', url: 'http://internal' }, { interface: 'public', region: 'R1', url: 'http://r1/' }, { interface: 'public', region_id: 'R2', url: 'http://r2' }] },
    { type: 'messaging', endpoints: [{ interface: 'public', url: 'http://zaqar' }] },
  ];
  t.equal(findEndpoint(catalog, 'orchestration'), 'http://r1');
  t.equal(findEndpoint(catalog, 'orchestration', 'R2'), 'http://r2');
  t.equal(findEndpoint(catalog, 'orchestration', 'null'), 'http://r1');
  t.equal(findEndpoint(catalog, 'orchestration', 'None'), 'http://r1');
  t.equal(findEndpoint(catalog, 'messaging'), 'http://zaqar');
  t.throws(() => findEndpoint(catalog, 'orchestration', 'R3'), /no public "orchestration" endpoint in region R3/);
  t.throws(() => findEndpoint(catalog, 'object-store'), KeystoneError);
});

t.test('rememberedSession: reused for the same credentials and client, replaced when either changes', async (t) => {
  const memory = new Map<string, unknown>();
  const client = http();
  const creds = { authUrl: 'http://k/v3', userId: 'u', password: 'p-secret', projectId: 'p' };
  const a = rememberedSession(memory, client, creds, { timeoutSeconds: 1 });
  t.equal(rememberedSession(memory, client, { ...creds }, { timeoutSeconds: 1 }), a);
  const b = rememberedSession(memory, client, { ...creds, password: 'other-secret' }, { timeoutSeconds: 1 });
  t.not(b, a);
  t.not(rememberedSession(memory, http(), { ...creds, password: 'other-secret' }, { timeoutSeconds: 1 }), b, 'a reloaded HTTP client');
});
