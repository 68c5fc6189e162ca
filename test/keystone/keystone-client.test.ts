import { readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import {
  findEndpoint,
  KeystoneError,
  KeystoneSession,
  rememberedSession,
  type KeystoneMemory,
} from '../../src/keystone/keystone-client.js';
import type { CatalogEntry } from '../../src/keystone/catalog.js';
import type { Logger } from '../../src/log/logger.js';
import { scrubText } from '../../src/log/redact.js';
import { startTestServer } from '../helpers/http-test-server.js';
import { startKeystoneServer, type KeystoneServer } from '../helpers/keystone-server.js';
import { captureLog } from '../helpers/log-capture.js';
import { failure } from '../helpers/assertions.js';

const http = () => createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0, retryBaseMs: 5 });

t.test(
  'password login: token and catalog; cached until a minute before expiry; invalidate forces a login',
  async (t) => {
    const ks = await startKeystoneServer();
    t.teardown(() => ks.close());
    ks.catalog = [
      { type: 'orchestration', endpoints: [{ interface: 'public', region: 'RegionOne', url: 'http://heat/v1/p/' }] },
    ];
    let now = Date.now();
    const session = new KeystoneSession(
      http(),
      { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId },
      { timeoutSeconds: 2, now: () => now },
    );
    const first = await session.token();
    t.ok(ks.validate(first.token));
    t.equal(findEndpoint(first.catalog, 'orchestration'), 'http://heat/v1/p');
    t.equal(await session.token(), first, 'cached');
    t.equal(ks.tokensIssued(), 1);
    now += 3600_000 - 30_000; // inside the one-minute margin
    const second = await session.token();
    t.not(second.token, first.token, 'renewed before expiry');
    t.equal(ks.tokensIssued(), 2);
    t.equal(
      scrubText(`x ${second.token} ${first.token} ${ks.password}`),
      'x [REDACTED] [REDACTED] [REDACTED]',
      'the tokens (the renewed one until it expires) and the password are registered secrets',
    );
    session.invalidate();
    const third = await session.token();
    t.equal(ks.tokensIssued(), 3);
    t.equal(
      scrubText(`x ${third.token} ${ks.password}`),
      'x [REDACTED] [REDACTED]',
      'token and password are registered secrets',
    );
    t.equal(
      scrubText(`x ${second.token}`),
      `x ${second.token}`,
      'a token the service refused (invalidated) is released',
    );
    const body = JSON.parse(ks.requests[0]!.body) as { auth: { identity: { methods: string[] }; scope: unknown } };
    t.same(body.auth.identity.methods, ['password']);
    t.same(body.auth.scope, { project: { id: ks.projectId } });
  },
);

t.test('concurrent callers share one login', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const session = new KeystoneSession(http(), {
    authUrl: ks.authUrl,
    userId: ks.userId,
    password: ks.password,
    projectId: ks.projectId,
  });
  const [a, b, c] = await Promise.all([session.token(), session.token(), session.token()]);
  t.equal(a.token, b.token);
  t.equal(b.token, c.token);
  t.equal(ks.tokensIssued(), 1);
});

t.test(
  'refused credentials, server errors and transport failures are KeystoneErrors with clear messages',
  async (t) => {
    const ks = await startKeystoneServer();
    t.teardown(() => ks.close());
    const bad = new KeystoneSession(http(), {
      authUrl: ks.authUrl,
      userId: ks.userId,
      password: 'wrong-password',
      projectId: ks.projectId,
    });
    const err = await failure(bad.token());
    t.type(err, KeystoneError);
    t.match(err.message, /refused the credentials \(401\); check user_id, password and project_id/);
    t.equal((err as KeystoneError).statusCode, 401, 'the status is a field, not something to parse out of the message');
    t.notOk(err.message.includes('wrong-password'));

    ks.fault = '500';
    const good = new KeystoneSession(http(), {
      authUrl: ks.authUrl,
      userId: ks.userId,
      password: ks.password,
      projectId: ks.projectId,
    });
    t.match(await failure(good.token()), { message: /answered 500; check auth_url/, statusCode: 500 });
    ks.fault = 'non-json';
    t.match(await failure(good.token()), { message: /returned no X-Subject-Token/ });
    ks.fault = 'hang';
    const slow = new KeystoneSession(
      http(),
      { authUrl: ks.authUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId },
      { timeoutSeconds: 0.2 },
    );
    t.match(await failure(slow.token()), { message: /Keystone authentication failed: .*no answer within 0.2 s/ });
  },
);

