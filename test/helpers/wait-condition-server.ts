import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { signV2 } from './orchestrator/sigv2.js';

// Heat's two wait condition handles as an instance signals them, on one loopback port:
//   CFN     PUT <cfn endpoint>/waitcondition/<quoted arn>?SignatureMethod&SignatureVersion&AWSAccessKeyId&Timestamp
//           &Signature: heat-api-cfn's update_waitcondition behind ec2token. The v2 signature is recomputed over PUT,
//           the Host header and the unquoted path (as Heat signs it); a wrong one or a Timestamp older than
//           `ttlSeconds` gets 403. The body must be a JSON object with exactly Status, Reason, UniqueId and Data,
//           Status SUCCESS or FAILURE (400 otherwise). Heat keeps one entry per UniqueId (a repeat overwrites it).
//   native  POST /heat/v1/<project>/stacks/<stack>/<id>/resources/<handle>/signal with X-Auth-Token: the handle's
//           token (401 otherwise); body keys among status, reason, data, id; status SUCCESS or FAILURE.
// `answers` forces the status of the next signal requests; stop()/start() take the port down and bring it back.

export interface WaitConditionRequest {
  readonly kind: 'cfn' | 'native';
  readonly method: string;
  readonly status: number;
  readonly raw: string;
  readonly headers: IncomingMessage['headers'];
}

export interface WaitConditionServer {
  readonly url: string;
  readonly token: string;
  /** Every signal request, accepted or not. */
  readonly requests: WaitConditionRequest[];
  /** Accepted signals per handle: UniqueId/id -> the rest of the body, as Heat stores them. */
  readonly handles: Map<string, Map<string, Record<string, unknown>>>;
  answers: number[];
  ttlSeconds: number;
  /**
   * A pre-signed WaitConditionHandle URL for `handle`, as Heat makes it: of an AWS::CloudFormation::WaitConditionHandle,
   * or with `native` of an OS::Heat::WaitConditionHandle with signal_transport CFN_SIGNAL (its `signal` attribute),
   * which takes the native body's keys.
   */
  cfnUrl(handle: string, options?: { timestamp?: Date; secret?: string; native?: boolean }): string;
  /** The native handle's endpoint attribute for `handle`. */
  nativeUrl(handle: string): string;
  accepted(kind?: 'cfn' | 'native'): number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

const CFN_KEYS = ['Data', 'Reason', 'Status', 'UniqueId'];
const NATIVE_KEYS = ['data', 'id', 'reason', 'status'];
const STATUSES = ['SUCCESS', 'FAILURE'];

export async function startWaitConditionServer(): Promise<WaitConditionServer> {
  const secret = `wc-secret-${randomUUID()}`;
  const accessKey = `AKWC${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const token = `gAAAAAwc-token-${randomUUID()}`;
  const project = 'a1b2c3d4e5f6';
  const stack = 'demo/8c2e4f1a-0000-4000-8000-00000000beef';
  const requests: WaitConditionRequest[] = [];
  const handles = new Map<string, Map<string, Record<string, unknown>>>();
  const nativeHandles = new Set<string>();
  const state = { answers: [] as number[], ttlSeconds: 900 };
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
    req: IncomingMessage,
    kind: 'cfn' | 'native',
    raw: string,
    status: number,
    body: string,
  ): void {
    requests.push({ kind, method: req.method ?? '', status, raw, headers: req.headers });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  }

  function store(name: string, id: string, rest: Record<string, unknown>): Record<string, unknown> {
    const entries = handles.get(name) ?? new Map<string, Record<string, unknown>>();
    entries.set(id, rest);
    handles.set(name, entries);
    return Object.fromEntries(entries);
  }

  function parseObject(raw: string): Record<string, unknown> | undefined {
    try {
      const v: unknown = JSON.parse(raw);
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const u = new URL(req.url ?? '/', `http://${host}`);
    const kind = u.pathname.startsWith('/v1/waitcondition/')
      ? 'cfn'
      : u.pathname.startsWith('/heat/')
        ? 'native'
        : undefined;
    if (!kind) {
      res.writeHead(404);
      return void res.end('not found');
    }
    const forced = state.answers.shift();
    if (forced !== undefined) return send(res, req, kind, raw, forced, '{"error":"forced"}');
    if (kind === 'cfn') {
      const q = Object.fromEntries(u.searchParams);
      if (req.method !== 'PUT')
        return send(res, req, kind, raw, 404, '{"error":"no route: the waitcondition path takes PUT"}');
      if (q.SignatureVersion !== '2' || q.SignatureMethod !== 'HmacSHA256' || !q.Signature || !q.Timestamp)
        return send(res, req, kind, raw, 400, 'malformed signed URL');
      const unquoted = decodeURIComponent(u.pathname);
      const expected = signV2(secret, 'PUT', req.headers.host ?? '', unquoted, q);
      if (q.AWSAccessKeyId !== accessKey || !same(q.Signature, expected))
        return send(
          res,
          req,
          kind,
          raw,
          403,
          '{"Error":{"Code":"AccessDenied","Message":"User is not authorized to perform action"}}',
        );
      if (Date.now() - Date.parse(q.Timestamp) > state.ttlSeconds * 1000)
        return send(res, req, kind, raw, 403, '{"Error":{"Code":"AccessDenied","Message":"Credential is expired"}}');
      const body = parseObject(raw);
      const name = /resources\/([^/]+)$/.exec(unquoted)?.[1] ?? '?';
      const invalid = '{"Error":{"Code":"InvalidParameterValue","Message":"Metadata format invalid"}}';
      if (nativeHandles.has(name)) {
        if (!validNative(body)) return send(res, req, kind, raw, 400, invalid);
        return send(res, req, kind, raw, 200, JSON.stringify({ resource: name, metadata: storeNative(name, body) }));
      }
      const keys = body ? Object.keys(body).sort() : [];
      if (!body || keys.join() !== CFN_KEYS.join() || !STATUSES.includes(body.Status as string))
        return send(res, req, kind, raw, 400, invalid);
      const { UniqueId, ...rest } = body;
      const metadata = store(name, String(UniqueId), rest);
      return send(res, req, kind, raw, 200, JSON.stringify({ resource: name, metadata }));
    }
    const m = new RegExp(`^/heat/v1/${project}/stacks/${stack}/resources/([^/]+)/signal$`).exec(u.pathname);
    if (req.method !== 'POST' || !m) return send(res, req, kind, raw, 404, '{"code":404,"title":"Not Found"}');
    if (!same(String(req.headers['x-auth-token'] ?? ''), token))
      return send(res, req, kind, raw, 401, '{"error":{"code":401,"title":"Unauthorized"}}');
    const body = parseObject(raw);
    if (!validNative(body))
      return send(
        res,
        req,
        kind,
        raw,
        400,
        '{"code":400,"title":"Bad Request","explanation":"Metadata format invalid"}',
      );
    storeNative(decodeURIComponent(m[1]!), body);
    return send(res, req, kind, raw, 200, '');
  }

