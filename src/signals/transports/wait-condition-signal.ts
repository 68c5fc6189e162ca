import { redactUrl } from '../../log/redact.js';
import { sendOnce } from './delivery.js';
import type { SignalTransport, TargetOf } from './transport.js';

// The signals `cfn-signal` queues, to a wait condition handle. WAIT_CONDITION_URL: PUT to the pre-signed URL, as
// heat-cfntools' cfn-signal does; the URL carries its signature (Heat answers 403 once it expired: final).
// WAIT_CONDITION_TOKEN: POST with the handle's token in X-Auth-Token, as Heat's wc_notify (curl_cli) does; a refused
// token is a 401 (final). With `insecure` (cfn-signal -k) the server's certificate is not verified.

export const waitConditionUrlSignal: SignalTransport<TargetOf<'WAIT_CONDITION_URL'>> = {
  send: (target, text, ctx) =>
    sendOnce(
      ctx,
      {
        url: target.url,
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: text,
        ...(target.insecure ? { insecure: true } : {}),
      },
      'CFN wait condition signal',
    ),
  where: (target) => redactUrl(target.url),
};

export const waitConditionTokenSignal: SignalTransport<TargetOf<'WAIT_CONDITION_TOKEN'>> = {
  send: (target, text, ctx) =>
    sendOnce(
      ctx,
      {
        url: target.url,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'x-auth-token': target.token },
        body: text,
        ...(target.insecure ? { insecure: true } : {}),
      },
      'wait condition signal',
    ),
  where: (target) => redactUrl(target.url),
};
