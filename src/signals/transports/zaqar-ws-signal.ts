import { randomUUID } from 'node:crypto';
import { findEndpoint } from '../../keystone/keystone-client.js';
import { errorText, openZaqarSocket, ZaqarSocketError, type ZaqarSocket } from '../../http/zaqar-socket.js';
import { classifySignalStatus } from '../engine/backoff.js';
import type { SignalTarget } from '../../heat/signal-target.js';
import type { Delivery, DeliveryContext } from './delivery.js';
import { keystoneSessionFor, loginFailure } from './keystone-sessions.js';

// ZAQAR_SIGNAL over Zaqar's websocket API ([zaqar] use_websockets = true). heat-config-notify only posts over HTTP;
// this is the same message {"ttl": 600, "body": <signal>} sent the way os-collect-config's websocket collector talks
// to Zaqar: the catalog's public `messaging-websocket` endpoint, `authenticate` with the deployment user's token, then
// `message_post` {"queue_name", "messages"}; Zaqar answers 201. One connection per attempt (signals are rare), closed
// after the answer. A refused token gets one fresh login (inside the socket); every other failure is judged as an
// HTTP status would be, so the outbox retries it or settles it.

const MESSAGE_TTL_SECONDS = 600;
const CLIENT_ID = randomUUID();
// The signal body is at most ~1 MB (signal-body.ts); its answer is small.
const MAX_FRAME_BYTES = 2 * 1024 * 1024;

export async function sendZaqarSignalOverWebsocket(
  target: Extract<SignalTarget, { transport: 'ZAQAR_SIGNAL' }>,
  text: string,
  ctx: DeliveryContext,
): Promise<Delivery> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { outcome: 'final', error: 'Zaqar signal: the stored signal body is not JSON' };
  }
  const session = keystoneSessionFor(ctx.http, target, ctx.timeoutSeconds);
  let url: string;
  try {
    url = findEndpoint((await session.token(ctx.signal)).catalog, 'messaging-websocket', target.region);
  } catch (err) {
    return loginFailure(err, 'Zaqar signal');
  }
  let socket: ZaqarSocket | undefined;
  try {
    socket = await openZaqarSocket({
      url,
      projectId: target.projectId,
      clientId: CLIENT_ID,
      token: async (fresh) => {
        if (fresh) session.invalidate();
        return (await session.token(ctx.signal)).token;
      },
      timeoutMs: ctx.timeoutSeconds * 1000,
      maxBytes: MAX_FRAME_BYTES,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    const reply = await socket.request('message_post', {
      queue_name: target.queueId,
      messages: [{ ttl: MESSAGE_TTL_SECONDS, body }],
    });
    const kind = classifySignalStatus(reply.status);
    if (kind === 'sent') return { outcome: 'sent', status: reply.status };
    const error = `Zaqar signal: Zaqar answered ${reply.status} to message_post${errorText(reply.body)}`;
    return kind === 'final'
      ? { outcome: 'final', status: reply.status, error }
      : { outcome: 'retry', status: reply.status, error };
  } catch (err) {
    // A token refused even after a fresh login is judged as that status over HTTP (401: final); a failed login too.
    if (err instanceof ZaqarSocketError && err.failure === 'refused' && err.status !== undefined) {
      const error = `Zaqar signal: ${err.message}`;
      return classifySignalStatus(err.status) === 'final'
        ? { outcome: 'final', status: err.status, error }
        : { outcome: 'retry', status: err.status, error };
    }
    return loginFailure(err, 'Zaqar signal');
  } finally {
    socket?.close();
  }
}
