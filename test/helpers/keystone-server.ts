import { randomUUID } from 'node:crypto';
import { sendFault, startTestServer, type Fault, type TestServer } from './http-test-server.js';

// Keystone v3 password authentication as the instance meets it: POST <auth_url>/auth/tokens with a project-scoped
// password identity; 201 with X-Subject-Token and a token body (expires_at, catalog). Tokens are remembered with
// their expiry so the services next to it (heat-server, zaqar-server) can check them, and a test can expire them
// server-side to force a re-authentication. Version discovery as Keystone serves it: GET on the unversioned root
// (`/identity`) answers 300 with `versions.values` and, as Keystone does, a Location header naming the v3 URL (which
// the agent's HTTP client follows); GET on `/identity/v3` answers 200 with one `version`.

export interface CatalogService {
  type: string;
  endpoints: Array<{ interface: string; region?: string; region_id?: string; url: string }>;
}

export interface KeystoneServer extends TestServer {
  /** The versioned auth_url (`.../identity/v3/`). */
  readonly authUrl: string;
  /** The unversioned auth_url (`.../identity`), for version discovery. */
  readonly rootUrl: string;
  /** Body of the root's version document (default: v3.14 stable and v2.0 deprecated, as Keystone lists them). */
  versionsDocument: unknown;
  /** Status of the root's answer (Keystone: 300). */
  versionsStatus: number;
  /** GET requests answered with a version document. */
  discoveries(): number;
  readonly userId: string;
  readonly password: string;
  readonly projectId: string;
  catalog: CatalogService[];
  /** Lifetime written into expires_at, in ms. */
  lifetimeMs: number;
  fault: Fault | undefined;
  tokensIssued(): number;
  /** Whether a token is known and unexpired (for the services that sit next to Keystone). */
  validate(token: string | string[] | undefined): boolean;
  /** Expire every issued token now (Keystone-side), without telling the client. */
  expireAll(): void;
}

export async function startKeystoneServer(
  options: { userId?: string; password?: string; projectId?: string } = {},
): Promise<KeystoneServer> {
  const userId = options.userId ?? `user-${randomUUID().slice(0, 8)}`;
  const password = options.password ?? `pw-${randomUUID()}`;
  const projectId = options.projectId ?? `proj${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const tokens = new Map<string, number>();
  const state = {
    catalog: [] as CatalogService[],
    lifetimeMs: 3600_000,
    fault: undefined as Fault | undefined,
    issued: 0,
    versions: undefined as unknown,
    versionsStatus: 300,
    discoveries: 0,
  };
  let base = '';
  const v3 = (): Record<string, unknown> => ({
    id: 'v3.14',
    status: 'stable',
    updated: '2020-04-07T00:00:00Z',
    links: [{ rel: 'self', href: `${base}/identity/v3/` }],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.identity-v3+json' }],
  });
  const v2 = () => ({
    id: 'v2.0',
    status: 'deprecated',
    updated: '2016-08-04T00:00:00Z',
    links: [{ rel: 'self', href: `${base}/identity/v2.0/` }],
  });

  const server = await startTestServer((req, res, body) => {
    if (state.fault) return sendFault(state.fault, req, res, { wrongType: '[]' });
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && (path === '/identity' || path === '/identity/')) {
      state.discoveries++;
      const location =
        state.versions === undefined && state.versionsStatus === 300 ? { location: `${base}/identity/v3/` } : {};
      res.writeHead(state.versionsStatus, { 'content-type': 'application/json', ...location });
      return void res.end(
        typeof state.versions === 'string'
          ? state.versions
          : JSON.stringify(state.versions ?? { versions: { values: [v3(), v2()] } }),
      );
    }
    if (req.method === 'GET' && (path === '/identity/v3' || path === '/identity/v3/')) {
      state.discoveries++;
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ version: v3() }));
    }
    if (req.method !== 'POST' || path !== '/identity/v3/auth/tokens') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end('{"error":{"code":404,"message":"not found"}}');
    }
    let auth: {
      auth?: {
        identity?: { methods?: string[]; password?: { user?: { id?: string; password?: string } } };
        scope?: { project?: { id?: string } };
      };
    };
    try {
      auth = JSON.parse(body) as typeof auth;
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      return void res.end('{"error":{"code":400,"message":"malformed body"}}');
    }
    const user = auth.auth?.identity?.password?.user;
    const ok =
      auth.auth?.identity?.methods?.includes('password') === true &&
      user?.id === userId &&
      user?.password === password &&
      auth.auth?.scope?.project?.id === projectId;
    if (!ok) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(
        '{"error":{"code":401,"title":"Unauthorized","message":"The request you have made requires authentication."}}',
      );
    }
    const token = `gAAAAA${randomUUID().replace(/-/g, '')}`;
    const expires = Date.now() + state.lifetimeMs;
    tokens.set(token, expires);
    state.issued++;
    res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': token });
    res.end(
      JSON.stringify({
        token: {
          methods: ['password'],
          user: { id: userId, domain: { id: 'default' } },
          project: { id: projectId },
          expires_at: new Date(expires).toISOString(),
          issued_at: new Date().toISOString(),
          catalog: state.catalog.map((s) => ({ ...s, id: randomUUID() })),
        },
      }),
    );
  });
  base = server.url;
  return {
    ...server,
    authUrl: `${server.url}/identity/v3/`,
    rootUrl: `${server.url}/identity`,
    get versionsDocument() {
      return state.versions;
    },
    set versionsDocument(v) {
      state.versions = v;
    },
    get versionsStatus() {
      return state.versionsStatus;
    },
    set versionsStatus(v) {
      state.versionsStatus = v;
    },
    discoveries: () => state.discoveries,
    userId,
    password,
    projectId,
    get catalog() {
      return state.catalog;
    },
    set catalog(v) {
      state.catalog = v;
    },
    get lifetimeMs() {
      return state.lifetimeMs;
    },
    set lifetimeMs(v) {
      state.lifetimeMs = v;
    },
    get fault() {
      return state.fault;
    },
    set fault(v) {
      state.fault = v;
    },
    tokensIssued: () => state.issued,
    validate(token) {
      if (typeof token !== 'string') return false;
      const exp = tokens.get(token);
      return exp !== undefined && exp > Date.now();
    },
    expireAll() {
      for (const k of tokens.keys()) tokens.set(k, 0);
    },
  };
}
