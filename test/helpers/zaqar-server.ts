import { randomUUID } from 'node:crypto';
import { sendFault, startTestServer, type Fault, type TestServer } from './http-test-server.js';
import type { KeystoneServer } from './keystone-server.js';

// Zaqar's v2 HTTP API, the part the agent uses: DELETE /v2/queues/<queue>/messages?pop=N pops (returns and deletes)
// up to N messages as {"messages": [...]}, 200 with an empty list when there are none; GET /v2/queues/<queue>/stats
// counts them. As Zaqar, it requires a Client-ID header (a UUID), X-Project-ID, and a valid Keystone token (401
// otherwise).

export interface ZaqarServer extends TestServer {
  /** The messaging endpoint as the catalog lists it. */
  readonly endpoint: string;
  /** Queue name -> pending message bodies, oldest first. */
  readonly queues: Map<string, unknown[]>;
  post(queue: string, body: unknown): void;
  fault: Fault | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function startZaqarServer(
  keystone: KeystoneServer,
  options: { capBytes?: number } = {},
): Promise<ZaqarServer> {
  const queues = new Map<string, unknown[]>();
  const state = { fault: undefined as Fault | undefined };
  const server = await startTestServer((req, res) => {
    if (state.fault)
      return sendFault(
        state.fault,
        req,
        res,
        { wrongType: JSON.stringify({ messages: [{ id: 'm', ttl: 3600, age: 1, body: ['not', 'an', 'object'] }] }) },
        options.capBytes,
      );
    const u = new URL(req.url ?? '/', 'http://x');
    if (!keystone.validate(req.headers['x-auth-token']))
      return json(res, 401, {
        title: 'Unauthorized',
        description: 'This server could not verify that you are authorized.',
      });
    if (!UUID.test(String(req.headers['client-id'] ?? '')))
      return json(res, 400, { title: 'Missing header', description: 'The Client-ID header is required.' });
    if (req.headers['x-project-id'] !== keystone.projectId)
      return json(res, 400, { title: 'Bad project', description: 'X-Project-ID does not match the token.' });
    // Queue stats (read-only; what `doctor` asks): counts of the messages waiting.
    const stats = /^\/v2\/queues\/([^/]+)\/stats$/.exec(u.pathname);
    if (stats && req.method === 'GET') {
      const waiting = (queues.get(decodeURIComponent(stats[1]!)) ?? []).length;
      return json(res, 200, { messages: { free: waiting, claimed: 0, total: waiting } });
    }
    const m = /^\/v2\/queues\/([^/]+)\/messages$/.exec(u.pathname);
    const pop = Number(u.searchParams.get('pop'));
    if (!m || req.method !== 'DELETE' || !Number.isInteger(pop) || pop < 1 || pop > 20)
      return json(res, 400, { title: 'Invalid API request' });
    const queue = queues.get(decodeURIComponent(m[1]!)) ?? [];
    const popped = queue
      .splice(0, pop)
      .map((body) => ({ id: randomUUID().replace(/-/g, ''), ttl: 3600, age: 0, body, checksum: 'MD5:x' }));
    json(res, 200, { messages: popped });
  });
  return {
    ...server,
    endpoint: server.url,
    queues,
    post(queue, body) {
      const q = queues.get(queue) ?? [];
      q.push(body);
      queues.set(queue, q);
    },
    get fault() {
      return state.fault;
    },
    set fault(v) {
      state.fault = v;
    },
  };
}

function json(res: import('node:http').ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
