import t from 'tap';
import { flushDue, queuedSignal, type OutboxDeps } from '../../../src/signals/outbox.js';
import type { SignalTarget } from '../../../src/heat/signal-target.js';
import { storeFor } from '../../../src/state/store.js';
import type { DeliveryContext } from '../../../src/signals/transports/delivery.js';
import { sendZaqarSignal } from '../../../src/signals/transports/zaqar-signal.js';
import { createHttpClient } from '../../../src/http/client.js';
import { deployConfig } from '../../helpers/deploy-fixtures.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { refusedUrl } from '../../helpers/http-test-server.js';
import { startKeystoneServer, type KeystoneServer } from '../../helpers/keystone-server.js';
import { captureLog, type CapturedLog } from '../../helpers/log-capture.js';
import { startZaqarWsServer, type ZaqarWsServer } from '../../helpers/zaqar-ws-server.js';
import { moveTo } from '../../helpers/state-path.js';

// ZAQAR_SIGNAL over Zaqar's websocket API ([zaqar] use_websockets = true): authenticate, then message_post of
// {"ttl": 600, "body": <signal>} to the deployment's queue, against a loopback Keystone and a websocket server speaking
// Zaqar's protocol; failures judged so the outbox retries them, and nothing is delivered twice.

type ZaqarTarget = Extract<SignalTarget, { transport: 'ZAQAR_SIGNAL' }>;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Setup {
  ks: KeystoneServer;
  zaqar: ZaqarWsServer;
  captured: CapturedLog;
  ctx: DeliveryContext;
  target: (queue: string) => ZaqarTarget;
}

async function setup(t: TapTest, timeoutSeconds = 2): Promise<Setup> {
  const ks = await startKeystoneServer();
  t.teardown(() => ks.close());
  const zaqar = await startZaqarWsServer(ks);
  t.teardown(() => zaqar.close());
  ks.catalog = [
    { type: 'messaging', endpoints: [{ interface: 'public', region: 'RegionOne', url: 'http://127.0.0.1:9/' }] },
    { type: 'messaging-websocket', endpoints: [{ interface: 'public', region: 'RegionOne', url: zaqar.endpoint }] },
  ];
  const captured = captureLog('debug');
  const ctx: DeliveryContext = {
    http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
    log: captured.log,
    timeoutSeconds,
    now: Date.now,
    zaqarWebsockets: true,
  };
  const target = (queue: string): ZaqarTarget => ({
    transport: 'ZAQAR_SIGNAL',
    queueId: queue,
    authUrl: ks.authUrl,
    userId: ks.userId,
    password: ks.password,
    projectId: ks.projectId,
    region: 'RegionOne',
  });
  return { ks, zaqar, captured, ctx, target };
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
}

const bodies = (zaqar: ZaqarWsServer, queue: string) =>
  (zaqar.queues.get(queue) ?? []).map((m) => (m as { body: unknown }).body);

t.test(
  'authenticate, then one message_post of {"ttl": 600, "body": <signal>}; the connection is closed after',
  async (t) => {
    const s = await setup(t);
    t.same(await sendZaqarSignal(s.target('q-1'), '{"deploy_status_code": 0, "x": "\\u00e9"}', s.ctx), {
      outcome: 'sent',
      status: 201,
    });
    t.same(bodies(s.zaqar, 'q-1'), [{ deploy_status_code: 0, x: '\u00e9' }]);
    t.same(
      s.zaqar.frames.map((f) => f.action),
      ['authenticate', 'message_post'],
    );
    const [auth, post] = s.zaqar.frames;
    t.same(post?.body, { queue_name: 'q-1', messages: [{ ttl: 600, body: { deploy_status_code: 0, x: '\u00e9' } }] });
    for (const f of [auth, post]) {
      t.match(f?.headers['Client-ID'], UUID);
      t.equal(f?.headers['X-Project-ID'], s.ks.projectId);
      t.ok(s.ks.validate(f?.headers['X-Auth-Token'] as string), `${f?.action} carries the token`);
    }
    await until(() => s.zaqar.openConnections() === 0);
    t.equal(s.zaqar.openConnections(), 0);
    t.notOk(s.captured.text().includes(String(auth?.headers['X-Auth-Token'])), 'no token in the log');
  },
);

t.test('with use_websockets off the HTTP API is used, not the websocket', async (t) => {
  const s = await setup(t);
  const res = await sendZaqarSignal(s.target('q-1'), '{}', { ...s.ctx, zaqarWebsockets: false });
  t.equal(res.outcome, 'retry', 'the HTTP endpoint of this catalog is a closed port');
  t.equal(s.zaqar.connections(), 0);
});

t.test('a token Zaqar refuses is replaced once; refused again, the signal fails as final', async (t) => {
  const s = await setup(t);
  t.equal((await sendZaqarSignal(s.target('q-1'), '{"n": 1}', s.ctx)).outcome, 'sent');
  s.ks.expireAll();
  t.equal((await sendZaqarSignal(s.target('q-1'), '{"n": 2}', s.ctx)).outcome, 'sent');
  t.equal(s.ks.tokensIssued(), 2);
  t.same(
    s.zaqar.frames.filter((f) => f.connection === 2).map((f) => f.action),
    ['authenticate', 'authenticate', 'message_post'],
  );
  s.zaqar.refuseTokens = true;
  const refused = await sendZaqarSignal(s.target('q-1'), '{"n": 3}', s.ctx);
  t.match(refused, {
    outcome: 'final',
    status: 401,
    error:
      /Zaqar signal: Zaqar at ws:\/\/127\.0\.0\.1:\d+\/ refused the Keystone token \(401 \(Authentication failed\.\)\)/,
  });
  t.equal(s.ks.tokensIssued(), 3, 'one fresh token, not a loop');
  t.same(bodies(s.zaqar, 'q-1'), [{ n: 1 }, { n: 2 }], 'nothing posted without authentication');
});

