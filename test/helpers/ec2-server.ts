import { randomUUID } from 'node:crypto';
import { sendFault, startTestServer, type Fault, type TestServer } from './http-test-server.js';

// An EC2-style metadata service fed a nested object: a directory lists its entries one per line ("name/" for
// subdirectories), a leaf answers its text. public-keys lists "0=name" as the real service does, with 0/openssh-key
// below it. IMDSv2: PUT /latest/api/token with a TTL header issues a session token; with `requireToken` every GET
// without a valid X-aws-ec2-metadata-token gets 401 (AWS "required" mode), otherwise tokens are optional. With
// `imdsv2: false` the PUT is answered 404, as OpenStack's nova metadata API does.

export type Ec2Tree = { [key: string]: string | Ec2Tree };

export interface Ec2Server extends TestServer {
  /** The metadata_url to configure: <url>/latest/meta-data */
  readonly metadataUrl: string;
  tree: Ec2Tree;
  fault: Fault | undefined;
  /** Faults only for paths matching this (e.g. one leaf). */
  faultPath: RegExp | undefined;
  tokensIssued(): number;
}

export const REALISTIC_TREE: Ec2Tree = {
  'ami-id': 'ami-00000002',
  'ami-launch-index': '0',
  'ami-manifest-path': '(unknown)',
  'block-device-mapping': { ami: 'vda', root: '/dev/vda' },
  hostname: 'server-1.novalocal',
  'instance-action': 'none',
  'instance-id': 'i-0000000a',
  'instance-type': 'm1.small',
  'local-hostname': 'server-1.novalocal',
  'local-ipv4': '10.0.0.5',
  placement: { 'availability-zone': 'nova' },
  'public-hostname': 'server-1.novalocal',
  'public-ipv4': '172.24.4.10',
  'public-keys': { '0=heat_key': { 'openssh-key': 'ssh-rsa AAAAB3NzaC1yc2E test@example' } },
  'reservation-id': 'r-3i0z5b2c',
  'security-groups': 'default',
};

export async function startEc2Server(
  options: { tree?: Ec2Tree; imdsv2?: boolean; requireToken?: boolean; capBytes?: number; listenHost?: string } = {},
): Promise<Ec2Server> {
  const tokens = new Set<string>();
  const state = {
    tree: options.tree ?? REALISTIC_TREE,
    fault: undefined as Fault | undefined,
    faultPath: undefined as RegExp | undefined,
  };
  const server = await startTestServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (state.fault && (!state.faultPath || state.faultPath.test(path))) {
      return sendFault(
        state.fault,
        req,
        res,
        { wrongType: 'ami-id\n../escape\n', contentType: 'text/plain' },
        options.capBytes,
      );
    }
    if (path === '/latest/api/token') {
      if (req.method !== 'PUT' || options.imdsv2 === false) {
        res.writeHead(options.imdsv2 === false ? 404 : 405);
        return void res.end('not supported');
      }
      if (!req.headers['x-aws-ec2-metadata-token-ttl-seconds']) {
        res.writeHead(400);
        return void res.end('missing ttl');
      }
      const token = `AQAEA${randomUUID().replace(/-/g, '')}==`;
      tokens.add(token);
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end(token);
    }
    if (req.method !== 'GET') {
      res.writeHead(405);
      return void res.end();
    }
    const given = req.headers['x-aws-ec2-metadata-token'];
    if (given !== undefined && !tokens.has(String(given))) {
      res.writeHead(401);
      return void res.end('invalid token');
    }
    if (options.requireToken && given === undefined) {
      res.writeHead(401);
      return void res.end('token required');
    }
    if (!path.startsWith('/latest/meta-data/') && path !== '/latest/meta-data') {
      res.writeHead(404);
      return void res.end('Not Found');
    }
    const parts = path.slice('/latest/meta-data'.length).split('/').filter(Boolean).map(decodeURIComponent);
    let node: string | Ec2Tree = state.tree;
    for (const p of parts) {
      if (typeof node === 'string') return notFound(res);
      // "0" reaches the entry listed as "0=heat_key".
      const key: string | undefined = Object.keys(node).find((k) => k === p || k.split('=')[0] === p);
      if (key === undefined) return notFound(res);
      node = node[key]!;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    if (typeof node === 'string') return void res.end(node);
    // Listings end with a newline after the last entry only sometimes; end this one without it.
    res.end(
      Object.entries(node)
        .map(([k, v]) => (typeof v === 'string' || k.includes('=') ? k : `${k}/`))
        .join('\n'),
    );
  }, options.listenHost);
  return {
    ...server,
    metadataUrl: `${server.url}/latest/meta-data`,
    get tree() {
      return state.tree;
    },
    set tree(v) {
      state.tree = v;
    },
    get fault() {
      return state.fault;
    },
    set fault(v) {
      state.fault = v;
    },
    get faultPath() {
      return state.faultPath;
    },
    set faultPath(v) {
      state.faultPath = v;
    },
    tokensIssued: () => tokens.size,
  };
}

function notFound(res: import('node:http').ServerResponse): void {
  res.writeHead(404);
  res.end('Not Found');
}