t.test('a token answer without a JSON token body is refused; bad catalog entries are dropped', async (t) => {
  let body = 'not json';
  const server = await startTestServer((_req, res) => {
    res.writeHead(201, { 'x-subject-token': 'tok-abcdef-123456', 'content-type': 'application/json' });
    res.end(body);
  });
  t.teardown(() => server.close());
  const session = () =>
    new KeystoneSession(http(), { authUrl: `${server.url}/v3`, userId: 'u', password: 'p-12345', projectId: 'p' });
  t.match(await failure(session().token()), { message: /not JSON/ });
  body = '{"nottoken":1}';
  t.match(await failure(session().token()), { message: /no "token" object/ });
  body = JSON.stringify({
    token: {
      expires_at: 'garbage',
      catalog: [
        null,
        { type: 'x' },
        {
          type: 'orchestration',
          endpoints: [null, { url: 1 }, { interface: 'public', url: 'http://h/', region_id: 'R2' }],
        },
      ],
    },
  });
  const tok = await session().token();
  t.same(tok.catalog, [
    { type: 'orchestration', endpoints: [{ interface: 'public', url: 'http://h/', region_id: 'R2' }] },
  ]);
  t.ok(tok.expiresAt > Date.now() + 3000_000, 'an unreadable expires_at means an hour');
  t.equal(server.requests[0]?.url, '/v3/auth/tokens');
});

t.test('findEndpoint: public interface, region when given, "null"/"None" mean no region', async (t) => {
  const catalog: CatalogEntry[] = [
    {
      type: 'orchestration',
      endpoints: [
        { interface: 'internal', url: 'http://internal' },
        { interface: 'public', region: 'R1', url: 'http://r1/' },
        { interface: 'public', region_id: 'R2', url: 'http://r2' },
      ],
    },
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
  const memory: KeystoneMemory = {};
  const client = http();
  const creds = { authUrl: 'http://k/v3', userId: 'u', password: 'p-secret', projectId: 'p' };
  const a = rememberedSession(memory, client, creds, { timeoutSeconds: 1 });
  t.equal(rememberedSession(memory, client, { ...creds }, { timeoutSeconds: 1 }), a);
  const b = rememberedSession(memory, client, { ...creds, password: 'other-secret' }, { timeoutSeconds: 1 });
  t.not(b, a);
  t.not(
    rememberedSession(memory, http(), { ...creds, password: 'other-secret' }, { timeoutSeconds: 1 }),
    b,
    'a reloaded HTTP client',
  );
});

t.test('an unversioned auth_url: one discovery GET, then the login at the v3 endpoint it names', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const session = new KeystoneSession(
    http(),
    { authUrl: ks.rootUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId },
    { timeoutSeconds: 2 },
  );
  const tok = await session.token();
  t.ok(ks.validate(tok.token));
  t.same(
    ks.requests.map((r) => `${r.method} ${r.url}`),
    ['GET /identity', 'GET /identity/v3/', 'POST /identity/v3/auth/tokens'],
  );
  session.invalidate();
  await session.token();
  t.equal(ks.discoveries(), 2, 'discovery is not repeated for the next login');
});

t.test('discovery without v3 fails the login with the discovery error; nothing is posted', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  ks.versionsDocument = {
    versions: {
      values: [{ id: 'v2.0', status: 'deprecated', links: [{ rel: 'self', href: `${ks.url}/identity/v2.0/` }] }],
    },
  };
  const session = new KeystoneSession(http(), {
    authUrl: `${ks.rootUrl}/`,
    userId: ks.userId,
    password: ks.password,
    projectId: ks.projectId,
  });
  const err = await failure(session.token());
  t.type(err, KeystoneError);
  t.match(err.message, /offers no usable Identity v3 .*set auth_url to Keystone's v3 endpoint/);
  t.equal(ks.tokensIssued(), 0);
  t.notOk(err.message.includes(ks.password));
});

/** Two processes in a row: sessions with nothing in common but the cache directory. */
function sessionOn(
  ks: KeystoneServer,
  dir: string,
  extra: { now?: () => number; ttlSeconds?: number; log?: Logger } = {},
): KeystoneSession {
  return new KeystoneSession(
    http(),
    { authUrl: ks.rootUrl, userId: ks.userId, password: ks.password, projectId: ks.projectId },
    {
      timeoutSeconds: 2,
      cache: { dir, ttlSeconds: extra.ttlSeconds ?? 1800 },
      ...(extra.now ? { now: extra.now } : {}),
      ...(extra.log ? { log: extra.log } : {}),
    },
  );
}

t.test('token cache: a restarted client reuses the stored token and catalog: no discovery, no login', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  ks.catalog = [{ type: 'orchestration', endpoints: [{ interface: 'public', url: 'http://heat.test/v1/p' }] }];
  const dir = path.join(t.testdir(), 'var/lib/os-collect-config/keystone');
  const first = await sessionOn(ks, dir).token();
  t.equal(ks.tokensIssued(), 1);
  const [file] = readdirSync(dir);
  t.equal(statSync(dir).mode & 0o777, 0o700);
  t.equal(statSync(path.join(dir, file!)).mode & 0o777, 0o600);
  const before = ks.requests.length;
  const captured = captureLog();
  const second = await sessionOn(ks, dir, { log: captured.log }).token();
  t.equal(ks.requests.length, before, 'the second process sends Keystone nothing');
  t.equal(second.token, first.token);
  t.same(second.catalog, first.catalog);
  t.equal(findEndpoint(second.catalog, 'orchestration'), 'http://heat.test/v1/p');
  t.same(
    captured.lines.map((l) => l.msg),
    ['reusing the cached Keystone token'],
  );
  t.notOk(captured.text().includes(first.token));
});

