import { createHash, timingSafeEqual } from 'node:crypto';
import { tempUrl, tempUrlSignature } from './orchestrator/tempurl.js';
import { sendFault, startTestServer, type Fault, type TestServer } from './http-test-server.js';

// A Swift object behind a TempURL, as Heat's POLL_TEMP_URL transport publishes the server metadata: the server
// checks temp_url_sig (hex HMAC-SHA1 over "METHOD\nexpires\npath" with the account key; HEAD is signed as GET) and
// temp_url_expires (401 once past), and serves ETag and Last-Modified with conditional GET support (304).

export interface SwiftServer extends TestServer {
  readonly key: string;
  readonly objectPath: string;
  /** A signed GET URL for the object, valid for `ttlSeconds`. */
  signedUrl(ttlSeconds?: number, path?: string): string;
  /** Replace the object; unchanged text keeps its ETag and Last-Modified. */
  put(body: string): void;
  fault: Fault | undefined;
  /** Counts by answer: 200, 304, 401, ... */
  readonly answers: Record<number, number>;
}

export async function startSwiftServer(options: { key?: string; capBytes?: number } = {}): Promise<SwiftServer> {
  const key = options.key ?? 'swift-account-key-0123';
  const objectPath = '/v1/AUTH_demo/heat-metadata/server-metadata';
  const answers: Record<number, number> = {};
  const state = {
    fault: undefined as Fault | undefined,
    object: undefined as { body: string; etag: string; modified: number } | undefined,
  };
  const answer = (status: number) => (answers[status] = (answers[status] ?? 0) + 1);

  const server = await startTestServer((req, res) => {
    if (state.fault) return sendFault(state.fault, req, res, { wrongType: '["a", "list"]' }, options.capBytes);
    const u = new URL(req.url ?? '/', 'http://x');
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const expires = Number(u.searchParams.get('temp_url_expires'));
    const sig = u.searchParams.get('temp_url_sig') ?? '';
    const expected = tempUrlSignature(key, method, expires, u.pathname);
    if (!Number.isInteger(expires) || expires < Date.now() / 1000 || !same(sig, expected)) {
      answer(401);
      res.writeHead(401, { 'content-type': 'text/html' });
      return void res.end(
        '<html><h1>Unauthorized</h1><p>This server could not verify that you are authorized to access the document you requested.</p></html>',
      );
    }
    const obj = state.object;
    if (u.pathname !== objectPath || !obj || method !== 'GET') {
      answer(404);
      res.writeHead(404);
      return void res.end('Not Found');
    }
    const lastModified = new Date(obj.modified).toUTCString();
    const inm = req.headers['if-none-match'];
    const ims = req.headers['if-modified-since'];
    // As Swift: If-None-Match decides when present; otherwise If-Modified-Since at one-second resolution.
    const notModified =
      inm !== undefined
        ? inm === obj.etag
        : ims !== undefined && Date.parse(ims) >= Math.floor(obj.modified / 1000) * 1000;
    if (notModified) {
      answer(304);
      res.writeHead(304, { etag: obj.etag, 'last-modified': lastModified });
      return void res.end();
    }
    answer(200);
    res.writeHead(200, {
      etag: obj.etag,
      'last-modified': lastModified,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(obj.body)),
    });
    res.end(req.method === 'HEAD' ? undefined : obj.body);
  });

  return {
    ...server,
    key,
    objectPath,
    answers,
    signedUrl(ttlSeconds = 3600, path = objectPath) {
      return tempUrl(server.url, key, 'GET', path, Math.floor(Date.now() / 1000) + ttlSeconds);
    },
    put(body: string) {
      if (state.object?.body === body) return;
      // Swift's ETag is the MD5 of the content; Last-Modified moves forward at least a second.
      const etag = `"${createHash('md5').update(body).digest('hex')}"`;
      state.object = { body, etag, modified: Math.max(Date.now(), (state.object?.modified ?? 0) + 1000) };
    },
    get fault() {
      return state.fault;
    },
    set fault(v) {
      state.fault = v;
    },
  };
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
