import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { signV2 } from './sigv2.js';
import { tempUrl, tempUrlSignature } from './tempurl.js';

// A simulated Heat deployment on one loopback port, for whole-cycle tests: heat-api-cfn DescribeStackResource
// (signature checked), pre-signed CFN signal URLs (signature checked), Swift TempURL GET/PUT (signature and expiry
// checked), Keystone v3 password auth with a catalog, the Heat resource metadata and signal APIs (token checked), and
// an EC2 metadata tree. It holds server metadata shaped like Heat's, records every signal, can change the
// metadata while the agent runs, and can inject faults per route.

export type PollTransport = 'POLL_SERVER_CFN' | 'POLL_SERVER_HEAT' | 'POLL_TEMP_URL';
export type SignalTransport = 'CFN_SIGNAL' | 'TEMP_URL_SIGNAL' | 'HEAT_SIGNAL' | 'NO_SIGNAL';
export type Route = 'cfn' | 'cfn-signal' | 'swift' | 'keystone' | 'heat' | 'heat-signal' | 'ec2';
export type Fault = 'refuse' | '500' | 'hang' | 'truncate' | 'garbage';

export interface DeploymentSpec {
  name: string;
  group: string;
  config: unknown;
  inputs?: Array<{ name: string; type?: string; value: unknown }>;
  outputs?: Array<{ name: string; error_output?: boolean }>;
  options?: Record<string, unknown>;
  action?: 'CREATE' | 'UPDATE' | 'DELETE' | 'SUSPEND' | 'RESUME';
  signal?: SignalTransport;
  /** Keep this id (an UPDATE in Heat gets a new id; tests pass one to model a re-send). */
  id?: string;
}

export interface ReceivedSignal {
  deploymentId: string;
  name: string;
  transport: SignalTransport;
  body: Record<string, unknown>;
  at: number;
}

export interface Credentials {
  cfnAccessKey: string;
  cfnSecret: string;
  signalAccessKey: string;
  signalSecret: string;
  swiftKey: string;
  userId: string;
  password: string;
  projectId: string;
}

export interface Orchestrator {
  readonly url: string;
  readonly host: string;
  readonly creds: Credentials;
  readonly stackName: string;
  readonly stackId: string;
  readonly signals: ReceivedSignal[];
  /** Requests per route, and bytes served per route. */
  readonly requests: Record<string, number>;
  readonly bytesServed: Record<string, number>;
  readonly tokensIssued: () => number;
  /** The `os-collect-config` section Heat writes for this transport (what cfn-init-data holds at boot). */
  agentSection(): Record<string, unknown>;
  /** The whole server metadata document. */
  metadata(): Record<string, unknown>;
  addDeployment(spec: DeploymentSpec): string;
  removeDeployment(id: string): void;
  deploymentIds(): string[];
  fault(route: Route, fault: Fault | undefined): void;
  expireTokens(): void;
  close(): Promise<void>;
}

export interface OrchestratorOptions {
  transport: PollTransport;
  stackName?: string;
  ec2Tree?: Record<string, unknown>;
}

const SERVER_RESOURCE = 'server';

