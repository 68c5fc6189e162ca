import type { SignalTarget } from '../../heat/signal-target.js';
import { redactUrl } from '../../log/redact.js';
import { sendOnce, type Delivery, type DeliveryContext } from './delivery.js';
import type { SignalTransport, TargetOf } from './transport.js';

// TEMP_URL_SIGNAL: PUT the JSON body as the Swift object behind the TempURL from deploy_signal_id; Heat polls the
// object. Swift answers 201; an expired or wrong signature gets 401 (final).
export function sendTempUrlSignal(
  target: Extract<SignalTarget, { transport: 'TEMP_URL_SIGNAL' }>,
  text: string,
  ctx: DeliveryContext,
): Promise<Delivery> {
  return sendOnce(
    ctx,
    { url: target.url, method: 'PUT', headers: { 'content-type': 'application/json' }, body: text },
    'TempURL signal',
  );
}

export const tempUrlSignal: SignalTransport<TargetOf<'TEMP_URL_SIGNAL'>> = {
  send: sendTempUrlSignal,
  where: (target) => redactUrl(target.url),
};
