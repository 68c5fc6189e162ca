import { parsePythonJson } from '../../src/util/python-json-parse.js';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { startKeystoneServer, type KeystoneServer } from './keystone-server.js';
import { signV2 } from './orchestrator/sigv2.js';
import { tempUrl, tempUrlSignature } from './orchestrator/tempurl.js';

// Where deployments signal to in tests: one loopback port that checks each request as the real service would and
// records what it accepted.
//   CFN_SIGNAL      POST /v1/signal/<id>?...&Signature=...  signature v2 (HMAC-SHA256) checked, Timestamp older than
//                   `cfnTtlSeconds` refused with 403 "Credential is expired" (Keystone's [credential] auth_ttl)
//   TEMP_URL_SIGNAL PUT /v1/AUTH_demo/signals/<id>?temp_url_sig&temp_url_expires  (401 when wrong or expired)
//   HEAT_SIGNAL     POST /heat/v1/<project>/stacks/<name>/<id>/resources/<resource>/signal with a Keystone token
//   ZAQAR_SIGNAL    POST /zaqar/v2/queues/<queue>/messages with token, Client-ID and X-Project-ID
// Keystone (a separate server) lists the heat and zaqar endpoints in its catalog. `answers` forces the status of the
// next signal requests (a forced 429 carries Retry-After: 30); stop()/start() take the port down and bring it back.

export type SinkTransport = 'CFN_SIGNAL' | 'TEMP_URL_SIGNAL' | 'HEAT_SIGNAL' | 'ZAQAR_SIGNAL';

export interface SinkSignal {
  id: string;
  transport: SinkTransport;
  body: Record<string, unknown>;
  raw: string;
  headers: IncomingMessage['headers'];
}

export interface SinkInput {
  name: string;
  type: string;
  value: string;
}

