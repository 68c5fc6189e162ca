import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { KeystoneServer } from './keystone-server.js';

// Zaqar's websocket API (zaqar/transport/websocket/protocol.py with the v2 request schema and endpoints), the part the
// agent uses, on 127.0.0.1:0. As Zaqar: a frame is a JSON object {action, headers, body}; the schema is checked first
// (unknown action, missing Client-ID / X-Project-ID, missing body fields: 400 "Schema validation failed."); until
// `authenticate` succeeds every other action is refused with 403 "Not authentified."; `authenticate` checks the token
// with Keystone (401 "Authentication failed."). Answers are {"request": {...}, "body": ..., "headers": {"status": N}}.
// A websocket subscription makes every message posted to its queue pushed to the connection as the message itself
// plus "queue_name" and "Message_Type": "Notification". Zaqar also checks Client-ID is a UUID; the project is checked
// against the token's here (Zaqar scopes by it).

export interface ZaqarFrame {
  readonly connection: number;
  readonly action: string;
  readonly headers: Record<string, unknown>;
  readonly body: unknown;
}

/**
 * A fault for the next request with the given action: drop the connection in the middle of the answer frame, never
 * answer, answer with a frame that is not JSON, or end the session as Zaqar does when the token expires.
 */
export type WsFault = 'drop-mid-answer' | 'silent' | 'not-json' | 'expire-session';

