import { randomUUID } from 'node:crypto';
import type { AgentConfig } from '../config/options.js';
import { SourceUnavailableError } from '../errors.js';
import { findEndpoint, type KeystoneSession } from '../keystone/keystone-client.js';
import { redactUrl } from '../log/redact.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { sourceErrorFromHttp } from './source-error.js';
import { messageBody } from './zaqar-message.js';
import { errorText, openZaqarSocket, ZaqarSocketError, type ZaqarSocket } from '../http/zaqar-socket.js';
import type { CollectContext, CollectorMemory } from './types.js';

// `zaqar` with use_websockets = true, as os-collect-config does it: the endpoint is the catalog's
// `messaging-websocket` service; the agent creates the queue, subscribes to it (ttl 10000 s, upstream's value) and pops
// one message per poll with message_delete_many. Upstream opened a connection on every poll and then blocked until a
// message was pushed; here the connection and its subscription are kept between polls, so pushed messages are
// received while the agent sleeps and a poll never blocks: a poll pops, and when the queue is empty the newest pushed
// message (already consumed elsewhere or expired) stands in.
//
// A connection that fails or drops is reopened on a later poll after a capped, jittered exponential delay; until then
// the source is unavailable and its last good data is kept (the daemon logs that once per transition).

const SUBSCRIPTION_TTL_SECONDS = 10_000;
const RECONNECT_BASE_MS = 1000;
const RECONNECT_MAX_MS = 300_000;

interface Link {
  readonly fingerprint: string;
  /** The Keystone session the connection renews its token from (a new one after a reload). */
  readonly session: KeystoneSession;
  socket: ZaqarSocket;
  subscribedAt: number;
  /** Failed connections before this one; reset by a successful pop. */
  failuresBefore: number;
  /** The newest message body Zaqar pushed since the last poll. */
  pushed: JsonObject | undefined;
}

interface Reconnect {
  failures: number;
  notBefore: number;
  reason: string;
}

/** What the zaqar collector keeps across polls for the websocket API: the open connection, or when to reconnect. */
export interface ZaqarWebsocketMemory {
  wsLink: Link;
  wsReconnect: Reconnect;
  wsClientId: string;
}

/** Delay before reconnect attempt `failures + 1`: doubling from 1 s, capped at 5 min, scaled by [0.5, 1]. */
export function reconnectDelayMs(failures: number, random: number): number {
  const exp = Math.min(RECONNECT_BASE_MS * 2 ** Math.max(0, failures - 1), RECONNECT_MAX_MS);
  return Math.round(exp * (0.5 + Math.min(Math.max(random, 0), 1) / 2));
}

/** Pop one message over the websocket: its body, or undefined when the queue is empty and nothing was pushed. */
export async function popOverWebsocket(
  ctx: CollectContext<ZaqarWebsocketMemory>,
  session: KeystoneSession,
  random: () => number = Math.random,
): Promise<JsonObject | undefined> {
  const link = await liveLink(ctx, session, random);
  const queue = ctx.config.zaqar.queue_id!;
  let reply;
  try {
    if (ctx.now() - link.subscribedAt > (SUBSCRIPTION_TTL_SECONDS * 1000) / 2) {
      await subscribe(link.socket, queue);
      link.subscribedAt = ctx.now();
    }
    reply = await link.socket.request('message_delete_many', { queue_name: queue, pop: 1 });
  } catch (err) {
    throw dropLink(ctx, link, err, random);
  }
  if (reply.status !== 200) {
    throw dropLink(
      ctx,
      link,
      new SourceUnavailableError(
        'zaqar',
        `Zaqar answered ${reply.status} to message_delete_many${errorText(reply.body)}`,
        { code: 'ERR_HTTP' },
      ),
      random,
    );
  }
  const messages = isJsonObject(reply.body) ? reply.body.messages : undefined;
  if (!Array.isArray(messages))
    throw new SourceUnavailableError('zaqar', 'Zaqar answered message_delete_many without a "messages" list', {
      code: 'ERR_SOURCE_INVALID_DATA',
    });
  const pushed = link.pushed;
  link.pushed = undefined;
  link.failuresBefore = 0;
  if (messages.length === 0) return pushed;
  return messageBody(messages[0]);
}

/** Close the kept connection, if any (the collector's memory is being dropped). */
export function closeWebsocket(memory: CollectorMemory<ZaqarWebsocketMemory>): void {
  const link = memory.wsLink;
  delete memory.wsLink;
  link?.socket.close();
}

async function liveLink(
  ctx: CollectContext<ZaqarWebsocketMemory>,
  session: KeystoneSession,
  random: () => number,
): Promise<Link> {
  const cfg = ctx.config.zaqar;
  const fingerprint = linkFingerprint(cfg);
  const kept = ctx.memory.wsLink;
  if (kept?.socket.isOpen && kept.fingerprint === fingerprint && kept.session === session) return kept;
  delete ctx.memory.wsLink;
  kept?.socket.close();

  const reconnect = ctx.memory.wsReconnect;
  if (reconnect && ctx.now() < reconnect.notBefore) {
    throw new SourceUnavailableError(
      'zaqar',
      `the Zaqar websocket is down (${reconnect.reason}); the next attempt is at ${new Date(reconnect.notBefore).toISOString()}`,
    );
  }
  // The socket is set once open; the callbacks that use it only run after that.
  const link = {
    fingerprint,
    session,
    subscribedAt: 0,
    pushed: undefined,
    failuresBefore: reconnect?.failures ?? 0,
  } as Link;
  let socket: ZaqarSocket | undefined;
  try {
    const url = await connect(ctx, link);
    socket = link.socket;
    const queue = cfg.queue_id!;
    await createQueue(socket, queue);
    await subscribe(socket, queue);
    link.subscribedAt = ctx.now();
    ctx.memory.wsLink = link;
    delete ctx.memory.wsReconnect;
    ctx.log.info(
      { endpoint: redactUrl(url), queue, reconnected: reconnect !== undefined },
      'Zaqar websocket subscribed',
    );
    return link;
  } catch (err) {
    socket?.close();
    const failures = (reconnect?.failures ?? 0) + 1;
    const cause = unavailable(err);
    ctx.memory.wsReconnect = {
      failures,
      notBefore: ctx.now() + reconnectDelayMs(failures, random()),
      reason: cause.message,
    };
    throw cause;
  }
}

