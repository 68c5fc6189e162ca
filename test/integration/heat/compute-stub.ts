import http from 'node:http';
import type { AddressInfo } from 'node:net';

// Bridges a second gap of a rig without Nova: while deleting a software deployment whose config acts on DELETE,
// Heat 19 asks Nova whether the deployment's server still exists (nova get_server) before it waits for the DELETE
// signal — even when that server is an OS::Heat::DeployedServer that Nova never knew. With no compute endpoint the
// deletion fails with EndpointNotFound. This loopback stub is that endpoint: every server id exists (a deployment is
// always deleted before the DeployedServer it depends on), so Heat waits for the agent's DELETE signal as it would
// on a real cloud. Anything else gets 404. heat.conf pins max_nova_api_microversion, so no version discovery is made.

export interface ComputeStub {
  /** http://127.0.0.1:PORT/v2.1 — the compute endpoint registered in Keystone. */
  readonly url: string;
  /** GET /servers/<id> requests answered so far. */
  readonly serverLookups: () => number;
  close(): Promise<void>;
}

export async function startComputeStub(): Promise<ComputeStub> {
  let lookups = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    const m = /^\/v2\.1(?:\/[0-9a-f]{32})?\/servers\/([0-9a-fA-F-]{36})$/.exec((req.url ?? '').split('?')[0]!);
    res.setHeader('x-openstack-nova-api-version', '2.1');
    res.setHeader('openstack-api-version', 'compute 2.1');
    if (req.method === 'GET' && m) {
      lookups++;
      const body = JSON.stringify({
        server: { id: m[1], name: 'deployed-server', status: 'ACTIVE', addresses: {}, links: [] },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
      res.end(body);
      return;
    }
    const body = JSON.stringify({ itemNotFound: { code: 404, message: 'not served by the compute stub' } });
    res.writeHead(404, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v2.1`,
    serverLookups: () => lookups,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
