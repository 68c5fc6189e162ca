import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import type tap from 'tap';
import type { CollectContext } from '../../src/collectors/types.js';
import { collectAll, type CollectionOutcome } from '../../src/daemon/collect-all.js';
import { loadConfig, type CliOverrides } from '../../src/config/load.js';
import { createHttpClient } from '../../src/http/client.js';
import type { HttpClient } from '../../src/http/types.js';
import type { Logger } from '../../src/log/logger.js';
import { captureLog, type CapturedLog } from './log-capture.js';

// A real node:http server on 127.0.0.1:0 for collector and client tests, with the faults every remote collector must
// survive, a request log, and the plumbing to build a CollectContext against it.

/** The `t` a tap subtest receives. */
export type TapTest = Parameters<Parameters<typeof tap.test>[0]>[0];

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

export interface TestServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Bytes of response bodies sent. */
  bytesSent(): number;
  close(): Promise<void>;
}

/** `listenHost` '::1' gives an IPv6 loopback server (URL host in brackets). */
export async function startTestServer(handler: Handler, listenHost = '127.0.0.1'): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let sent = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body });
      const write = res.write.bind(res);
      const end = res.end.bind(res);
      res.write = ((chunk: unknown, ...rest: unknown[]) => {
        if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) sent += Buffer.byteLength(chunk as string);
        return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof res.write;
      res.end = ((chunk?: unknown, ...rest: unknown[]) => {
        if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) sent += Buffer.byteLength(chunk as string);
        return (end as (...a: unknown[]) => ServerResponse)(chunk, ...rest);
      }) as typeof res.end;
      Promise.resolve(handler(req, res, body)).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(err));
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, listenHost, resolve));
  const port = (server.address() as AddressInfo).port;
  const shownHost = listenHost.includes(':') ? `[${listenHost}]` : listenHost;
  return {
    url: `http://${shownHost}:${port}`,
    host: `${shownHost}:${port}`,
    port,
    requests,
    bytesSent: () => sent,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port with nothing listening (bound, then closed). */
export async function refusedUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

export type Fault = 'refuse' | '500' | '403' | 'hang' | 'truncate' | 'non-json' | 'wrong-type' | 'oversize';
export const ALL_FAULTS: readonly Fault[] = [
  'refuse',
  '500',
  '403',
  'hang',
  'truncate',
  'non-json',
  'wrong-type',
  'oversize',
];

export interface FaultBodies {
  /** Well-formed answer of the wrong type (e.g. a JSON list where an object is due). */
  wrongType: string;
  /** Not parseable at all. */
  garbage?: string;
  contentType?: string;
}

/**
 * Answer `res` with `fault`. 'refuse' destroys the socket without an answer (connection refused is tested with
 * refusedUrl(), since a listening server cannot refuse); 'hang' never answers; 'truncate' promises more bytes than
 * it sends; 'oversize' streams more than `capBytes`.
 */
export function sendFault(
  fault: Fault,
  req: IncomingMessage,
  res: ServerResponse,
  bodies: FaultBodies,
  capBytes = 4096,
): void {
  const type = bodies.contentType ?? 'application/json';
  switch (fault) {
    case 'refuse':
      req.socket.destroy();
      return;
    case '500':
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error');
      return;
    case '403':
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end('forbidden');
      return;
    case 'hang':
      return;
    case 'truncate':
      res.writeHead(200, { 'content-type': type, 'content-length': '1000' });
      res.write('{"partial": tr');
      setTimeout(() => req.socket.destroy(), 5);
      return;
    case 'non-json':
      res.writeHead(200, { 'content-type': type });
      res.end(bodies.garbage ?? 'this is <not> json {');
      return;
    case 'wrong-type':
      res.writeHead(200, { 'content-type': type });
      res.end(bodies.wrongType);
      return;
    case 'oversize': {
      // No content-length: the cap must hold on a streamed body too.
      res.writeHead(200, { 'content-type': type });
      const chunk = Buffer.alloc(1024, 0x20);
      for (let i = 0; i <= capBytes / 1024 + 2; i++) res.write(chunk);
      res.end();
      return;
    }
  }
}

export interface TestContext {
  ctx: CollectContext;
  captured: CapturedLog;
  raw: RawLog;
  http: HttpClient;
}

export interface RawLog {
  log: Logger;
  text(): string;
}

/** A logger with no scrubbing at all: proves the collectors themselves never log a secret. */
export function rawLog(level: pino.Level = 'trace'): RawLog {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { log: pino({ level }, stream), text: () => lines.join('') };
}

/** One logger feeding two: the product's scrubbed capture (log-capture) and the raw one, line by line. */
export function teeLogger(a: Logger, b: Logger): Logger {
  const relay = (target: Logger) => ({
    write(line: string) {
      const {
        level,
        msg,
        time: _t,
        pid: _p,
        hostname: _h,
        ...fields
      } = JSON.parse(line) as Record<string, unknown> & { level: number; msg?: string };
      const label = (pino.levels.labels[level] ?? 'info') as 'info';
      target[label](fields, msg ?? '');
    },
  });
  return pino(
    { level: 'trace' },
    pino.multistream([
      { level: 'trace', stream: relay(a) },
      { level: 'trace', stream: relay(b) },
    ]),
  );
}

export interface ContextOptions {
  root: string;
  cli: CliOverrides;
  retries?: number;
  maxBytes?: number;
  memory?: object;
  signal?: AbortSignal;
  now?: () => number;
}

export async function collectorContext(name: string, options: ContextOptions): Promise<TestContext> {
  const loaded = await loadConfig({ root: options.root, configFiles: [], cli: options.cli });
  const captured = captureLog('trace');
  const raw = rawLog();
  const http = createHttpClient({
    defaultMaxBytes: options.maxBytes ?? loaded.config.agent.http_max_bytes,
    defaultRetries: options.retries ?? 0,
    retryBaseMs: 5,
  });
  const log = teeLogger(captured.log, raw.log).child({ collector: name });
  const ctx: CollectContext = {
    config: loaded.config,
    paths: loaded.paths,
    log,
    http,
    signal: options.signal ?? new AbortController().signal,
    memory: options.memory ?? {},
    now: options.now ?? Date.now,
  };
  return { ctx, captured, raw, http };
}

/**
 * One whole collection with `name` (pointed at a failing server by `cli`) listed before heat_local, whose boot data is
 * written here: what every remote collector's "a failing source does not stop the others" test needs.
 */
export async function collectBesideHeatLocal(
  name: string,
  root: string,
  cli: CliOverrides,
): Promise<{ outcome: CollectionOutcome; tc: TestContext }> {
  const file = path.join(root, 'var/lib/heat-cfntools/cfn-init-data');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ boot: 1 }));
  const loaded = await loadConfig({
    root,
    configFiles: [],
    cli: { ...cli, DEFAULT: { collectors: [name, 'heat_local'] } },
  });
  const tc = await collectorContext(name, { root, cli });
  const deps = {
    config: loaded.config,
    paths: loaded.paths,
    log: tc.ctx.log,
    http: tc.http,
    signal: new AbortController().signal,
    memory: new Map(),
    failing: new Set<string>(),
  };
  return { outcome: await collectAll(deps, undefined), tc };
}
