import t from 'tap';
import { parseDeployment } from '../../../src/heat/deployment.js';
import { signalTargetFor, type SignalTarget } from '../../../src/heat/signal-target.js';
import { sendCfnSignal } from '../../../src/signals/transports/cfn-signal.js';
import type { DeliveryContext } from '../../../src/signals/transports/delivery.js';
import { createHttpClient } from '../../../src/http/client.js';
import { refusedUrl } from '../../helpers/http-test-server.js';
import { captureLog } from '../../helpers/log-capture.js';
import { startSignalSink, type SinkInput } from '../../helpers/signal-sink.js';

// CFN_SIGNAL against a server that checks the pre-signed URL's signature and timestamp as heat-api-cfn/Keystone do.

function target(inputs: SinkInput[]): Extract<SignalTarget, { transport: 'CFN_SIGNAL' }> {
  const p = parseDeployment({ id: 'd', inputs });
  if (!p.ok) throw new Error(p.reason);
  const choice = signalTargetFor(p.deployment);
  if (!choice.ok || choice.target.transport !== 'CFN_SIGNAL') throw new Error('not a CFN target');
  return choice.target;
}

function ctx(): DeliveryContext {
  return {
    http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 3, retryBaseMs: 5 }),
    log: captureLog().log,
    timeoutSeconds: 2,
    now: Date.now,
  };
}

t.test('the body is POSTed as JSON to the signed URL and accepted', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const text = '{"deploy_stdout": "caf\\u00e9", "deploy_status_code": 0}';
  const res = await sendCfnSignal(target(sink.inputs('CFN_SIGNAL', 'dep-1', 'r')), text, ctx());
  t.same(res, { outcome: 'sent', status: 200 });
  t.equal(sink.received.length, 1);
  t.equal(sink.received[0]?.raw, text, 'sent byte for byte');
  t.same(sink.received[0]?.body, { deploy_stdout: 'caf\u00e9', deploy_status_code: 0 });
});

t.test('an expired or tampered URL gets 403: final, never retried', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const old = target(sink.inputs('CFN_SIGNAL', 'dep-1', 'r', { cfnTimestamp: new Date(Date.now() - 16 * 60_000) }));
  const expired = await sendCfnSignal(old, '{}', ctx());
  t.equal(expired.outcome, 'final');
  t.equal(expired.status, 403);
  if (expired.outcome === 'final') {
    t.match(
      expired.error,
      /CFN signal at http:\/\/127\.0\.0\.1:\d+\/v1\/signal\/dep-1.* answered 403 \(.*Credential is expired/,
    );
    t.notMatch(expired.error, /Signature=[^[&]/, 'the signature is redacted');
  }
  const good = target(sink.inputs('CFN_SIGNAL', 'dep-1', 'r'));
  const tampered = { ...good, url: good.url.replace(/Signature=[^&]+/, 'Signature=AAAA') };
  t.equal((await sendCfnSignal(tampered, '{}', ctx())).status, 403);
  t.equal(sink.attempts.length, 2, 'one request each: the client retried nothing');
  t.equal(sink.received.length, 0);
});

t.test('5xx, 429 and an unreachable server are worth retrying', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const tg = target(sink.inputs('CFN_SIGNAL', 'dep-1', 'r'));
  sink.answers = [503, 429];
  const first = await sendCfnSignal(tg, '{}', ctx());
  t.equal(first.outcome, 'retry');
  t.equal(first.status, 503);
  const second = await sendCfnSignal(tg, '{}', ctx());
  t.equal(second.outcome, 'retry');
  t.equal(sink.attempts.length, 2, 'no client-level retries');
  const down = await sendCfnSignal({ ...tg, url: `${await refusedUrl()}/v1/signal/x?Signature=s` }, '{}', ctx());
  t.equal(down.outcome, 'retry');
  if (down.outcome === 'retry') t.match(down.error, 'connection refused');
  t.same(await sendCfnSignal(tg, '{}', ctx()), { outcome: 'sent', status: 200 });
});
