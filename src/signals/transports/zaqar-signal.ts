import { randomUUID } from 'node:crypto';
import { findEndpoint } from '../../keystone/keystone-client.js';
import type { SignalTarget } from '../../heat/signal-target.js';
import { redactUrl } from '../../log/redact.js';
import { sendOnce, type Delivery, type DeliveryContext } from './delivery.js';
import { keystoneSessionFor, loginFailure } from './keystone-sessions.js';
import type { SignalTransport, TargetOf } from './transport.js';

// ZAQAR_SIGNAL: log in to Keystone v3 as the deployment's user, find the public messaging endpoint, and post one
// message {"ttl": 600, "body": <signal>} to deploy_queue_id, where Heat reads it. Upstream used the v1.1 client API;
// this uses v2, which has the same message format and is the version Zaqar keeps. A 401 gets one fresh login.
// With [zaqar] use_websockets = true the same message goes over the websocket API (zaqar-ws-signal.ts).

const MESSAGE_TTL_SECONDS = 600;
// Zaqar requires a Client-ID (a UUID) on every request; one per agent process.
const CLIENT_ID = randomUUID();

export async function sendZaqarSignal(
  target: Extract<SignalTarget, { transport: 'ZAQAR_SIGNAL' }>,
  text: string,
  ctx: DeliveryContext,
): Promise<Delivery> {
  if (ctx.zaqarWebsockets)
    return (await import('./zaqar-ws-signal.js')).sendZaqarSignalOverWebsocket(target, text, ctx);
  const session = keystoneSessionFor(ctx.http, target, ctx.timeoutSeconds);
  const body = `{"messages": [{"ttl": ${MESSAGE_TTL_SECONDS}, "body": ${text}}]}`;
  let last: Delivery = { outcome: 'retry', error: 'Zaqar signal: not attempted' };
  for (let login = 0; login < 2; login++) {
    let token;
    let endpoint: string;
    try {
      token = await session.token(ctx.signal);
      endpoint = findEndpoint(token.catalog, 'messaging', target.region);
    } catch (err) {
      return loginFailure(err, 'Zaqar signal');
    }
    const url = `${endpoint}/v2/queues/${encodeURIComponent(target.queueId)}/messages`;
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json',
      'x-auth-token': token.token,
      'client-id': CLIENT_ID,
      'x-project-id': target.projectId,
    };
    last = await sendOnce(ctx, { url, method: 'POST', headers, body }, 'Zaqar signal');
    if (last.outcome !== 'final' || last.status !== 401) return last;
    session.invalidate();
  }
  return last;
}

export const zaqarSignal: SignalTransport<TargetOf<'ZAQAR_SIGNAL'>> = {
  send: sendZaqarSignal,
  where: (target) => `${redactUrl(target.authUrl)} (queue ${target.queueId})`,
};