  function validNative(body: Record<string, unknown> | undefined): body is Record<string, unknown> {
    return (
      body !== undefined &&
      !Object.keys(body).some((k) => !NATIVE_KEYS.includes(k)) &&
      (body.status === undefined || STATUSES.includes(body.status as string))
    );
  }

  /** Heat's normalise_signal_data: missing keys get defaults, the id being the signal's number. */
  function storeNative(name: string, body: Record<string, unknown>): Record<string, unknown> {
    const count = handles.get(name)?.size ?? 0;
    const { id, ...rest } = body;
    return store(name, String(id ?? count + 1), {
      status: 'SUCCESS',
      reason: `Signal ${count + 1} received`,
      data: null,
      ...rest,
    });
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
  const stopListening = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };

  return {
    url,
    token,
    requests,
    handles,
    get answers() {
      return state.answers;
    },
    set answers(v) {
      state.answers = v;
    },
    get ttlSeconds() {
      return state.ttlSeconds;
    },
    set ttlSeconds(v) {
      state.ttlSeconds = v;
    },
    cfnUrl(name, options = {}) {
      if (options.native) nativeHandles.add(name);
      const arn = `arn:openstack:heat::${project}:stacks/${stack}/resources/${name}`;
      const quoted = `/v1/waitcondition/${encodeURIComponent(arn)}`;
      const params: Record<string, string> = {
        SignatureMethod: 'HmacSHA256',
        SignatureVersion: '2',
        AWSAccessKeyId: accessKey,
        Timestamp: (options.timestamp ?? new Date()).toISOString().slice(0, 19) + 'Z',
      };
      const signature = signV2(options.secret ?? secret, 'PUT', host, decodeURIComponent(quoted), params);
      return `${url}${quoted}?${new URLSearchParams({ ...params, Signature: signature }).toString()}`;
    },
    nativeUrl: (name) => `${url}/heat/v1/${project}/stacks/${stack}/resources/${encodeURIComponent(name)}/signal`,
    accepted: (kind) => requests.filter((r) => r.status === 200 && (kind === undefined || r.kind === kind)).length,
    stop: stopListening,
    start: listen,
    close: () => stopListening().catch(() => undefined),
  };
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
