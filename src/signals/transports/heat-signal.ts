import { findEndpoint } from '../../keystone/keystone-client.js';
import type { SignalTarget } from '../../heat/signal-target.js';
import { redactUrl } from '../../log/redact.js';
import { sendOnce, type Delivery, type DeliveryContext } from './delivery.js';
import { keystoneSessionFor, loginFailure } from './keystone-sessions.js';
import type { SignalTransport, TargetOf } from './transport.js';

// HEAT_SIGNAL: log in to Keystone v3 as the deployment's user, find the public orchestration endpoint (in
// deploy_region_name when given), and POST the body to the resource-signal API of the deployment resource:
// <endpoint>/stacks/<stack_name>/<stack_id>/resources/<resource_name>/signal. A 401 from Heat (token revoked) gets
// one fresh login.
export async function sendHeatSignal(
  target: Extract<SignalTarget, { transport: 'HEAT_SIGNAL' }>,
  text: string,
  ctx: DeliveryContext,
): Promise<Delivery> {
  const session = keystoneSessionFor(ctx.http, target, ctx.timeoutSeconds);
  const stack = target.stackId.split('/').map(encodeURIComponent).join('/');
  let last: Delivery = { outcome: 'retry', error: 'Heat signal: not attempted' };
  for (let login = 0; login < 2; login++) {
    let token;
    let endpoint: string;
    try {
      token = await session.token(ctx.signal);
      endpoint = findEndpoint(token.catalog, 'orchestration', target.region);
    } catch (err) {
      return loginFailure(err, 'Heat signal');
    }
    const url = `${endpoint}/stacks/${stack}/resources/${encodeURIComponent(target.resourceName)}/signal`;
    last = await sendOnce(
      ctx,
      {
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'x-auth-token': token.token },
        body: text,
      },
      'Heat signal',
    );
    if (last.outcome !== 'final' || last.status !== 401) return last;
    session.invalidate();
  }
  return last;
}

export const heatSignal: SignalTransport<TargetOf<'HEAT_SIGNAL'>> = {
  send: sendHeatSignal,
  where: (target) => `${redactUrl(target.authUrl)} (stack ${target.stackId}, resource ${target.resourceName})`,
};
