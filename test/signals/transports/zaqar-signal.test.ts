import t from 'tap';
import { parseDeployment } from '../../../src/heat/deployment.js';
import { signalTargetFor, type SignalTarget } from '../../../src/heat/signal-target.js';
import type { DeliveryContext } from '../../../src/signals/transports/delivery.js';
import { sendZaqarSignal } from '../../../src/signals/transports/zaqar-signal.js';
import { createHttpClient } from '../../../src/http/client.js';
import { captureLog } from '../../helpers/log-capture.js';
import { deployment } from '../../helpers/deploy-fixtures.js';
import { startSignalSink, type SignalSink } from '../../helpers/signal-sink.js';

// ZAQAR_SIGNAL: one message {"ttl": 600, "body": <signal>} posted to the deployment's queue.

function target(sink: SignalSink, id: string): Extract<SignalTarget, { transport: 'ZAQAR_SIGNAL' }> {
  const p = parseDeployment(deployment({ id, signal: sink.inputs('ZAQAR_SIGNAL', id, 'res') }));
  if (!p.ok) throw new Error(p.reason);
  const choice = signalTargetFor(p.deployment);
  if (!choice.ok || choice.target.transport !== 'ZAQAR_SIGNAL') throw new Error('not a Zaqar target');
  return choice.target;
}

const ctx = (): DeliveryContext => ({
  http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
  log: captureLog().log,
  timeoutSeconds: 2,
  now: Date.now,
});

t.test('the signal is posted as one message with Client-ID and X-Project-ID', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  t.same(await sendZaqarSignal(target(sink, 'z-1'), '{"deploy_status_code": 0, "x": "\\u00e9"}', ctx()), {
    outcome: 'sent',
    status: 201,
  });
  const got = sink.received[0];
  t.equal(got?.id, 'z-1', 'posted to queue-z-1');
  t.same(got?.body, { deploy_status_code: 0, x: '\u00e9' });
  t.same((JSON.parse(got?.raw ?? '{}') as { messages: Array<{ ttl: number }> }).messages[0]?.ttl, 600);
  t.equal(got?.headers['x-project-id'], sink.keystone.projectId);
});

t.test('an expired token is replaced once; a refused queue request is final', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const c = ctx();
  await sendZaqarSignal(target(sink, 'z-1'), '{}', c);
  sink.keystone.expireAll();
  t.equal((await sendZaqarSignal(target(sink, 'z-2'), '{}', c)).outcome, 'sent');
  t.equal(sink.keystone.tokensIssued(), 2);
  sink.answers = [400];
  const refused = await sendZaqarSignal(target(sink, 'z-3'), '{}', c);
  t.equal(refused.outcome, 'final');
  t.equal(refused.status, 400);
});