/** What a connection was opened with: a reload that changes any of it opens a new one. */
function linkFingerprint(cfg: AgentConfig['zaqar']): string {
  return JSON.stringify([
    cfg.auth_url,
    cfg.user_id,
    cfg.project_id,
    cfg.queue_id,
    cfg.region_name,
    cfg.ssl_certificate_validation,
    cfg.ca_file,
    cfg.timeout,
  ]);
}

/**
 * Opens the connection of `link` (the catalog's messaging-websocket endpoint, with the session's token), with the
 * callbacks that keep its pushed message and forget it when it closes; returns the endpoint's URL.
 */
async function connect(ctx: CollectContext<ZaqarWebsocketMemory>, link: Link): Promise<string> {
  const cfg = ctx.config.zaqar;
  const session = link.session;
  const clientId = (ctx.memory.wsClientId ??= randomUUID());
  const token = await session.token(ctx.signal);
  const url = findEndpoint(token.catalog, 'messaging-websocket', cfg.region_name);
  link.socket = await openZaqarSocket({
    url,
    projectId: cfg.project_id!,
    clientId,
    token: async (fresh) => {
      if (fresh) session.invalidate();
      return (await session.token(ctx.signal)).token;
    },
    timeoutMs: cfg.timeout * 1000,
    maxBytes: ctx.config.agent.max_source_bytes,
    ...(cfg.ssl_certificate_validation ? { caFile: cfg.ca_file! } : { insecure: true }),
    signal: ctx.signal,
    onNotification: (message) => {
      // Only the posted message's body matters; other notices (subscription confirmations) carry none.
      if (isJsonObject(message.body)) link.pushed = message.body;
      else
        ctx.log.debug({ messageType: message.Message_Type }, 'ignored a Zaqar notification without a JSON object body');
    },
    onClose: (reason, reported) => {
      if (reason.includes('token expired')) session.invalidate();
      if (ctx.memory.wsLink !== link) return;
      delete ctx.memory.wsLink;
      // Between polls nobody else reports the close; during one, that poll's error does.
      if (!reported && !ctx.signal.aborted)
        ctx.log.info({ reason }, 'Zaqar websocket closed; it is reopened on the next poll');
    },
  });
  return url;
}

async function createQueue(socket: ZaqarSocket, queue: string): Promise<void> {
  const created = await socket.request('queue_create', { queue_name: queue });
  if (created.status !== 201 && created.status !== 204) {
    throw new SourceUnavailableError(
      'zaqar',
      `Zaqar answered ${created.status} to queue_create for ${queue}${errorText(created.body)}`,
      { code: 'ERR_HTTP' },
    );
  }
}

async function subscribe(socket: ZaqarSocket, queue: string): Promise<void> {
  const reply = await socket.request('subscription_create', { queue_name: queue, ttl: SUBSCRIPTION_TTL_SECONDS });
  // 409: this connection is already subscribed (a renewal before the old one expired).
  if (reply.status !== 201 && reply.status !== 409) {
    throw new SourceUnavailableError(
      'zaqar',
      `Zaqar answered ${reply.status} to subscription_create for ${queue}${errorText(reply.body)}`,
      { code: 'ERR_HTTP' },
    );
  }
}

/** A kept connection failed: close it, schedule a reconnect (soon after a healthy spell), report the source unavailable. */
function dropLink(
  ctx: CollectContext<ZaqarWebsocketMemory>,
  link: Link,
  err: unknown,
  random: () => number,
): SourceUnavailableError {
  // Out of memory first: the close is reported by this poll's error, not by a second line from onClose.
  if (ctx.memory.wsLink === link) delete ctx.memory.wsLink;
  link.socket.close();
  const cause = unavailable(err);
  const failures = link.failuresBefore + 1;
  ctx.memory.wsReconnect = {
    failures,
    notBefore: ctx.now() + reconnectDelayMs(failures, random()),
    reason: cause.message,
  };
  return cause;
}

function unavailable(err: unknown): SourceUnavailableError {
  if (err instanceof SourceUnavailableError) return err;
  if (err instanceof ZaqarSocketError)
    return new SourceUnavailableError('zaqar', err.message, {
      code: err.code === 'ERR_SOURCE_INVALID_DATA' ? 'ERR_SOURCE_INVALID_DATA' : 'ERR_HTTP',
      cause: err,
    });
  const failedRequest = sourceErrorFromHttp('zaqar', err);
  if (failedRequest) return failedRequest;
  if (err instanceof Error && 'code' in err && typeof err.code === 'string' && err.code.startsWith('E')) {
    // A CA file that cannot be read, and the like.
    return new SourceUnavailableError('zaqar', `the Zaqar websocket could not be opened: ${err.message}`, {
      cause: err,
    });
  }
  throw err;
}
