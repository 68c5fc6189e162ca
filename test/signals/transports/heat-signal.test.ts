import t from 'tap';
import { parseDeployment } from '../../../src/heat/deployment.js';
import { signalTargetFor, type SignalTarget } from '../../../src/heat/signal-target.js';
import type { DeliveryContext } from '../../../src/signals/transports/delivery.js';
import { sendHeatSignal } from '../../../src/signals/transports/heat-signal.js';
import { createHttpClient } from '../../../src/http/client.js';
import { refusedUrl } from '../../helpers/http-test-server.js';
import { captureLog } from '../../helpers/log-capture.js';
import { deployment } from '../../helpers/deploy-fixtures.js';
import { startSignalSink, type SignalSink } from '../../helpers/signal-sink.js';

// HEAT_SIGNAL: Keystone v3 login as the deployment's user, then Heat's resource-signal API with the token.

function target(sink: SignalSink, id: string, resource: string): Extract<SignalTarget, { transport: 'HEAT_SIGNAL' }> {
  const p = parseDeployment(deployment({ id, name: resource, signal: sink.inputs('HEAT_SIGNAL', id, resource) }));
  if (!p.ok) throw new Error(p.reason);
  const choice = signalTargetFor(p.deployment);
  if (!choice.ok || choice.target.transport !== 'HEAT_SIGNAL') throw new Error('not a Heat target');
  return choice.target;
}

const ctx = (): DeliveryContext => ({
  http: createHttpClient({ defaultMaxBytes: 1 << 20, defaultRetries: 0 }),
  log: captureLog().log,
  timeoutSeconds: 2,
  now: Date.now,
});

t.test(
  'login, then POST to stacks/<name>/<id>/resources/<resource>/signal with the token; the token is reused',
  async (t) => {
    const sink = await startSignalSink();
    t.teardown(() => sink.close());
    const c = ctx();
    t.same(await sendHeatSignal(target(sink, 'h-1', 'deploy one'), '{"deploy_status_code": 0}', c), {
      outcome: 'sent',
      status: 200,
    });
    t.same(await sendHeatSignal(target(sink, 'h-2', 'two'), '{"deploy_status_code": 1}', c), {
      outcome: 'sent',
      status: 200,
    });
    t.same(
      sink.received.map((r) => [r.id, r.transport, r.body.deploy_status_code]),
      [
        ['h-1', 'HEAT_SIGNAL', 0],
        ['h-2', 'HEAT_SIGNAL', 1],
      ],
    );
    t.equal(sink.keystone.tokensIssued(), 1, 'one login for both signals of the same user');
  },
);

t.test('a token Heat no longer accepts gets one fresh login', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const c = ctx();
  await sendHeatSignal(target(sink, 'h-1', 'r1'), '{}', c);
  sink.keystone.expireAll();
  t.same(await sendHeatSignal(target(sink, 'h-2', 'r2'), '{}', c), { outcome: 'sent', status: 200 });
  t.equal(sink.keystone.tokensIssued(), 2);
});

t.test('refused credentials and unknown resources are final; Keystone down is retried', async (t) => {
  const sink = await startSignalSink();
  t.teardown(() => sink.close());
  const good = target(sink, 'h-1', 'r1');
  const badPw = await sendHeatSignal({ ...good, userId: 'someone-else' }, '{}', ctx());
  t.equal(badPw.outcome, 'final');
  t.equal(badPw.status, 401);
  const unknown = await sendHeatSignal({ ...good, resourceName: 'not-in-stack' }, '{}', ctx());
  t.equal(unknown.outcome, 'final');
  t.equal(unknown.status, 404);
  const down = await sendHeatSignal({ ...good, authUrl: `${await refusedUrl()}/v3`, userId: 'u-down' }, '{}', ctx());
  t.equal(down.outcome, 'retry');
  sink.keystone.fault = '500';
  const ks500 = await sendHeatSignal({ ...good, userId: 'not-logged-in-yet' }, '{}', ctx());
  t.equal(ks500.outcome, 'retry', 'a Keystone 5xx is retried');
  sink.keystone.fault = undefined;
  const noRegion = await sendHeatSignal({ ...good, region: 'Elsewhere' }, '{}', ctx());
  t.equal(noRegion.outcome, 'retry', 'a catalog without the endpoint is retried later');
  if (noRegion.outcome === 'retry') t.match(noRegion.error, 'no public "orchestration" endpoint in region Elsewhere');
  t.equal(sink.received.length, 0);
});
