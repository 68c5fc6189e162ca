import net from 'node:net';
import t from 'tap';
import { zaqarCollector } from '../../src/collectors/zaqar.js';
import { reconnectDelayMs } from '../../src/collectors/zaqar-websocket.js';
import type { CliOverrides } from '../../src/config/load.js';
import { collectAll } from '../../src/daemon/collect-all.js';
import { SourceUnavailableError } from '../../src/errors.js';
import { collectorContext, type TapTest, type TestContext } from '../helpers/http-test-server.js';
import { startKeystoneServer, type KeystoneServer } from '../helpers/keystone-server.js';
import { startZaqarWsServer, type ZaqarWsServer } from '../helpers/zaqar-ws-server.js';
import { failure } from '../helpers/assertions.js';

// The zaqar collector with use_websockets = true against a loopback Keystone (catalog with messaging-websocket) and a
// websocket server speaking Zaqar's protocol: authenticate, queue_create, subscription_create, then one pop per poll
// on a connection kept between polls, pushed messages, reconnects with backoff, and the faults of a real network.

const QUEUE = 'server-queue-ws';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const doc = (n: number) => ({
  'os-collect-config': { collectors: ['zaqar', 'local'] },
  deployments: [{ id: String(n), name: `dep-${n}`, group: 'os-apply-config', config: { n } }],
});

interface Setup {
  ks: KeystoneServer;
  zaqar: ZaqarWsServer;
  tc: TestContext;
  cli: CliOverrides;
  root: string;
  clock: { now: number };
  abort: AbortController;
}

async function setup(t: TapTest, over: Record<string, string | number | boolean> = {}, catalog = true): Promise<Setup> {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const zaqar = await startZaqarWsServer(ks);
  t.teardown(() => zaqar.close());
  // The HTTP endpoint is listed too, as a real catalog does; the collector must pick messaging-websocket.
  ks.catalog = [
    { type: 'messaging', endpoints: [{ interface: 'public', region: 'RegionOne', url: 'http://127.0.0.1:9/' }] },
  ];
  if (catalog)
    ks.catalog.push({
      type: 'messaging-websocket',
      endpoints: [{ interface: 'public', region: 'RegionOne', url: zaqar.endpoint }],
    });
  const root = t.testdir();
  const cli: CliOverrides = {
    zaqar: {
      auth_url: ks.authUrl,
      user_id: ks.userId,
      password: ks.password,
      project_id: ks.projectId,
      queue_id: QUEUE,
      use_websockets: true,
      timeout: 3,
      ...over,
    },
  };
  const clock = { now: Date.now() };
  const abort = new AbortController();
  const tc = await collectorContext('zaqar', { root, cli, now: () => clock.now, signal: abort.signal });
  // Whatever a test does, the kept connection ends with it.
  t.teardown(() => abort.abort());
  return { ks, zaqar, tc, cli, root, clock, abort };
}

