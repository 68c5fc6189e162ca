import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createHttpClient } from '../../src/http/client.js';
import type { TapTest } from '../helpers/http-test-server.js';

// A server that keeps a connection open after its answer and then drops it when the next request arrives on it,
// unanswered: what a client meets when a server or proxy closes a kept-alive connection just as it is reused (tinyproxy
// closes after every answer). That request never got an answer on the old connection, so it is sent again at once on
// a new one, even with no retries configured.

async function closingServer(t: TapTest): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      const target = chunk.toString().split(' ')[1] ?? '';
      if (answered) {
        seen.push(`${target} dropped`);
        socket.destroy();
        return;
      }
      answered = true;
      seen.push(target);
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** What the server saw for names [a, b, c]: a, then each later one dropped on the old connection and answered. */
const expected = (names: string[]) => names.flatMap((n, i) => (i === 0 ? [n] : [`${n} dropped`, n]));

t.test('a kept-alive connection closed by the server is replaced, once, without a configured retry', async (t) => {
  const { url, seen } = await closingServer(t);
  const http = createHttpClient({ defaultMaxBytes: 1024, defaultRetries: 0 });
  for (let i = 0; i < 5; i++) {
    const res = await http.request({ url: `${url}/r${i}` });
    t.equal(res.body.toString(), 'ok', `request ${i}`);
  }
  t.same(
    seen,
    expected(['/r0', '/r1', '/r2', '/r3', '/r4']),
    'each dropped request was sent again on a new connection',
  );
});

t.test('a download on a kept-alive connection closed by the server is sent again at once, too', async (t) => {
  const { url, seen } = await closingServer(t);
  const dir = mkdtempSync(path.join(tmpdir(), 'stale-download-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const http = createHttpClient({ defaultMaxBytes: 1024, defaultRetries: 0 });
  for (let i = 0; i < 5; i++) {
    const file = path.join(dir, `d${i}`);
    const res = await http.download({ url: `${url}/d${i}` }, file);
    t.match(res, { statusCode: 200, bytes: 2 }, `download ${i}`);
    t.equal(readFileSync(file, 'utf8'), 'ok');
  }
  t.same(
    seen,
    expected(['/d0', '/d1', '/d2', '/d3', '/d4']),
    'each dropped download was sent again on a new connection',
  );
});
