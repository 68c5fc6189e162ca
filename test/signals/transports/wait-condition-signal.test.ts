import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { createHttpClient } from '../../../src/http/client.js';
import type { DeliveryContext } from '../../../src/signals/transports/delivery.js';
import {
  waitConditionTokenSignal,
  waitConditionUrlSignal,
} from '../../../src/signals/transports/wait-condition-signal.js';
import type { TapTest } from '../../helpers/http-test-server.js';
import { captureLog } from '../../helpers/log-capture.js';
import { startWaitConditionServer, type WaitConditionServer } from '../../helpers/wait-condition-server.js';

// The two transports of what `cfn-signal` queues, against a server that checks the requests as Heat's two wait
// condition handles do (the pre-signed URL's signature; the native handle's token), and against TLS with a
// certificate nobody signed (cfn-signal -k).

let server: WaitConditionServer;
t.before(async () => {
  server = await startWaitConditionServer();
});
t.teardown(() => server.close());

const ctx = (): DeliveryContext => ({
  http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
  log: captureLog().log,
  timeoutSeconds: 2,
  now: Date.now,
});

t.test('WAIT_CONDITION_URL: the body is PUT to the pre-signed URL; shown without its signature', async (t) => {
  const target = { transport: 'WAIT_CONDITION_URL', url: server.cfnUrl('wc_url') } as const;
  const body = '{"Status": "SUCCESS", "Reason": "r", "UniqueId": "u1", "Data": "d"}';
  t.same(await waitConditionUrlSignal.send(target, body, ctx()), { outcome: 'sent', status: 200 });
  t.equal(server.requests.at(-1)?.method, 'PUT');
  t.same(server.handles.get('wc_url')?.get('u1'), { Status: 'SUCCESS', Reason: 'r', Data: 'd' });
  const signature = new URL(target.url).searchParams.get('Signature') ?? 'missing';
  t.notOk(waitConditionUrlSignal.where(target).includes(signature), 'no signature where it is shown');
  const expired = { ...target, url: server.cfnUrl('wc_url', { timestamp: new Date(Date.now() - 3_600_000) }) };
  t.match(await waitConditionUrlSignal.send(expired, body, ctx()), { outcome: 'final', status: 403 });
});

t.test('WAIT_CONDITION_TOKEN: POSTed with X-Auth-Token; a wrong token is final', async (t) => {
  const url = server.nativeUrl('wc_token');
  const body = '{"status": "SUCCESS", "id": "n1"}';
  const sent = await waitConditionTokenSignal.send(
    { transport: 'WAIT_CONDITION_TOKEN', url, token: server.token },
    body,
    ctx(),
  );
  t.same(sent, { outcome: 'sent', status: 200 });
  t.equal(server.requests.at(-1)?.method, 'POST');
  t.equal(server.requests.at(-1)?.headers['x-auth-token'], server.token);
  t.ok(server.handles.get('wc_token')?.has('n1'));
  const wrong = { transport: 'WAIT_CONDITION_TOKEN', url, token: 'gAAAAA-wrong' } as const;
  t.match(await waitConditionTokenSignal.send(wrong, body, ctx()), { outcome: 'final', status: 401 });
  t.notMatch(waitConditionTokenSignal.where(wrong), 'gAAAAA-wrong', 'no token where it is shown');
});

let openssl = true;
try {
  execFileSync('openssl', ['version'], { stdio: 'ignore' });
} catch {
  openssl = false;
}

/** A loopback HTTPS server with a self-signed certificate, answering 200 to anything. */
async function selfSignedServer(t: TapTest): Promise<string> {
  const dir = t.testdir();
  const [key, cert] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'],
      ...['-addext', 'subjectAltName=IP:127.0.0.1'],
    ],
    { stdio: 'ignore' },
  );
  const https = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_req, res) => res.end('{}'));
  await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => https.close(() => resolve())));
  return `https://127.0.0.1:${(https.address() as AddressInfo).port}/signal`;
}

t.test(
  'insecure (cfn-signal -k) skips verifying the certificate, for both kinds; without it the attempt fails',
  { skip: !openssl && 'openssl is not installed' },
  async (t) => {
    const url = await selfSignedServer(t);
    const byUrl = { transport: 'WAIT_CONDITION_URL', url } as const;
    const byToken = { transport: 'WAIT_CONDITION_TOKEN', url, token: 'tok' } as const;
    t.match(await waitConditionUrlSignal.send(byUrl, '{}', ctx()), { outcome: 'retry', error: /TLS/ });
    t.match(await waitConditionTokenSignal.send(byToken, '{}', ctx()), { outcome: 'retry', error: /TLS/ });
    t.same(await waitConditionUrlSignal.send({ ...byUrl, insecure: true }, '{}', ctx()), {
      outcome: 'sent',
      status: 200,
    });
    t.same(await waitConditionTokenSignal.send({ ...byToken, insecure: true }, '{}', ctx()), {
      outcome: 'sent',
      status: 200,
    });
  },
);