export interface ZaqarWsServer {
  /** The messaging-websocket endpoint as the catalog lists it. */
  readonly endpoint: string;
  readonly queues: Map<string, unknown[]>;
  readonly frames: ZaqarFrame[];
  /** Connections accepted so far. */
  connections(): number;
  /** Connections open now. */
  openConnections(): number;
  /** Post a message as Heat would (over HTTP): queued, and pushed to subscribers. */
  post(queue: string, body: unknown): void;
  /** Push a notification only (a message another consumer already popped, or one that expired). */
  push(queue: string, body: unknown): void;
  /** Send a raw text frame to every open connection. */
  sendRaw(text: string): void;
  fault(action: string, fault: WsFault): void;
  /** Refuse every token at authenticate, as Zaqar behind a Keystone that no longer knows them. */
  refuseTokens: boolean;
  close(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// Required headers and body fields per action, from Zaqar's v2 request schema.
const SCHEMA: Record<string, { headers: string[]; body?: string[] }> = {
  authenticate: { headers: ['X-Project-ID', 'X-Auth-Token'] },
  queue_create: { headers: ['Client-ID', 'X-Project-ID'], body: ['queue_name'] },
  subscription_create: { headers: ['Client-ID', 'X-Project-ID'], body: ['queue_name'] },
  message_delete_many: { headers: ['Client-ID', 'X-Project-ID'], body: ['queue_name'] },
  message_post: { headers: ['Client-ID', 'X-Project-ID'], body: ['queue_name', 'messages'] },
};

interface Conn {
  readonly id: number;
  readonly ws: WebSocket;
  readonly raw: Socket;
  authed: boolean;
  readonly subscribed: Set<string>;
}

export async function startZaqarWsServer(keystone: KeystoneServer): Promise<ZaqarWsServer> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const address = wss.address();
  if (typeof address === 'string' || address === null) throw new Error('the test server has no TCP address');
  const queues = new Map<string, unknown[]>();
  const frames: ZaqarFrame[] = [];
  const faults = new Map<string, WsFault>();
  const conns = new Set<Conn>();
  const created = new Set<string>();
  const state = { accepted: 0, refuseTokens: false };

  const notify = (queue: string, message: Record<string, unknown>) => {
    for (const c of conns)
      if (c.subscribed.has(queue))
        c.ws.send(JSON.stringify({ ...message, queue_name: queue, Message_Type: 'Notification' }));
  };
  const enqueue = (queue: string, body: unknown, ttl = 3600) => {
    const message = { id: randomUUID().replace(/-/g, ''), ttl, age: 0, body };
    const q = queues.get(queue) ?? [];
    q.push(message);
    queues.set(queue, q);
    return message;
  };

  wss.on('connection', (ws: WebSocket, req: IncomingMessage) => {
    const conn: Conn = { id: ++state.accepted, ws, raw: req.socket, authed: false, subscribed: new Set() };
    conns.add(conn);
    ws.on('close', () => conns.delete(conn));
    ws.on('error', () => undefined);
    ws.on('message', (data: RawData, isBinary: boolean) => handle(conn, data, isBinary));
  });

  function answer(conn: Conn, request: Record<string, unknown>, status: number, body: unknown): void {
    const fault = typeof request.action === 'string' ? faults.get(request.action) : undefined;
    if (fault) faults.delete(request.action as string);
    const frame = JSON.stringify({
      request: {
        action: request.action ?? null,
        body: request.body ?? {},
        headers: request.headers ?? null,
        api: 'v2',
      },
      body,
      headers: { status },
    });
    if (fault === 'silent') return;
    if (fault === 'not-json')
      return void conn.ws.send('{"request": {"action": "message_delete_many"}, "body": {"messages": [');
    if (fault === 'expire-session') return void conn.ws.close(4003, 'Authentication expired.');
    if (fault === 'drop-mid-answer') {
      // A text frame announcing 1000 bytes, 20 of them sent, then the connection is gone.
      conn.raw.write(
        Buffer.concat([Buffer.from([0x81, 126, 0x03, 0xe8]), Buffer.from(frame.padEnd(1000).slice(0, 20))]),
      );
      conn.raw.destroy();
      return;
    }
    conn.ws.send(frame);
  }

  function handle(conn: Conn, data: RawData, isBinary: boolean): void {
    let payload: unknown;
    try {
      if (isBinary) throw new Error('binary');
      payload = JSON.parse(String(data));
    } catch {
      return answer(conn, {}, 400, { error: "Can't decode text (JSON) request." });
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
      return answer(conn, {}, 400, { error: 'Unexpected body type. Expected dict or dict like.' });
    const request = payload as Record<string, unknown>;
    const action = String(request.action);
    const headers = (typeof request.headers === 'object' && request.headers !== null ? request.headers : {}) as Record<
      string,
      unknown
    >;
    const body = (
      typeof request.body === 'object' && request.body !== null && !Array.isArray(request.body)
        ? request.body
        : undefined
    ) as Record<string, unknown> | undefined;
    frames.push({ connection: conn.id, action, headers, body: request.body });
    const schema = SCHEMA[action];
    if (!schema) return answer(conn, request, 400, { error: `Invalid action: ${action}` });
    const schemaOk =
      schema.headers.every((h) => typeof headers[h] === 'string') &&
      (!schema.body || (body !== undefined && schema.body.every((f) => body[f] !== undefined)));
    if (!schemaOk) return answer(conn, request, 400, { error: 'Schema validation failed.' });
    if (headers['X-Project-ID'] !== keystone.projectId)
      return answer(conn, request, 400, { error: 'X-Project-ID does not match the token.' });
    if (action === 'authenticate') {
      conn.authed = !state.refuseTokens && keystone.validate(headers['X-Auth-Token'] as string);
      return conn.authed
        ? answer(conn, request, 200, { message: 'Authentified.' })
        : answer(conn, request, 401, { error: 'Authentication failed.' });
    }
    if (!conn.authed) return answer(conn, request, 403, { error: 'Not authentified.' });
    if (!UUID.test(String(headers['Client-ID'])))
      return answer(conn, request, 400, { exception: 'Malformed Client-ID', error: null });
    const queue = String(body!.queue_name);
    switch (action) {
      case 'queue_create': {
        const isNew = !created.has(queue);
        created.add(queue);
        return answer(conn, request, isNew ? 201 : 204, `Queue ${queue} created.`);
      }
      case 'subscription_create': {
        if (body!.ttl !== undefined && !Number.isInteger(body!.ttl))
          return answer(conn, request, 400, { error: 'Schema validation failed.' });
        if (conn.subscribed.has(queue)) return answer(conn, request, 409, `Subscription ${queue} not created.`);
        conn.subscribed.add(queue);
        return answer(conn, request, 201, {
          subscription_id: randomUUID().replace(/-/g, ''),
          message: `Subscription ${queue} created.`,
        });
      }
      case 'message_delete_many': {
        const pop = body!.pop;
        if (!Number.isInteger(pop) || (pop as number) < 1 || (pop as number) > 20)
          return answer(conn, request, 400, { exception: 'Invalid pop limit', error: null });
        // A dropped or unanswered pop loses nothing: the fault strikes before the queue is touched.
        if (faults.has(action)) return answer(conn, request, 200, { messages: [] });
        const q = queues.get(queue) ?? [];
        return answer(conn, request, 200, { messages: q.splice(0, pop as number) });
      }
      case 'message_post': {
        const messages = body!.messages;
        const valid =
          Array.isArray(messages) &&
          messages.length > 0 &&
          messages.every(
            (m) => typeof m === 'object' && m !== null && Number.isInteger((m as { ttl?: unknown }).ttl) && 'body' in m,
          );
        if (!valid) return answer(conn, request, 400, { exception: 'Invalid messages', error: null });
        if (faults.has(action)) return answer(conn, request, 201, { message_ids: [] });
        const ids = (messages as Array<{ ttl: number; body: unknown }>).map((m) => {
          const stored = enqueue(queue, m.body, m.ttl);
          notify(queue, { ttl: m.ttl, body: m.body });
          return stored.id;
        });
        return answer(conn, request, 201, { message_ids: ids });
      }
    }
  }

  return {
    endpoint: `ws://127.0.0.1:${address.port}`,
    queues,
    frames,
    connections: () => state.accepted,
    openConnections: () => conns.size,
    post(queue, body) {
      enqueue(queue, body);
      notify(queue, { ttl: 3600, body });
    },
    push(queue, body) {
      notify(queue, { ttl: 3600, body });
    },
    sendRaw(text) {
      for (const c of conns) c.ws.send(text);
    },
    fault(action, fault) {
      faults.set(action, fault);
    },
    get refuseTokens() {
      return state.refuseTokens;
    },
    set refuseTokens(v) {
      state.refuseTokens = v;
    },
    close() {
      for (const c of conns) c.ws.terminate();
      return new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