export interface SignalSink {
  readonly url: string;
  readonly keystone: KeystoneServer;
  /** Accepted signals, in arrival order. */
  readonly received: SinkSignal[];
  /** Every signal request, accepted or not: [transport, status]. */
  readonly attempts: Array<{ transport: SinkTransport; status: number }>;
  /** Statuses to answer the next signal requests with, before any checks (e.g. [503, 503]). */
  answers: number[];
  cfnTtlSeconds: number;
  /** The deploy_* signal inputs Heat would give a deployment with this id and resource name. */
  inputs(
    transport: SinkTransport,
    id: string,
    resourceName: string,
    options?: { cfnTimestamp?: Date; tempUrlExpires?: number },
  ): SinkInput[];
  countFor(id: string): number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function startSignalSink(): Promise<SignalSink> {
  const keystone = await startKeystoneServer();
  const secret = `cfn-signal-secret-${randomUUID()}`;
  const accessKey = `AKSIG${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const swiftKey = `swift-key-${randomUUID()}`;
  const stackName = 'demo';
  const stackId = '8c2e4f1a-0000-4000-8000-000000000001';
  const resources = new Map<string, string>();
  const received: SinkSignal[] = [];
  const attempts: SignalSink['attempts'] = [];
  const state = { answers: [] as number[], cfnTtlSeconds: 900 };
  const sockets = new Set<Socket>();
  let port = 0;
  let host = '';

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  function send(
    res: ServerResponse,
    transport: SinkTransport,
    status: number,
    body = '',
    headers: Record<string, string> = {},
  ): void {
    attempts.push({ transport, status });
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body);
  }

  function accept(
    res: ServerResponse,
    id: string,
    transport: SinkTransport,
    raw: string,
    headers: IncomingMessage['headers'],
    body: unknown,
    status: number,
  ): void {
    received.push({ id, transport, body: body as Record<string, unknown>, raw, headers });
    send(
      res,
      transport,
      status,
      status === 201 && transport === 'ZAQAR_SIGNAL'
        ? JSON.stringify({ resources: [`/v2/queues/x/messages/${randomUUID()}`] })
        : '',
    );
  }

  /** Heat reads a signal body with Python's json: NaN, Infinity and exact numbers are valid. */
  function parse(raw: string): unknown {
    try {
      return parsePythonJson(raw);
    } catch {
      return undefined;
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const u = new URL(req.url ?? '/', `http://${host}`);
    const p = u.pathname;
    const q = Object.fromEntries(u.searchParams);
    const transport: SinkTransport | undefined = p.startsWith('/v1/signal/')
      ? 'CFN_SIGNAL'
      : p.startsWith('/v1/AUTH_demo/signals/')
        ? 'TEMP_URL_SIGNAL'
        : p.startsWith('/heat/')
          ? 'HEAT_SIGNAL'
          : p.startsWith('/zaqar/')
            ? 'ZAQAR_SIGNAL'
            : undefined;
    if (!transport) {
      res.writeHead(404);
      return void res.end('not found');
    }
    const forced = state.answers.shift();
    if (forced !== undefined)
      return send(
        res,
        transport,
        forced,
        forced === 429 ? '{"error":"slow down"}' : '{"error":"forced"}',
        forced === 429 ? { 'retry-after': '30' } : {},
      );

    if (transport === 'CFN_SIGNAL') {
      const id = decodeURIComponent(p.slice('/v1/signal/'.length));
      const required = ['SignatureMethod', 'SignatureVersion', 'AWSAccessKeyId', 'Timestamp', 'Signature'];
      if (
        req.method !== 'POST' ||
        required.some((k) => !q[k]) ||
        q.SignatureVersion !== '2' ||
        q.SignatureMethod !== 'HmacSHA256'
      )
        return send(res, transport, 400, 'malformed signal URL');
      const expected = signV2(secret, 'POST', req.headers.host ?? '', p, q);
      if (q.AWSAccessKeyId !== accessKey || !same(q.Signature ?? '', expected))
        return send(res, transport, 403, '{"error":"Signature mismatch"}');
      if (Date.now() - Date.parse(q.Timestamp ?? '') > state.cfnTtlSeconds * 1000)
        return send(res, transport, 403, '{"error":"Credential is expired"}');
      const body = parse(raw);
      if (req.headers['content-type'] !== 'application/json' || body === undefined)
        return send(res, transport, 400, 'body is not JSON');
      return accept(res, id, transport, raw, req.headers, body, 200);
    }
    if (transport === 'TEMP_URL_SIGNAL') {
      const expires = Number(q.temp_url_expires);
      if (
        req.method !== 'PUT' ||
        !Number.isInteger(expires) ||
        expires < Date.now() / 1000 ||
        !same(q.temp_url_sig ?? '', tempUrlSignature(swiftKey, 'PUT', expires, p))
      ) {
        return send(res, transport, 401, '<html><h1>Unauthorized</h1></html>');
      }
      const body = parse(raw);
      if (body === undefined) return send(res, transport, 400, 'body is not JSON');
      return accept(
        res,
        decodeURIComponent(p.slice('/v1/AUTH_demo/signals/'.length)),
        transport,
        raw,
        req.headers,
        body,
        201,
      );
    }
    if (!keystone.validate(req.headers['x-auth-token']))
      return send(res, transport, 401, '{"error":{"code":401,"title":"Unauthorized"}}');
    if (transport === 'HEAT_SIGNAL') {
      const prefix = `/heat/v1/${keystone.projectId}/stacks/${stackName}/${stackId}/resources/`;
      const m = p.startsWith(prefix) ? /^([^/]+)\/signal$/.exec(p.slice(prefix.length)) : null;
      if (req.method !== 'POST' || !m) return send(res, transport, 404, '{"code":404,"title":"Not Found"}');
      const id = resources.get(decodeURIComponent(m[1]!));
      const body = parse(raw);
      if (id === undefined)
        return send(res, transport, 404, '{"code":404,"title":"Not Found","explanation":"resource not found"}');
      if (body === undefined) return send(res, transport, 400, 'body is not JSON');
      return accept(res, id, transport, raw, req.headers, body, 200);
    }
    const m = /^\/zaqar\/v2\/queues\/([^/]+)\/messages$/.exec(p);
    if (req.method !== 'POST' || !m) return send(res, transport, 404, '{"title":"Not found"}');
    if (!UUID.test(String(req.headers['client-id'] ?? '')))
      return send(res, transport, 400, '{"title":"Missing header","description":"The Client-ID header is required."}');
    if (req.headers['x-project-id'] !== keystone.projectId) return send(res, transport, 400, '{"title":"Bad project"}');
    const doc = parse(raw) as { messages?: Array<{ ttl?: unknown; body?: unknown }> } | undefined;
    const message = doc?.messages?.[0];
    if (
      !message ||
      doc?.messages?.length !== 1 ||
      typeof message.ttl !== 'number' ||
      message.ttl < 60 ||
      message.body === undefined
    )
      return send(res, transport, 400, '{"title":"Invalid API request"}');
    const queue = decodeURIComponent(m[1]!);
    return accept(res, queue.replace(/^queue-/, ''), transport, raw, req.headers, message.body, 201);
  }

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen();
  port = (server.address() as { port: number }).port;
  host = `127.0.0.1:${port}`;
  const url = `http://${host}`;
  keystone.catalog = [
    {
      type: 'orchestration',
      endpoints: [
        {
          interface: 'public',
          region: 'RegionOne',
          region_id: 'RegionOne',
          url: `${url}/heat/v1/${keystone.projectId}`,
        },
      ],
    },
    {
      type: 'messaging',
      endpoints: [{ interface: 'public', region: 'RegionOne', region_id: 'RegionOne', url: `${url}/zaqar/` }],
    },
  ];

