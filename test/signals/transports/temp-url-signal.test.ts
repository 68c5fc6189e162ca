import t from 'tap';
import { parseDeployment } from '../../../src/heat/deployment.js';
import { signalTargetFor, type SignalTarget } from '../../../src/heat/signal-target.js';
import type { DeliveryContext } from '../../../src/signals/transports/delivery.js';
import { sendTempUrlSignal } from '../../../src/signals/transports/temp-url-signal.js';
import { createHttpClient } from '../../../src/http/client.js';
import { captureLog } from '../../helpers/log-capture.js';
import { startSignalSink, type SinkInput } from '../../helpers/signal-sink.js';

// TEMP_URL_SIGNAL: a PUT to a Swift TempURL whose signature and expiry the server checks.

function target(inputs: SinkInput[]): Extract<SignalTarget, { transport: 'TEMP_URL_SIGNAL' }> {
  const p = parseDeployment({ id: 'd', inputs });
  if (!p.ok) throw new Error(p.reason);
  const choice = signalTargetFor(p.deployment);
  if (!choice.ok || choice.target.transport !== 'TEMP_URL_SIGNAL') throw new Error('not a TempURL target');
  return choice.target;
}

const ctx = (): DeliveryContext => ({
  http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
  log: captureLog().log,
  timeoutSeconds: 2,
  now: Date.now,
});

t.test('the body is PUT as the signal object (201)', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const res = await sendTempUrlSignal(
    target(sink.inputs('TEMP_URL_SIGNAL', 'dep-7', 'r')),
    '{"deploy_status_code": 0, "out": [1]}',
    ctx(),
  );
  t.same(res, { outcome: 'sent', status: 201 });
  t.same(sink.received[0]?.body, { deploy_status_code: 0, out: [1] });
  t.equal(sink.received[0]?.id, 'dep-7');
  t.equal(sink.received[0]?.headers['content-type'], 'application/json');
});

t.test('an expired TempURL gets 401: final', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const res = await sendTempUrlSignal(
    target(sink.inputs('TEMP_URL_SIGNAL', 'dep-7', 'r', { tempUrlExpires: Math.floor(Date.now() / 1000) - 10 })),
    '{}',
    ctx(),
  );
  t.equal(res.outcome, 'final');
  t.equal(res.status, 401);
  if (res.outcome === 'final') t.notMatch(res.error, /temp_url_sig=[0-9a-f]/, 'the signature is redacted');
  t.equal(sink.received.length, 0);
});
