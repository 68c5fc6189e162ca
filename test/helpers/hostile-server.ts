import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

// A loopback server that misbehaves on purpose, speaking raw TCP so it can break HTTP in ways a real HTTP server
// library will not: a body trickled a byte at a time, a connection reset mid-body, a Content-Length that lies,
// headers that never end, redirects in a loop, a body as large as asked (streamed, never held in memory), and a TLS
// port that accepts the connection and never answers the handshake. Every behaviour is bounded (byte counts, timers
// cleared on close) so a test cannot leave it running.

export type HostileBehaviour =
  /** 200 with a Content-Length of `bytes`, one byte every `everyMs`. */
  | { readonly kind: 'trickle'; readonly bytes: number; readonly everyMs: number }
  /** 200 with a Content-Length of `declared`, `sent` bytes of it, then a reset (RST). */
  | { readonly kind: 'reset-mid-body'; readonly declared: number; readonly sent: number }
  /** 200 declaring `declared` bytes, sending `sent` bytes, then closing cleanly (FIN). */
  | { readonly kind: 'wrong-length'; readonly declared: number; readonly sent: number }
  /** A status line, then header lines forever (one every `everyMs`), up to `maxLines`. */
  | { readonly kind: 'endless-headers'; readonly everyMs: number; readonly maxLines: number }
  /** 302 to itself, forever. */
  | { readonly kind: 'redirect-loop' }
  /** 200, chunked, `totalBytes` bytes in 64 KiB chunks, as fast as the client reads. */
  | { readonly kind: 'huge-body'; readonly totalBytes: number }
  /** Accepts the connection and never writes a byte (for TLS: the handshake never finishes). */
  | { readonly kind: 'silent' };

export interface HostileServer {
  readonly url: string;
  /** Connections accepted so far. */
  readonly connections: () => number;
  /** Bytes of body written so far, over all connections. */
  readonly bodyBytesSent: () => number;
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, 'z');

export async function startHostileServer(behaviour: HostileBehaviour): Promise<HostileServer> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let connections = 0;
  let bodyBytes = 0;
  let url = '';
  const every = (ms: number, tick: () => boolean): void => {
    const timer = setInterval(() => {
      if (!tick()) {
        clearInterval(timer);
        timers.delete(timer);
      }
    }, ms);
    timers.add(timer);
  };
  const server: Server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    if (behaviour.kind === 'silent') return;
    // Answer once the request head has arrived (its bytes are not needed).
    socket.once('data', () => answer(socket));
  });
  const head = (status: string, headers: Record<string, string | number>): string =>
    `HTTP/1.1 ${status}\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`;

  function answer(socket: Socket): void {
    switch (behaviour.kind) {
      case 'trickle': {
        socket.write(head('200 OK', { 'content-type': 'application/json', 'content-length': behaviour.bytes }));
        let left = behaviour.bytes;
        every(behaviour.everyMs, () => {
          if (socket.destroyed || left <= 0) return false;
          socket.write(' ');
          bodyBytes++;
          left--;
          return left > 0;
        });
        return;
      }
      case 'reset-mid-body':
        socket.write(head('200 OK', { 'content-length': behaviour.declared }));
        socket.write(Buffer.alloc(behaviour.sent, ' '), () => socket.resetAndDestroy());
        bodyBytes += behaviour.sent;
        return;
      case 'wrong-length':
        socket.write(head('200 OK', { 'content-length': behaviour.declared, connection: 'close' }));
        socket.end(Buffer.alloc(behaviour.sent, ' '));
        bodyBytes += behaviour.sent;
        return;
      case 'endless-headers': {
        socket.write('HTTP/1.1 200 OK\r\n');
        let lines = 0;
        every(behaviour.everyMs, () => {
          if (socket.destroyed || lines >= behaviour.maxLines) return false;
          socket.write(`x-more-${lines}: ${'h'.repeat(100)}\r\n`);
          lines++;
          return true;
        });
        return;
      }
      case 'redirect-loop':
        socket.end(head('302 Found', { location: `${url}/again`, 'content-length': 0, connection: 'close' }));
        return;
      case 'huge-body':
        socket.write(head('200 OK', { 'transfer-encoding': 'chunked' }));
        pump(socket, behaviour.totalBytes);
        return;
      case 'silent':
        return;
    }
  }

  /** Chunked body written while the client keeps reading; stops at the total or when the client goes away. */
  function pump(socket: Socket, total: number): void {
    let sent = 0;
    const write = (): void => {
      while (!socket.destroyed && sent < total) {
        const size = Math.min(CHUNK.length, total - sent);
        sent += size;
        bodyBytes += size;
        const ok =
          socket.write(`${size.toString(16)}\r\n`) && socket.write(CHUNK.subarray(0, size)) && socket.write('\r\n');
        if (!ok) {
          socket.once('drain', write);
          return;
        }
      }
      if (!socket.destroyed) socket.end('0\r\n\r\n');
    };
    write();
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  url = `http://127.0.0.1:${port}`;
  return {
    url,
    connections: () => connections,
    bodyBytesSent: () => bodyBytes,
    async close() {
      for (const timer of timers) clearInterval(timer);
      timers.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