export async function startOrchestrator(options: OrchestratorOptions): Promise<Orchestrator> {
  const creds: Credentials = {
    cfnAccessKey: 'AKCFN' + randomUUID().replace(/-/g, '').slice(0, 12),
    cfnSecret: 'cfn-secret-' + randomUUID(),
    signalAccessKey: 'AKSIG' + randomUUID().replace(/-/g, '').slice(0, 12),
    signalSecret: 'signal-secret-' + randomUUID(),
    swiftKey: 'swift-key-' + randomUUID(),
    userId: 'user-' + randomUUID().slice(0, 8),
    password: 'pw-' + randomUUID(),
    projectId: 'proj' + randomUUID().replace(/-/g, '').slice(0, 12),
  };
  const stackName = options.stackName ?? 'e2e-stack';
  const stackId = randomUUID();
  const deployments = new Map<string, Record<string, unknown> & { _signal: SignalTransport }>();
  const signals: ReceivedSignal[] = [];
  const requests: Record<string, number> = {};
  const bytesServed: Record<string, number> = {};
  const faults = new Map<Route, Fault>();
  const tokens = new Map<string, number>();
  let issued = 0;
  const sockets = new Set<Socket>();
  let swiftObject: { body: string; etag: string; modified: number } | undefined;
  const metadataObjectPath = `/swift/v1/AUTH_${creds.projectId}/heat/${stackId}-metadata`;
  const signalObjectPrefix = `/swift/v1/AUTH_${creds.projectId}/heat/signal-`;

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const host = `127.0.0.1:${port}`;
  const url = `http://${host}`;

  function metadata(): Record<string, unknown> {
    return {
      'os-collect-config': agentSection(),
      deployments: [...deployments.values()].map(({ _signal: _s, ...d }) => d),
    };
  }

  let metadataUrlExpires: number | undefined;
  function agentSection(): Record<string, unknown> {
    const section: Record<string, unknown> = {};
    if (options.transport === 'POLL_SERVER_CFN') {
      section.collectors = ['cfn', 'local'];
      section.cfn = {
        metadata_url: `${url}/v1/`,
        access_key_id: creds.cfnAccessKey,
        secret_access_key: creds.cfnSecret,
        stack_name: stackName,
        path: `${SERVER_RESOURCE}.Metadata`,
      };
    } else if (options.transport === 'POLL_SERVER_HEAT') {
      section.collectors = ['heat', 'local'];
      section.heat = {
        auth_url: `${url}/identity/v3`,
        user_id: creds.userId,
        password: creds.password,
        project_id: creds.projectId,
        stack_id: `${stackName}/${stackId}`,
        resource_name: SERVER_RESOURCE,
        region_name: null,
      };
    } else {
      section.collectors = ['request', 'local'];
      // One expiry for the orchestrator's life: a URL made anew each call would change the metadata (and so its ETag)
      // every second, and a conditional GET that straddles a second would see a new document.
      metadataUrlExpires ??= Math.floor(Date.now() / 1000) + 86400;
      section.request = { metadata_url: tempUrl(url, creds.swiftKey, 'GET', metadataObjectPath, metadataUrlExpires) };
    }
    return section;
  }

  function publishSwift(): void {
    const body = JSON.stringify(metadata());
    if (swiftObject?.body === body) return;
    swiftObject = {
      body,
      etag: `"${randomUUID()}"`,
      modified: Math.max(Date.now(), (swiftObject?.modified ?? 0) + 1000),
    };
  }

  function signalInputs(id: string, transport: SignalTransport): Array<{ name: string; type: string; value: unknown }> {
    const inputs: Array<{ name: string; type: string; value: unknown }> = [
      { name: 'deploy_signal_transport', type: 'String', value: transport },
    ];
    if (transport === 'CFN_SIGNAL') {
      const path = `/v1/signal/${id}`;
      const params: Record<string, string> = {
        SignatureMethod: 'HmacSHA256',
        SignatureVersion: '2',
        AWSAccessKeyId: creds.signalAccessKey,
        Timestamp: new Date().toISOString().slice(0, 19) + 'Z',
      };
      const sig = signV2(creds.signalSecret, 'POST', host, path, params);
      const query = new URLSearchParams({ ...params, Signature: sig }).toString();
      inputs.push(
        { name: 'deploy_signal_id', type: 'String', value: `${url}${path}?${query}` },
        { name: 'deploy_signal_verb', type: 'String', value: 'POST' },
      );
    } else if (transport === 'TEMP_URL_SIGNAL') {
      inputs.push(
        {
          name: 'deploy_signal_id',
          type: 'String',
          value: tempUrl(
            url,
            creds.swiftKey,
            'PUT',
            `${signalObjectPrefix}${id}`,
            Math.floor(Date.now() / 1000) + 86400,
          ),
        },
        { name: 'deploy_signal_verb', type: 'String', value: 'PUT' },
      );
    } else if (transport === 'HEAT_SIGNAL') {
      inputs.push(
        { name: 'deploy_auth_url', type: 'String', value: `${url}/identity/v3` },
        { name: 'deploy_user_id', type: 'String', value: creds.userId },
        { name: 'deploy_password', type: 'String', value: creds.password },
        { name: 'deploy_project_id', type: 'String', value: creds.projectId },
      );
    }
    return inputs;
  }

  function addDeployment(spec: DeploymentSpec): string {
    const id = spec.id ?? randomUUID();
    const transport = spec.signal ?? 'CFN_SIGNAL';
    const inputs = [
      ...(spec.inputs ?? []).map((i) => ({ type: 'String', description: '', ...i })),
      { name: 'deploy_server_id', type: 'String', value: 'server-uuid' },
      { name: 'deploy_action', type: 'String', value: spec.action ?? 'CREATE' },
      { name: 'deploy_stack_id', type: 'String', value: `${stackName}/${stackId}` },
      { name: 'deploy_resource_name', type: 'String', value: spec.name },
      ...signalInputs(id, transport),
    ];
    deployments.set(id, {
      id,
      name: spec.name,
      group: spec.group,
      creation_time: new Date().toISOString().slice(0, 19) + 'Z',
      config: spec.config,
      options: spec.options ?? {},
      inputs,
      outputs: spec.outputs ?? [],
      _signal: transport,
    });
    publishSwift();
    return id;
  }

  function record(id: string, transport: SignalTransport, raw: string): void {
    const dep = deployments.get(id);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      body = { unparseable: raw };
    }
    signals.push({ deploymentId: id, name: String(dep?.name ?? '?'), transport, body, at: Date.now() });
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  function send(
    res: ServerResponse,
    route: Route,
    status: number,
    body: string,
    headers: Record<string, string> = {},
  ): void {
    bytesServed[route] = (bytesServed[route] ?? 0) + Buffer.byteLength(body);
    res.writeHead(status, { 'content-length': String(Buffer.byteLength(body)), ...headers });
    res.end(body);
  }

  /** Applies an injected fault; returns true when the request was consumed by it. */
  function applyFault(route: Route, req: IncomingMessage, res: ServerResponse): boolean {
    const fault = faults.get(route);
    if (!fault) return false;
    if (fault === 'refuse') req.socket.destroy();
    else if (fault === '500') send(res, route, 500, 'injected failure');
    else if (fault === 'hang') {
      // Never answer; the socket is destroyed at close().
    } else if (fault === 'truncate') {
      res.writeHead(200, { 'content-length': '1000', 'content-type': 'application/json' });
      res.write('{"partial": tr');
      setTimeout(() => req.socket.destroy(), 10);
    } else send(res, route, 200, 'this is not json <xml', { 'content-type': 'application/json' });
    return true;
  }

  function tokenOk(req: IncomingMessage): boolean {
    const token = req.headers['x-auth-token'];
    if (typeof token !== 'string') return false;
    const exp = tokens.get(token);
    return exp !== undefined && exp > Date.now();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', url);
    const path = u.pathname;
    const q = Object.fromEntries(u.searchParams);
    const route: Route = path.startsWith('/v1/signal/')
      ? 'cfn-signal'
      : path.startsWith('/v1/')
        ? 'cfn'
        : path.startsWith('/swift/')
          ? 'swift'
          : path.startsWith('/identity/')
            ? 'keystone'
            : path.startsWith('/heat/') && path.endsWith('/signal')
              ? 'heat-signal'
              : path.startsWith('/heat/')
                ? 'heat'
                : 'ec2';
    requests[route] = (requests[route] ?? 0) + 1;
    if (applyFault(route, req, res)) return;

    if (route === 'cfn') {
      if (q.Action !== 'DescribeStackResource') return send(res, route, 400, 'bad action');
      const expected = signV2(creds.cfnSecret, req.method ?? 'GET', req.headers.host ?? '', path, q);
      if (q.AWSAccessKeyId !== creds.cfnAccessKey || !sameText(q.Signature ?? '', expected))
        return send(res, route, 403, '<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>');
      if (q.StackName !== stackName || q.LogicalResourceId !== SERVER_RESOURCE)
        return send(res, route, 400, 'no such resource');
      // With ContentType=JSON (heat-cfntools' and the agent's cfn commands) heat-api-cfn answers JSON.
      if (q.ContentType === 'JSON') {
        const detail = { StackId: stackId, Metadata: metadata(), LogicalResourceId: SERVER_RESOURCE };
        const json = JSON.stringify({
          DescribeStackResourceResponse: { DescribeStackResourceResult: { StackResourceDetail: detail } },
        });
        return send(res, route, 200, json, { 'content-type': 'application/json' });
      }
      const xml = `<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail><StackId>${stackId}</StackId><Metadata>${escapeXml(JSON.stringify(metadata()))}</Metadata><LogicalResourceId>${SERVER_RESOURCE}</LogicalResourceId></StackResourceDetail></DescribeStackResourceResult></DescribeStackResourceResponse>`;
      return send(res, route, 200, xml, { 'content-type': 'application/xml' });
    }
    if (route === 'cfn-signal') {
      const id = path.slice('/v1/signal/'.length);
      const expected = signV2(creds.signalSecret, req.method ?? 'POST', req.headers.host ?? '', path, q);
      if (req.method !== 'POST' || q.AWSAccessKeyId !== creds.signalAccessKey || !sameText(q.Signature ?? '', expected))
        return send(res, route, 403, 'signature mismatch');
      if (!deployments.has(id)) return send(res, route, 404, 'no such deployment');
      record(id, 'CFN_SIGNAL', await readBody(req));
      return send(res, route, 200, '');
    }
    if (route === 'swift') {
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      const expires = Number(q.temp_url_expires);
      const sig = q.temp_url_sig ?? '';
      if (
        !Number.isFinite(expires) ||
        expires < Date.now() / 1000 ||
        !sameText(sig, tempUrlSignature(creds.swiftKey, method, expires, path))
      ) {
        return send(res, route, 401, 'temp url invalid');
      }
      if (method === 'GET' && path === metadataObjectPath) {
        publishSwift();
        const obj = swiftObject!;
        const modified = new Date(obj.modified).toUTCString();
        if (
          req.headers['if-none-match'] === obj.etag ||
          (req.headers['if-modified-since'] &&
            Date.parse(req.headers['if-modified-since']) >= Math.floor(obj.modified / 1000) * 1000)
        ) {
          res.writeHead(304, { etag: obj.etag, 'last-modified': modified });
          return void res.end();
        }
        return send(res, route, 200, req.method === 'HEAD' ? '' : obj.body, {
          etag: obj.etag,
          'last-modified': modified,
          'content-type': 'application/json',
        });
      }
      if (method === 'PUT' && path.startsWith(signalObjectPrefix)) {
        record(path.slice(signalObjectPrefix.length), 'TEMP_URL_SIGNAL', await readBody(req));
        return send(res, route, 201, '');
      }
      return send(res, route, 404, 'no such object');
    }
    if (route === 'keystone') {
      if (req.method === 'POST' && path === '/identity/v3/auth/tokens') {
        const body = JSON.parse((await readBody(req)) || '{}') as {
          auth?: {
            identity?: { password?: { user?: { id?: string; password?: string } } };
            scope?: { project?: { id?: string } };
          };
        };
        const user = body.auth?.identity?.password?.user;
        if (
          user?.id !== creds.userId ||
          user?.password !== creds.password ||
          body.auth?.scope?.project?.id !== creds.projectId
        )
          return send(res, route, 401, '{"error":{"code":401}}');
        const token = `tok-${randomUUID()}`;
        issued++;
        const expires = Date.now() + 3600_000;
        tokens.set(token, expires);
        const catalog = [
          {
            type: 'orchestration',
            endpoints: [
              {
                interface: 'public',
                region: 'RegionOne',
                region_id: 'RegionOne',
                url: `${url}/heat/v1/${creds.projectId}`,
              },
            ],
          },
          {
            type: 'messaging',
            endpoints: [{ interface: 'public', region: 'RegionOne', region_id: 'RegionOne', url: `${url}/zaqar` }],
          },
        ];
        return send(
          res,
          route,
          201,
          JSON.stringify({ token: { expires_at: new Date(expires).toISOString(), catalog } }),
          { 'x-subject-token': token, 'content-type': 'application/json' },
        );
      }
      return send(res, route, 200, JSON.stringify({ version: { id: 'v3.14', status: 'stable' } }), {
        'content-type': 'application/json',
      });
    }
    if (route === 'heat' || route === 'heat-signal') {
      if (!tokenOk(req)) return send(res, route, 401, '{"error":"unauthorized"}');
      const prefix = `/heat/v1/${creds.projectId}/stacks/${stackName}/${stackId}/resources/`;
      if (!path.startsWith(prefix)) return send(res, route, 404, 'no such stack');
      const rest = path.slice(prefix.length).split('/');
      if (route === 'heat' && rest[0] === SERVER_RESOURCE && rest[1] === 'metadata') {
        return send(res, route, 200, JSON.stringify({ metadata: metadata() }), { 'content-type': 'application/json' });
      }
      if (route === 'heat-signal' && req.method === 'POST') {
        const dep = [...deployments.values()].find((d) => d.name === decodeURIComponent(rest[0] ?? ''));
        if (!dep) return send(res, route, 404, 'no such resource');
        record(String(dep.id), 'HEAT_SIGNAL', await readBody(req));
        return send(res, route, 200, '');
      }
      return send(res, route, 404, 'not found');
    }
    // EC2 metadata tree with IMDSv2.
    if (req.method === 'PUT' && path === '/latest/api/token')
      return send(res, route, 200, 'imds-token-' + randomUUID());
    const tree = options.ec2Tree ?? {
      'ami-id': 'ami-00000001',
      hostname: 'e2e-server',
      placement: { 'availability-zone': 'nova' },
    };
    const parts = path
      .replace(/^\/latest\/meta-data\/?/, '')
      .split('/')
      .filter(Boolean);
    let node: unknown = tree;
    for (const p of parts) node = node && typeof node === 'object' ? (node as Record<string, unknown>)[p] : undefined;
    if (node === undefined) return send(res, route, 404, 'not found');
    if (typeof node === 'object' && node !== null) {
      return send(
        res,
        route,
        200,
        Object.entries(node as Record<string, unknown>)
          .map(([k, v]) => (typeof v === 'object' ? `${k}/` : k))
          .join('\n'),
      );
    }
    return send(res, route, 200, String(node));
  }

  return {
    url,
    host,
    creds,
    stackName,
    stackId,
    signals,
    requests,
    bytesServed,
    tokensIssued: () => issued,
    agentSection,
    metadata,
    addDeployment,
    removeDeployment(id) {
      deployments.delete(id);
      publishSwift();
    },
    deploymentIds: () => [...deployments.keys()],
    fault(route, fault) {
      if (fault) faults.set(route, fault);
      else faults.delete(route);
    },
    expireTokens() {
      for (const k of tokens.keys()) tokens.set(k, 0);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
