import type { SignalTarget } from '../../heat/signal-target.js';
import { redactUrl } from '../../log/redact.js';
import { sendOnce, type Delivery, type DeliveryContext } from './delivery.js';
import type { SignalTransport, TargetOf } from './transport.js';

// CFN_SIGNAL: POST the JSON body to the pre-signed heat-api-cfn URL from deploy_signal_id. The URL carries its own
// EC2-style signature and a timestamp Keystone refuses after [credential] auth_ttl (403: final, never retried).
export function sendCfnSignal(
  target: Extract<SignalTarget, { transport: 'CFN_SIGNAL' }>,
  text: string,
  ctx: DeliveryContext,
): Promise<Delivery> {
  return sendOnce(
    ctx,
    { url: target.url, method: 'POST', headers: { 'content-type': 'application/json' }, body: text },
    'CFN signal',
  );
}

export const cfnSignal: SignalTransport<TargetOf<'CFN_SIGNAL'>> = {
  send: sendCfnSignal,
  where: (target) => redactUrl(target.url),
};
