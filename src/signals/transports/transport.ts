import type { SignalTarget } from '../../heat/signal-target.js';
import type { Delivery, DeliveryContext } from './delivery.js';

// The one interface of a signal transport, and every target the engine delivers to: a deployment's (heat/
// signal-target.ts, chosen from its inputs as heat-config-notify chooses) and a wait condition handle's (what
// `cfn-signal` queues).

/**
 * A wait condition handle, as `cfn-signal` signals it. WAIT_CONDITION_URL: PUT the body to the pre-signed URL, as
 * heat-cfntools' cfn-signal does (AWS::CloudFormation::WaitConditionHandle, or the native handle's CFN_SIGNAL and
 * TEMP_URL_SIGNAL URLs). WAIT_CONDITION_TOKEN: POST it with X-Auth-Token, as the native handle's curl_cli does.
 */
export type WaitConditionTarget =
  | { readonly transport: 'WAIT_CONDITION_URL'; readonly url: string; readonly insecure?: boolean }
  | {
      readonly transport: 'WAIT_CONDITION_TOKEN';
      readonly url: string;
      readonly token: string;
      readonly insecure?: boolean;
    };

export type DeliveryTarget = SignalTarget | WaitConditionTarget;
export type TransportName = DeliveryTarget['transport'];
export type TargetOf<N extends TransportName> = Extract<DeliveryTarget, { readonly transport: N }>;

export interface SignalTransport<T extends DeliveryTarget> {
  /**
   * One attempt (one request; a login first where the target needs one) and what came of it: `sent`, `retry` (with
   * the server's Retry-After) or `final`. Never retries: the engine owns retrying and its backoff.
   */
  send(target: T, text: string, ctx: DeliveryContext): Promise<Delivery>;
  /** Where the signal goes, as the log lines of its attempts show it: no signature, token or password. */
  where(target: T): string;
}

/** One transport for every kind of target: a target without one does not type-check. */
export type TransportTable = { readonly [N in TransportName]: SignalTransport<TargetOf<N>> };
