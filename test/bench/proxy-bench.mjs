// Benchmark (issue 23, not a test): what a poll costs through an HTTP proxy compared with going direct. One poll of
// the `request` collector in steady state is one conditional GET answered 304; a changed document is a full GET.
// N polls of each kind are sent by the agent's own HTTP client (src/http/client.ts, bundled here with esbuild) to a
// loopback Swift-like server, directly and through Debian's tinyproxy on loopback, in alternating rounds. Reported:
// wall time and the agent's CPU time per poll (process.cpuUsage: the proxy's own CPU is not the instance agent's),
// and their ratios (target: a cycle through the proxy costs <= 10 % more than direct). Cases:
//   cycle304:       polls as the daemon makes them, `polling_interval` (30 s) apart: servers have closed the idle
//                   connection by then (Swift's and Node's keep-alive timeouts are seconds), so every poll opens
//                   one, direct or through the proxy. Modelled by an origin that closes after each answer (asked
//                   to by a header, which the proxies pass on).
//   burst304/200:   requests back to back on kept-alive connections (an ec2 tree walk, a Keystone login then a Heat
//                   request): direct reuses its connection; tinyproxy closes after every answer, so the proxied
//                   client opens a connection per request. squid, measured too when installed, keeps it.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';

const POLLS = Number(process.env.PROXY_POLLS ?? 400);
const ROUNDS = Number(process.env.PROXY_ROUNDS ?? 5);
const DOC_BYTES = Number(process.env.DOC_BYTES ?? 16 * 1024);
const TINYPROXY = '/usr/bin/tinyproxy';

if (!existsSync(TINYPROXY)) {
  console.log(
    JSON.stringify({ bench: 'proxy-poll', skipped: 'tinyproxy is not installed (apt-get install tinyproxy)' }),
  );
  process.exit(0);
}

const base = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-proxy-'));
// The proxies run as an unprivileged user and must reach their directories below this one.
chmodSync(base, 0o755);
const cacheDir = path.resolve('node_modules/.cache/oca-proxy-bench');
mkdirSync(cacheDir, { recursive: true });
const clientFile = path.join(cacheDir, 'client.mjs');
await build({
  entryPoints: ['src/http/client.ts'],
  outfile: clientFile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  logLevel: 'warning',
});
const { createHttpClient } = await import(clientFile);

// The origin, in a process of its own so that the CPU measured here is the client's: a Swift-like object with an
// ETag, answering If-None-Match with 304, and closing after its answer when the request asks (x-bench-close).
const ORIGIN = `
import { createHash } from 'node:crypto';
import http from 'node:http';
const doc = JSON.stringify({ deployments: [], blob: 'x'.repeat(${DOC_BYTES}) });
const etag = '"' + createHash('md5').update(doc).digest('hex') + '"';
const server = http.createServer((req, res) => {
  if (req.headers['x-bench-close'] === '1') res.setHeader('connection', 'close');
  if (req.headers['if-none-match'] === etag) { res.writeHead(304, { etag }); res.end(); return; }
  res.writeHead(200, { 'content-type': 'application/json', etag, 'content-length': Buffer.byteLength(doc) });
  res.end(doc);
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port, etag, bytes: doc.length })));
`;
const origin = spawn(process.execPath, ['--input-type=module', '-e', ORIGIN], { stdio: ['ignore', 'pipe', 'inherit'] });
const {
  port: originPort,
  etag,
  bytes: docBytes,
} = await new Promise((resolve, reject) => {
  origin.stdout.once('data', (c) => resolve(JSON.parse(String(c))));
  origin.once('exit', () => reject(new Error('the origin server did not start')));
});
const url = `http://127.0.0.1:${originPort}/v1/AUTH_x/c/o`;

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

