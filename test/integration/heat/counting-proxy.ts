import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

// A loopback reverse proxy in front of the real Keystone that records each request's method and path: the proof
// that an agent did (or did not) discover the version or log in. The Host header is passed through, so Keystone's
// version document links back to the proxy and the agent's login goes through it too.

export interface CountingProxy {
  /** http://127.0.0.1:PORT (unversioned) */
  readonly url: string;
  /** "METHOD /path" of every request, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

export async function startCountingProxy(targetPort: number): Promise<CountingProxy> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    requests.push(`${req.method ?? 'GET'} ${(req.url ?? '/').split('?')[0]}`);
    const upstream = http.request(
      { host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers, timeout: 60_000 },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('timeout', () => upstream.destroy(new Error('Keystone did not answer within 60 s')));
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