t.test('Keystone refusing the deployment user is final; no connection to Zaqar', async (t) => {
  const s = await setup(t);
  const res = await sendZaqarSignal({ ...s.target('q-1'), password: 'not-the-password' }, '{}', s.ctx);
  t.match(res, { outcome: 'final', status: 401 });
  t.equal(s.zaqar.connections(), 0);
});

t.test('no messaging-websocket service, or an endpoint that refuses connections: retried', async (t) => {
  const s = await setup(t);
  s.ks.catalog = [{ type: 'messaging', endpoints: [{ interface: 'public', url: 'http://127.0.0.1:9/' }] }];
  t.match(await sendZaqarSignal(s.target('q-1'), '{}', s.ctx), {
    outcome: 'retry',
    error: /no public "messaging-websocket" endpoint in region RegionOne/,
  });
  // Another cloud's Keystone (sessions, and the catalogs cached with their tokens, are per user).
  const other = await startKeystoneServer();
  t.teardown(() => other.close());
  const refused = (await refusedUrl()).replace(/^http/, 'ws');
  other.catalog = [
    { type: 'messaging-websocket', endpoints: [{ interface: 'public', region: 'RegionOne', url: refused }] },
  ];
  const elsewhere: ZaqarTarget = {
    ...s.target('q-2'),
    authUrl: other.authUrl,
    userId: other.userId,
    password: other.password,
    projectId: other.projectId,
  };
  t.match(await sendZaqarSignal(elsewhere, '{}', s.ctx), {
    outcome: 'retry',
    error: /could not open the Zaqar websocket at ws:\/\/127\.0\.0\.1:\d+\/: .*ECONNREFUSED/,
  });
});

t.test('a drop mid-answer, silence, a non-JSON answer: retried, never reported as sent', async (t) => {
  const s = await setup(t, 1);
  s.zaqar.fault('message_post', 'drop-mid-answer');
  t.match(await sendZaqarSignal(s.target('q-1'), '{"n": 1}', s.ctx), {
    outcome: 'retry',
    error: /closed before the answer to message_post/,
  });
  s.zaqar.fault('message_post', 'silent');
  t.match(await sendZaqarSignal(s.target('q-1'), '{"n": 1}', s.ctx), {
    outcome: 'retry',
    error: /did not answer message_post within 1 s/,
  });
  s.zaqar.fault('message_post', 'not-json');
  t.match(await sendZaqarSignal(s.target('q-1'), '{"n": 1}', s.ctx), { outcome: 'retry', error: /not JSON text/ });
  s.zaqar.fault('authenticate', 'silent');
  t.match(await sendZaqarSignal(s.target('q-1'), '{"n": 1}', s.ctx), {
    outcome: 'retry',
    error: /did not answer authenticate/,
  });
  t.same(bodies(s.zaqar, 'q-1'), []);
  await until(() => s.zaqar.openConnections() === 0);
  t.equal(s.zaqar.openConnections(), 0, 'every failed attempt closed its connection');
});

t.test('the outbox retries a dropped websocket signal with backoff and delivers it exactly once', async (t) => {
  const s = await setup(t);
  const root = t.testdir();
  const loaded = await deployConfig(root);
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const store = storeFor(loaded.config, s.captured.log, () => clock);
  await store.init();
  const deps: OutboxDeps = {
    store,
    http: s.ctx.http,
    log: s.captured.log,
    policy: {
      timeoutSeconds: 2,
      maxBackoffSeconds: 60,
      maxAttempts: 10,
      now: () => clock,
      random: () => 1,
      zaqarWebsockets: true,
    },
  };
  const r = await store.create({ id: 'd1', name: 'res-d1', group: 'fake', action: 'CREATE' });
  await moveTo(store, r, 'done', {
    exitCode: 0,
    signal: queuedSignal(s.target('queue-d1'), '{"deploy_status_code": 0}'),
  });

  s.zaqar.fault('message_post', 'drop-mid-answer');
  t.match(await flushDue(deps), { attempted: 1, sent: 0, pending: 1, nextDueAt: clock + 2000 });
  t.match(await flushDue(deps), { attempted: 0, pending: 1 }, 'not due yet: nothing sent');
  clock += 2000;
  t.match(await flushDue(deps), { attempted: 1, sent: 1, pending: 0 });
  t.match(await flushDue(deps), { attempted: 0, sent: 0, pending: 0 });
  t.same(bodies(s.zaqar, 'queue-d1'), [{ deploy_status_code: 0 }], 'one message on the queue');
  t.equal((await store.read('d1'))?.state, 'signalled');
  t.equal(s.captured.lines.filter((l) => l.msg === 'signal attempt failed; will retry').length, 1);
});