async function waitForPort(port, child) {
  for (let i = 0; i < 200 && child.exitCode === null; i++) {
    const up = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.once('connect', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the proxy did not start');
}

const asRoot = process.getuid?.() === 0;
// tinyproxy: closes its client connection after every answer. squid (when installed): keeps it.
const PROXIES = {
  tinyproxy: {
    bin: TINYPROXY,
    async start(dir, port) {
      writeFileSync(
        path.join(dir, 'p.conf'),
        [
          `Port ${port}`,
          'Listen 127.0.0.1',
          'Timeout 15',
          `LogFile "${path.join(dir, 'p.log')}"`,
          'LogLevel Connect',
          'MaxClients 50',
          'Allow 127.0.0.1',
          ...(asRoot ? ['User nobody', 'Group nogroup'] : []),
          '',
        ].join('\n'),
      );
      return spawn(TINYPROXY, ['-d', '-c', path.join(dir, 'p.conf')], { stdio: 'ignore' });
    },
    logged: (dir) =>
      readFileSync(path.join(dir, 'p.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('Request (file descriptor')).length,
  },
  squid: {
    bin: '/usr/sbin/squid',
    async start(dir, port) {
      writeFileSync(
        path.join(dir, 'p.conf'),
        [
          `http_port 127.0.0.1:${port}`,
          `pid_filename ${path.join(dir, 'p.pid')}`,
          `access_log stdio:${path.join(dir, 'p.log')}`,
          `cache_log ${path.join(dir, 'cache.log')}`,
          'cache deny all',
          'cache_mem 8 MB',
          'http_access allow localhost',
          'http_access deny all',
          `coredump_dir ${dir}`,
          'shutdown_lifetime 1 seconds',
          '',
        ].join('\n'),
      );
      return spawn('/usr/sbin/squid', ['-N', '-f', path.join(dir, 'p.conf')], { stdio: 'ignore' });
    },
    logged: (dir) =>
      readFileSync(path.join(dir, 'p.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes(' GET ')).length,
  },
};

const direct = createHttpClient({
  defaultMaxBytes: 1 << 20,
  defaultRetries: 0,
  proxy: { config: { http_proxy: '' }, env: {} },
});

async function polls(client, conditional, close) {
  const headers = { ...(conditional ? { 'if-none-match': etag } : {}), ...(close ? { 'x-bench-close': '1' } : {}) };
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < POLLS; i++) {
    const res = await client.request({ url, headers });
    if (res.statusCode !== (conditional ? 304 : 200)) throw new Error(`unexpected status ${res.statusCode}`);
  }
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6 / POLLS;
  const cpu = process.cpuUsage(cpu0);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000 / POLLS };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const result = { bench: 'proxy-poll', polls: POLLS, rounds: ROUNDS, docBytes };
try {
  for (const [name, proxyKind] of Object.entries(PROXIES)) {
    if (!existsSync(proxyKind.bin)) continue;
    const dir = mkdtempSync(path.join(base, `${name}-`));
    // The proxies drop to an unprivileged user before they open their logs.
    chmodSync(dir, 0o777);
    const port = await freePort();
    const child = await proxyKind.start(dir, port);
    try {
      await waitForPort(port, child);
      const viaProxy = createHttpClient({
        defaultMaxBytes: 1 << 20,
        defaultRetries: 0,
        proxy: { config: { http_proxy: `http://127.0.0.1:${port}` }, env: {} },
      });
      // Warm-up of both paths (JIT, connection pools), then alternating rounds.
      await polls(direct, true);
      await polls(viaProxy, true);
      const out = {};
      for (const [kind, conditional, close] of [
        ['cycle304', true, true],
        ['burst304', true, false],
        ['burst200', false, false],
      ]) {
        const d = [];
        const p = [];
        for (let r = 0; r < ROUNDS; r++) {
          d.push(await polls(direct, conditional, close));
          p.push(await polls(viaProxy, conditional, close));
        }
        const dw = median(d.map((x) => x.wallMs));
        const pw = median(p.map((x) => x.wallMs));
        const dc = median(d.map((x) => x.cpuMs));
        const pc = median(p.map((x) => x.cpuMs));
        out[kind] = {
          directWallMs: +dw.toFixed(3),
          proxyWallMs: +pw.toFixed(3),
          wallRatio: +(pw / dw).toFixed(2),
          directAgentCpuMs: +dc.toFixed(3),
          proxyAgentCpuMs: +pc.toFixed(3),
          agentCpuRatio: +(pc / dc).toFixed(2),
        };
      }
      out.proxiedRequestsLogged = proxyKind.logged(dir);
      result[name] = out;
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    }
  }
} finally {
  origin.kill('SIGTERM');
  rmSync(base, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
process.exit(0);