/** Wait (bounded: 2 s) for the server to see what the client did. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
}

function assertNoSecrets(t: TapTest, s: Setup): void {
  const tokens = s.zaqar.frames.map((f) => String(f.headers['X-Auth-Token'] ?? '')).filter(Boolean);
  t.ok(tokens.length > 0, 'tokens were sent');
  for (const secret of [s.ks.password, ...tokens]) {
    t.notOk(s.tc.captured.text().includes(secret), 'no password or token in the captured log');
    t.notOk(s.tc.raw.text().includes(secret), 'no password or token even without log scrubbing');
  }
}

t.test('authenticate, queue_create, subscription_create, then one pop per poll on one kept connection', async (t) => {
  const s = await setup(t);
  s.zaqar.post(QUEUE, doc(1));
  s.zaqar.post(QUEUE, doc(2));
  const first = await zaqarCollector.collect(s.tc.ctx);
  t.same(
    first.pairs.map((p) => p.key),
    ['zaqar', 'dep-1'],
  );
  const second = await zaqarCollector.collect(s.tc.ctx);
  t.same(
    second.pairs.map((p) => p.key),
    ['zaqar', 'dep-2'],
  );
  const idle = await zaqarCollector.collect(s.tc.ctx);
  t.equal(idle.unchanged, true, 'an empty queue keeps the last document');
  t.same(idle.pairs, second.pairs);
  t.same(
    s.zaqar.frames.map((f) => f.action),
    [
      'authenticate',
      'queue_create',
      'subscription_create',
      'message_delete_many',
      'message_delete_many',
      'message_delete_many',
    ],
  );
  t.equal(s.zaqar.connections(), 1, 'one connection across polls');
  t.equal(s.ks.tokensIssued(), 1, 'one login');
  const [auth, create, subscribe, pop] = s.zaqar.frames;
  t.match(create?.body, { queue_name: QUEUE });
  t.same(subscribe?.body, { queue_name: QUEUE, ttl: 10000 }, "upstream's subscription ttl");
  t.same(pop?.body, { queue_name: QUEUE, pop: 1 });
  const clientIds = new Set(s.zaqar.frames.map((f) => f.headers['Client-ID']));
  t.equal(clientIds.size, 1, 'one Client-ID on every frame');
  t.match([...clientIds][0], UUID);
  for (const f of s.zaqar.frames) {
    t.equal(f.headers['X-Project-ID'], s.ks.projectId, `${f.action} carries X-Project-ID`);
    t.equal(f.headers['X-Auth-Token'], auth?.headers['X-Auth-Token'], `${f.action} carries the token`);
  }
  t.ok(s.ks.validate(auth?.headers['X-Auth-Token'] as string), 'the token is the one Keystone issued');
  t.equal(
    s.tc.captured.lines.filter((r) => r.msg === 'Zaqar websocket subscribed').length,
    1,
    'one log line for the subscription',
  );
  assertNoSecrets(t, s);
});

t.test('a pushed message stands in when the queue is already empty', async (t) => {
  const s = await setup(t);
  s.zaqar.post(QUEUE, doc(1));
  await zaqarCollector.collect(s.tc.ctx);
  // Another consumer popped it (or it expired): only the notification reaches this agent.
  s.zaqar.push(QUEUE, doc(3));
  // Zaqar writes the push before the answer to the next pop, so it has arrived when the pop is answered.
  const pushed = await zaqarCollector.collect(s.tc.ctx);
  t.same(
    pushed.pairs.map((p) => p.key),
    ['zaqar', 'dep-3'],
  );
  t.notOk(pushed.unchanged);
  const idle = await zaqarCollector.collect(s.tc.ctx);
  t.equal(idle.unchanged, true, 'a push is used once');
  t.same(idle.pairs, pushed.pairs);
  // A queued message wins over a push that arrived before the pop (the queue holds it in order).
  s.zaqar.post(QUEUE, doc(4));
  const popped = await zaqarCollector.collect(s.tc.ctx);
  t.same(
    popped.pairs.map((p) => p.key),
    ['zaqar', 'dep-4'],
  );
});

t.test(
  'the endpoint comes from the messaging-websocket service of the catalog, in the configured region',
  async (t) => {
    const s = await setup(t, { region_name: 'RegionTwo' });
    t.match(await failure(zaqarCollector.collect(s.tc.ctx)), {
      code: 'ERR_HTTP',
      message: /no public "messaging-websocket" endpoint in region RegionTwo/,
    });
    const none = await setup(t, {}, false);
    t.match(await failure(zaqarCollector.collect(none.tc.ctx)), {
      message: /no public "messaging-websocket" endpoint/,
    });
    t.equal(none.zaqar.connections(), 0);
    // Endpoints a websocket cannot use are refused with a reason, not thrown at the daemon.
    for (const [url, reason] of [
      ['ftp://127.0.0.1:9/', /uses ftp:; only ws: and wss: are supported/],
      [`${none.zaqar.endpoint}/#fragment`, /cannot be used: .*fragment/],
    ] as const) {
      const bad = await setup(t, {}, false);
      bad.ks.catalog = [{ type: 'messaging-websocket', endpoints: [{ interface: 'public', url }] }];
      const err = await failure(zaqarCollector.collect(bad.tc.ctx));
      t.type(err, SourceUnavailableError);
      t.match(err.message, reason);
    }
  },
);

t.test('a CA file that cannot be read is the source unavailable, said plainly', async (t) => {
  const s = await setup(t, { ssl_certificate_validation: true, ca_file: '/nonexistent/zaqar-ca.pem' });
  const err = await failure(zaqarCollector.collect(s.tc.ctx));
  t.type(err, SourceUnavailableError);
  t.match(err.message, /the Zaqar websocket could not be opened: ENOENT.*zaqar-ca\.pem/);
  t.equal(s.zaqar.connections(), 0);
});

t.test('a token Zaqar refuses gets one new token; a second refusal is the source unavailable', async (t) => {
  const s = await setup(t);
  s.zaqar.post(QUEUE, doc(1));
  await zaqarCollector.collect(s.tc.ctx);
  // Keystone forgets the token and Zaqar ends the session, as it does when a token expires.
  s.ks.expireAll();
  s.zaqar.fault('message_delete_many', 'expire-session');
  t.match(await failure(zaqarCollector.collect(s.tc.ctx)), { message: /token expired/ });
  s.zaqar.post(QUEUE, doc(2));
  s.clock.now += 10 * 60_000;
  const again = await zaqarCollector.collect(s.tc.ctx);
  t.same(
    again.pairs.map((p) => p.key),
    ['zaqar', 'dep-2'],
  );
  t.equal(s.ks.tokensIssued(), 2, 'exactly one new login');
  const auths = s.zaqar.frames.filter((f) => f.action === 'authenticate');
  t.equal(auths.length, 2, 'the session ended with the token: the new connection authenticates with a fresh one');

  // A Zaqar that refuses every token: one retry with a fresh token, then unavailable with Zaqar's answer.
  s.zaqar.refuseTokens = true;
  s.zaqar.fault('message_delete_many', 'drop-mid-answer');
  await failure(zaqarCollector.collect(s.tc.ctx));
  s.clock.now += 10 * 60_000;
  const before = s.ks.tokensIssued();
  const err = await failure(zaqarCollector.collect(s.tc.ctx));
  t.type(err, SourceUnavailableError);
  t.match(err.message, /refused the Keystone token \(401 \(Authentication failed\.\)\); check the credentials/);
  t.equal(s.ks.tokensIssued(), before + 1, 'one fresh token, not a loop');
  assertNoSecrets(t, s);
});

t.test('a cached token refused at authenticate gets one new token on the same connection', async (t) => {
  const s = await setup(t);
  s.zaqar.post(QUEUE, doc(1));
  // Log in once (over the kept session), then close the connection and expire the token on Keystone's side only.
  await zaqarCollector.collect(s.tc.ctx);
  s.ks.expireAll();
  s.abort.abort();
  // The same memory and HTTP client (so the same Keystone session and its cached token), a new shutdown signal.
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  s.zaqar.post(QUEUE, doc(2));
  const got = await zaqarCollector.collect({ ...s.tc.ctx, signal: abort.signal });
  t.same(
    got.pairs.map((p) => p.key),
    ['zaqar', 'dep-2'],
  );
  const second = s.zaqar.frames.filter((f) => f.connection === 2).map((f) => f.action);
  t.same(
    second,
    ['authenticate', 'authenticate', 'queue_create', 'subscription_create', 'message_delete_many'],
    'a 401, a new token, then on',
  );
  t.equal(s.ks.tokensIssued(), 2);
});

t.test(
  'a connection dropped in the middle of an answer: unavailable, then reconnected after a bounded, jittered delay',
  async (t) => {
    const s = await setup(t);
    s.zaqar.post(QUEUE, doc(1));
    await zaqarCollector.collect(s.tc.ctx);
    s.zaqar.post(QUEUE, doc(2));
    s.zaqar.fault('message_delete_many', 'drop-mid-answer');
    const err = await failure(zaqarCollector.collect(s.tc.ctx));
    t.type(err, SourceUnavailableError);
    t.match(err.message, /closed before the answer to message_delete_many/);
    t.equal(s.zaqar.queues.get(QUEUE)?.length, 1, 'nothing was lost: the message is still queued');
    // Within the delay the agent does not knock again.
    const waiting = await failure(zaqarCollector.collect(s.tc.ctx));
    t.match(waiting.message, /the Zaqar websocket is down \(.*closed before the answer.*\); the next attempt is at /);
    t.equal(s.zaqar.connections(), 1);
    s.clock.now += 2000;
    const back = await zaqarCollector.collect(s.tc.ctx);
    t.same(
      back.pairs.map((p) => p.key),
      ['zaqar', 'dep-2'],
    );
    t.equal(s.zaqar.connections(), 2);
    t.equal(
      s.tc.captured.lines.filter((r) => r.msg === 'Zaqar websocket closed; it is reopened on the next poll').length,
      0,
      'a drop seen by a poll is reported by that poll, not twice',
    );
  },
);

t.test('the daemon keeps the last good data while the websocket is down, and logs the condition once', async (t) => {
  const s = await setup(t);
  s.zaqar.post(QUEUE, doc(1));
  const memory = new Map([['zaqar', { memory: s.tc.ctx.memory }]]);
  const deps = {
    config: { ...s.tc.ctx.config, DEFAULT: { ...s.tc.ctx.config.DEFAULT, collectors: ['zaqar'] } },
    paths: s.tc.ctx.paths,
    log: s.tc.ctx.log,
    http: s.tc.http,
    signal: s.abort.signal,
    memory,
    failing: new Set<string>(),
    now: () => s.clock.now,
  };
  const good = await collectAll(deps, undefined);
  t.same(
    good.pairs.map((p) => p.key),
    ['zaqar', 'dep-1'],
  );
  s.zaqar.fault('message_delete_many', 'drop-mid-answer');
  for (let i = 0; i < 3; i++) {
    const down = await collectAll(deps, undefined);
    t.same(down.pairs, good.pairs, `pass ${i + 1} while down: the last good data`);
    t.match(down.failures, [{ collector: 'zaqar', message: /closed before the answer to message_delete_many/ }]);
  }
  const warnings = s.tc.captured.lines.filter((l) => l.msg === 'source unavailable' && l.level === 'warn');
  t.equal(warnings.length, 1, 'one warning for the condition, not one per retry');
});

t.test('a server that never answers is bounded by [zaqar] timeout', async (t) => {
  const s = await setup(t, { timeout: 1 });
  s.zaqar.fault('queue_create', 'silent');
  const err = await failure(zaqarCollector.collect(s.tc.ctx));
  t.match(err, { code: 'ERR_HTTP', message: /did not answer queue_create within 1 s/ });
  await until(() => s.zaqar.openConnections() === 0);
  t.equal(s.zaqar.openConnections(), 0, 'the connection is closed, not left half-used');

  // A listener that accepts TCP and never completes the websocket handshake.
  const sockets = new Set<net.Socket>();
  const hang = net.createServer((sock) => sockets.add(sock));
  await new Promise<void>((resolve) => hang.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const sock of sockets) sock.destroy();
    hang.close();
  });
  const port = (hang.address() as net.AddressInfo).port;
  s.ks.catalog = [{ type: 'messaging-websocket', endpoints: [{ interface: 'public', url: `ws://127.0.0.1:${port}` }] }];
  s.ks.expireAll();
  for (const key of Object.keys(s.tc.ctx.memory)) delete (s.tc.ctx.memory as Record<string, unknown>)[key];
  t.match(await failure(zaqarCollector.collect(s.tc.ctx)), {
    message:
      /could not open the Zaqar websocket at ws:\/\/127\.0\.0\.1:\d+\/: the opening handshake did not finish within 1 s/,
  });
});

t.test(
  'malformed frames: a non-JSON answer, a pushed frame that is not an object, a message body that is not an object',
  async (t) => {
    const s = await setup(t);
    s.zaqar.post(QUEUE, doc(1));
    const good = await zaqarCollector.collect(s.tc.ctx);
    s.zaqar.fault('message_delete_many', 'not-json');
    t.match(await failure(zaqarCollector.collect(s.tc.ctx)), {
      code: 'ERR_SOURCE_INVALID_DATA',
      message: /sent a frame that is not JSON text/,
    });
    s.clock.now += 2000;
    t.equal((await zaqarCollector.collect(s.tc.ctx)).unchanged, true, 'reconnected; the last document is kept');
    t.same((await zaqarCollector.collect(s.tc.ctx)).pairs, good.pairs);

    // A bad frame between polls costs a reconnect, not an outage.
    s.zaqar.sendRaw('[1, 2, 3]');
    await until(() => s.zaqar.openConnections() === 0);
    const connections = s.zaqar.connections();
    t.equal((await zaqarCollector.collect(s.tc.ctx)).unchanged, true);
    t.equal(s.zaqar.connections(), connections + 1, 'reconnected at once');
    const closes = s.tc.captured.lines.filter(
      (l) => l.msg === 'Zaqar websocket closed; it is reopened on the next poll',
    );
    t.equal(closes.length, 1, "one line for the close between polls; the one during a poll was that poll's error");
    t.match(closes[0], { level: 'info', reason: /sent a frame that is not a JSON object/ });
    s.zaqar.post(QUEUE, ['not', 'an', 'object']);
    t.match(await failure(zaqarCollector.collect(s.tc.ctx)), {
      code: 'ERR_SOURCE_INVALID_DATA',
      message: /message body is not a JSON object/,
    });
    // The pushed notification of that message is ignored, not crashed on.
    t.equal((await zaqarCollector.collect(s.tc.ctx)).unchanged, true);
  },
);

t.test('a frame larger than [agent] max_source_bytes closes the connection', async (t) => {
  const s = await setup(t, { timeout: 5 });
  const tc = await collectorContext('zaqar', {
    root: s.root,
    cli: { ...s.cli, agent: { max_source_bytes: 65536 } },
    now: () => s.clock.now,
    signal: s.abort.signal,
  });
  await zaqarCollector.collect(tc.ctx).catch(() => undefined);
  s.zaqar.post(QUEUE, { big: 'x'.repeat(70_000) });
  t.match(await failure(zaqarCollector.collect(tc.ctx)), {
    message: /a frame was larger than the limit \(\[agent\] max_source_bytes\)/,
  });
});

t.test('shutdown closes the kept connection', async (t) => {
  const s = await setup(t);
  s.zaqar.post(QUEUE, doc(1));
  await zaqarCollector.collect(s.tc.ctx);
  t.equal(s.zaqar.openConnections(), 1);
  s.abort.abort();
  await until(() => s.zaqar.openConnections() === 0);
  t.equal(s.zaqar.openConnections(), 0);
});

t.test('switching use_websockets off closes the kept connection', async (t) => {
  const s = await setup(t);
  s.zaqar.post(QUEUE, doc(1));
  await zaqarCollector.collect(s.tc.ctx);
  const tc = await collectorContext('zaqar', {
    root: s.root,
    cli: { zaqar: { ...s.cli.zaqar, use_websockets: false } },
    memory: s.tc.ctx.memory,
  });
  await zaqarCollector.collect(tc.ctx).catch(() => undefined);
  await until(() => s.zaqar.openConnections() === 0);
  t.equal(s.zaqar.openConnections(), 0);
});

t.test('a reload (new settings or a new HTTP client) replaces the kept connection', async (t) => {
  const s = await setup(t);
  s.zaqar.post(QUEUE, doc(1));
  await zaqarCollector.collect(s.tc.ctx);
  const reloaded = await collectorContext('zaqar', {
    root: s.root,
    cli: s.cli,
    memory: s.tc.ctx.memory,
    now: () => s.clock.now,
    signal: s.abort.signal,
  });
  t.equal((await zaqarCollector.collect(reloaded.ctx)).unchanged, true);
  t.equal(s.zaqar.connections(), 2, 'a new connection with the new session');
  await until(() => s.zaqar.openConnections() === 1);
  t.equal(s.zaqar.openConnections(), 1, 'the old one is closed');
});

t.test('reconnect delay: doubling from 1 s, capped at 5 min, jittered into [half, full]', async (t) => {
  t.equal(reconnectDelayMs(1, 1), 1000);
  t.equal(reconnectDelayMs(1, 0), 500);
  t.equal(reconnectDelayMs(4, 1), 8000);
  t.equal(reconnectDelayMs(30, 1), 300_000);
  t.equal(reconnectDelayMs(30, 0), 150_000);
  t.equal(reconnectDelayMs(3, 7), 4000, 'random clamped');
});