  const stopListening = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };

  return {
    url,
    keystone,
    received,
    attempts,
    get answers() {
      return state.answers;
    },
    set answers(v) {
      state.answers = v;
    },
    get cfnTtlSeconds() {
      return state.cfnTtlSeconds;
    },
    set cfnTtlSeconds(v) {
      state.cfnTtlSeconds = v;
    },
    inputs(transport, id, resourceName, options = {}) {
      const input = (name: string, value: string): SinkInput => ({ name, type: 'String', value });
      const out = [input('deploy_signal_transport', transport)];
      if (transport === 'CFN_SIGNAL') {
        const p = `/v1/signal/${encodeURIComponent(id)}`;
        const ts = (options.cfnTimestamp ?? new Date()).toISOString().slice(0, 19) + 'Z';
        const params: Record<string, string> = {
          SignatureMethod: 'HmacSHA256',
          SignatureVersion: '2',
          AWSAccessKeyId: accessKey,
          Timestamp: ts,
        };
        const query = new URLSearchParams({ ...params, Signature: signV2(secret, 'POST', host, p, params) }).toString();
        out.push(input('deploy_signal_id', `${url}${p}?${query}`), input('deploy_signal_verb', 'POST'));
      } else if (transport === 'TEMP_URL_SIGNAL') {
        const expires = options.tempUrlExpires ?? Math.floor(Date.now() / 1000) + 86400;
        out.push(
          input(
            'deploy_signal_id',
            tempUrl(url, swiftKey, 'PUT', `/v1/AUTH_demo/signals/${encodeURIComponent(id)}`, expires),
          ),
          input('deploy_signal_verb', 'PUT'),
        );
      } else {
        resources.set(resourceName, id);
        out.push(
          input('deploy_auth_url', keystone.authUrl),
          input('deploy_username', `${resourceName}-user`),
          input('deploy_user_id', keystone.userId),
          input('deploy_password', keystone.password),
          input('deploy_project_id', keystone.projectId),
          input('deploy_region_name', 'RegionOne'),
        );
        if (transport === 'ZAQAR_SIGNAL') out.push(input('deploy_queue_id', `queue-${id}`));
      }
      return out;
    },
    countFor: (id) => received.filter((r) => r.id === id).length,
    stop: stopListening,
    start: listen,
    async close() {
      await stopListening().catch(() => undefined);
      await keystone.close();
    },
  };
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
