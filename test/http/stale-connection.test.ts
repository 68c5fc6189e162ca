import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';

// A server that answers HTTP/1.1 without `Connection: close` and then closes (as tinyproxy does): the client's
// kept-alive connection is gone when the next request reuses it. That request is sent again at once on a new
// connection, even with no retries configured, because it never reached the server.

t.test('a kept-alive connection closed by the server is replaced, once, without a configured retry', async (t) => {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('data', (chunk: Buffer) => {
      seen.push(chunk.toString().split(' ')[1] ?? '');
      socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const http = createHttpClient({ defaultMaxBytes: 1024, defaultRetries: 0 });
  for (let i = 0; i < 5; i++) {
    const res = await http.request({ url: `${url}/r${i}` });
    t.equal(res.body.toString(), 'ok', `request ${i}`);
  }
  t.same(seen, ['/r0', '/r1', '/r2', '/r3', '/r4'], 'each request reached the server exactly once');
});
