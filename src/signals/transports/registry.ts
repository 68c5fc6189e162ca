import { cfnSignal } from './cfn-signal.js';
import type { Delivery, DeliveryContext } from './delivery.js';
import { heatSignal } from './heat-signal.js';
import { tempUrlSignal } from './temp-url-signal.js';
import type { DeliveryTarget, SignalTransport, TargetOf, TransportTable } from './transport.js';
import { waitConditionTokenSignal, waitConditionUrlSignal } from './wait-condition-signal.js';
import { zaqarSignal } from './zaqar-signal.js';

// Every transport, by the name its targets carry. The table's type has a key for each kind of target, so a new one
// that is not listed here does not compile.

const noSignal: SignalTransport<TargetOf<'NO_SIGNAL'>> = {
  // The deployment asked for no signal: nothing to send, settled as sent.
  send: () => Promise.resolve({ outcome: 'sent', status: 0 }),
  where: () => 'nowhere',
};

const TRANSPORTS: TransportTable = {
  CFN_SIGNAL: cfnSignal,
  TEMP_URL_SIGNAL: tempUrlSignal,
  HEAT_SIGNAL: heatSignal,
  ZAQAR_SIGNAL: zaqarSignal,
  NO_SIGNAL: noSignal,
  WAIT_CONDITION_URL: waitConditionUrlSignal,
  WAIT_CONDITION_TOKEN: waitConditionTokenSignal,
};

/** The transport of `target`'s kind. (The table pairs each name with its target type; TypeScript cannot follow the
 * pairing through an indexed access, hence the one cast.) */
function transportOf<T extends DeliveryTarget>(target: T): SignalTransport<T> {
  return TRANSPORTS[target.transport] as unknown as SignalTransport<T>;
}

/** One attempt to deliver `text` to `target`, through the transport its kind names. */
export function deliver(target: DeliveryTarget, text: string, ctx: DeliveryContext): Promise<Delivery> {
  return transportOf(target).send(target, text, ctx);
}

/** Where a signal to `target` goes, for logs and status: redacted. */
export function describeTarget(target: DeliveryTarget): string {
  return transportOf(target).where(target);
}
