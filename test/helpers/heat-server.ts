import { randomUUID } from 'node:crypto';
import { sendFault, startTestServer, type Fault, type TestServer } from './http-test-server.js';
import type { KeystoneServer } from './keystone-server.js';

// The Heat native API's resource metadata call as the instance meets it:
// GET <endpoint>/stacks/<name>/<id>/resources/<resource>/metadata with X-Auth-Token -> {"metadata": {...}}.
// Tokens are checked against the Keystone server beside it (401 when unknown or expired). As Heat does, a stack
// named by name or id alone is redirected (302) to its canonical name/id URL.

export interface HeatServer extends TestServer {
  /** The orchestration endpoint as the catalog lists it: <url>/v1/<project_id>. */
  readonly endpoint: string;
  readonly stackName: string;
  readonly stackId: string;
  /** Resource name -> metadata document. */
  readonly resources: Map<string, unknown>;
  fault: Fault | undefined;
  /** Authorised metadata requests served. */
  served(): number;
}

export async function startHeatServer(
  keystone: KeystoneServer,
  options: { stackName?: string; capBytes?: number } = {},
): Promise<HeatServer> {
  const stackName = options.stackName ?? 'demo-heat';
  const stackId = randomUUID();
  const resources = new Map<string, unknown>();
  const state = { fault: undefined as Fault | undefined, served: 0 };
  const prefix = `/v1/${keystone.projectId}/stacks/`;

  const server = await startTestServer((req, res) => {
    if (state.fault)
      return sendFault(
        state.fault,
        req,
        res,
        { wrongType: JSON.stringify({ metadata: ['not', 'an', 'object'] }) },
        options.capBytes,
      );
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (!keystone.validate(req.headers['x-auth-token'])) {
      res.writeHead(401, {
        'content-type': 'application/json',
        'www-authenticate': `Keystone uri="${keystone.authUrl}"`,
      });
      return void res.end('{"error":{"code":401,"title":"Unauthorized"}}');
    }
    if (req.method !== 'GET' || !path.startsWith(prefix)) return notFound(res);
    const parts = path.slice(prefix.length).split('/').map(decodeURIComponent);
    // /stacks/<name-or-id>/resources/... -> 302 /stacks/<name>/<id>/resources/...
    if (parts[1] === 'resources' && (parts[0] === stackName || parts[0] === stackId)) {
      res.writeHead(302, {
        location: `${prefix}${stackName}/${stackId}/${parts.slice(1).map(encodeURIComponent).join('/')}`,
      });
      return void res.end();
    }
    const [name, id, r, resource, m] = parts;
    if (name !== stackName || id !== stackId || r !== 'resources' || m !== 'metadata' || parts.length !== 5)
      return notFound(res);
    if (!resources.has(resource ?? '')) return notFound(res);
    state.served++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ metadata: resources.get(resource ?? '') }));
  });
  return {
    ...server,
    endpoint: `${server.url}/v1/${keystone.projectId}`,
    stackName,
    stackId,
    resources,
    get fault() {
      return state.fault;
    },
    set fault(v) {
      state.fault = v;
    },
    served: () => state.served,
  };
}

function notFound(res: import('node:http').ServerResponse): void {
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end('{"explanation":"The resource could not be found.","code":404,"title":"Not Found"}');
}