t.test('token cache: an expired file (by expiry or cache_ttl) means one login, and the file is replaced', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const dir = t.testdir();
  let now = Date.now();
  const first = await sessionOn(ks, dir, { now: () => now }).token();
  now += 1800_000;
  const captured = captureLog();
  const second = await sessionOn(ks, dir, { now: () => now, log: captured.log }).token();
  t.not(second.token, first.token, 'cache_ttl (1800 s) reached: logged in');
  t.equal(ks.tokensIssued(), 2);
  t.same(
    captured.lines.map((l) => l.msg),
    ['cached Keystone token expired; logging in'],
  );
  t.equal((await sessionOn(ks, dir, { now: () => now }).token()).token, second.token, 'the new token was stored');
  ks.lifetimeMs = 90_000;
  const longTtl = t.testdir();
  const start = Date.now();
  await sessionOn(ks, longTtl, { ttlSeconds: 86_400, now: () => start }).token();
  t.equal(ks.tokensIssued(), 3);
  await sessionOn(ks, longTtl, { ttlSeconds: 86_400, now: () => start + 29_000 }).token();
  t.equal(ks.tokensIssued(), 3, 'reused while more than the one-minute margin is left');
  await sessionOn(ks, longTtl, { ttlSeconds: 86_400, now: () => start + 31_000 }).token();
  t.equal(ks.tokensIssued(), 4, 'not reused inside the margin, however long cache_ttl is');
});

t.test(
  'token cache: a corrupt file is ignored with one warning, replaced by the next login, and reused after that',
  async (t) => {
    const ks = await startKeystoneServer();
    t.teardown(() => ks.close());
    const dir = t.testdir();
    await sessionOn(ks, dir).token();
    const file = path.join(dir, readdirSync(dir)[0]!);
    writeFileSync(file, '{"format": 1, "token": ', { mode: 0o600 });
    const captured = captureLog();
    const fresh = await sessionOn(ks, dir, { log: captured.log }).token();
    t.equal(ks.tokensIssued(), 2);
    t.same(
      captured.lines.map((l) => [l.level, l.msg, l.reason]),
      [['warn', 'ignoring the cached Keystone token; logging in', 'not JSON']],
    );
    t.equal((await sessionOn(ks, dir).token()).token, fresh.token);
    t.equal(ks.tokensIssued(), 2);
  },
);

t.test(
  'token cache: invalidate() (a 401) removes the file, so neither this process nor the next reuses the token',
  async (t) => {
    const ks = await startKeystoneServer();
    t.teardown(() => ks.close());
    const dir = t.testdir();
    const session = sessionOn(ks, dir);
    const revoked = await session.token();
    session.invalidate();
    const renewed = await session.token();
    t.not(renewed.token, revoked.token);
    t.equal(ks.tokensIssued(), 2, 'one login after the refusal');
    t.equal((await sessionOn(ks, dir).token()).token, renewed.token, 'the file holds the new token');
    const restarted = sessionOn(ks, dir);
    restarted.invalidate();
    await new Promise((r) => setTimeout(r, 50));
    t.same(readdirSync(dir), [], 'removed');
    t.equal(ks.tokensIssued(), 2);
  },
);

t.test('token cache: an unwritable cache_dir costs a warning, not the login', async (t) => {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const dir = path.join(t.testdir({ file: 'x' }), 'file', 'keystone');
  const captured = captureLog();
  const session = sessionOn(ks, dir, { log: captured.log });
  const tok = await session.token();
  t.ok(ks.validate(tok.token));
  t.equal(await session.token(), tok, 'kept in memory');
  t.same(
    captured.lines.filter((l) => l.level !== 'debug').map((l) => l.msg),
    ['cannot write the Keystone token cache; the token is kept in memory only'],
  );
});

t.test('rememberedSession: a different cache directory or ttl is a different session', async (t) => {
  const memory: KeystoneMemory = {};
  const client = http();
  const creds = { authUrl: 'http://k/v3', userId: 'u', password: 'p-secret', projectId: 'p' };
  const a = rememberedSession(memory, client, creds, { timeoutSeconds: 1, cache: { dir: '/a', ttlSeconds: 1800 } });
  t.equal(rememberedSession(memory, client, creds, { timeoutSeconds: 1, cache: { dir: '/a', ttlSeconds: 1800 } }), a);
  const b = rememberedSession(memory, client, creds, { timeoutSeconds: 1, cache: { dir: '/b', ttlSeconds: 1800 } });
  t.not(b, a);
  t.not(rememberedSession(memory, client, creds, { timeoutSeconds: 1, cache: { dir: '/b', ttlSeconds: 60 } }), b);
});
