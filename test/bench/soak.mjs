// Soak benchmark: 24 simulated hours of a daemon's life in a few minutes. The bundled agent (`run`, native pipeline)
// polls a loopback metadata server (Swift-like: ETag, 304 when unchanged) every 0.05 s instead of every 30 s, so
// 2,880 polls stand for a day; every 120 polls (a simulated hour) Heat "redeploys": a new deployment replaces the
// previous one (an UPDATE gets a new id in Heat) and a template value changes, so the hook runs, a TempURL signal is
// PUT and a file is rendered. RSS, open file descriptors and child processes of the daemon are sampled after warm-up
// and at the end; one JSON line summarises. Usage: node test/bench/soak.mjs [--polls N] [--deploys N] [--interval S]
// (`npm run bench` builds the bundle first). Benchmarks measure; the bounded test/e2e/soak-short.test.ts asserts.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUNDLE = path.join(REPO, 'dist/os-config-agent.mjs');

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}
const POLLS = arg('polls', 2880);
const DEPLOYS = arg('deploys', 24);
const INTERVAL = arg('interval', 0.05);
const POLLS_PER_DEPLOY = Math.floor(POLLS / DEPLOYS);
const WARMUP_POLLS = Math.min(100, Math.floor(POLLS / 4));
const SIMULATED_POLL_SECONDS = 30;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let daemonGone;

async function until(what, cond, ms) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (daemonGone) throw new Error(`soak: the daemon exited (${daemonGone}) while waiting for ${what}`);
    if (Date.now() > deadline) throw new Error(`soak: timed out waiting for ${what}`);
    await sleep(20);
  }
}

function statusKb(pid, field) {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

function childPids(pid) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[1]) === pid) out.push(Number(name));
    } catch {
      // Exited meanwhile.
    }
  }
  return out;
}

/** Median of a few samples a little apart: one sample can land in the middle of a cycle or a GC. */
async function sample(pid, heap) {
  const rss = [];
  const fds = [];
  const children = [];
  const heaps = [];
  for (let i = 0; i < 5; i++) {
    heaps.push(heap());
    rss.push(statusKb(pid, 'VmRSS'));
    fds.push(readdirSync(`/proc/${pid}/fd`).length);
    children.push(childPids(pid).length);
    await sleep(200);
  }
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  // The smallest heap-used figure is the closest to the live data (the others include garbage not yet collected).
  return { rssKb: median(rss), fds: median(fds), children: median(children), heapUsedMb: Math.min(...heaps) };
}

function deployment(n, port) {
  const id = randomUUID();
  return {
    id,
    name: 'soak',
    group: 'soak',
    creation_time: new Date().toISOString().slice(0, 19) + 'Z',
    config: { revision: n },
    options: {},
    outputs: [],
    inputs: [
      { name: 'deploy_server_id', type: 'String', value: 'soak-server' },
      { name: 'deploy_action', type: 'String', value: n === 0 ? 'CREATE' : 'UPDATE' },
      { name: 'deploy_stack_id', type: 'String', value: 'soak/00000000-0000-4000-8000-000000000000' },
      { name: 'deploy_resource_name', type: 'String', value: 'soak' },
      { name: 'deploy_signal_transport', type: 'String', value: 'TEMP_URL_SIGNAL' },
      {
        name: 'deploy_signal_id',
        type: 'String',
        value: `http://127.0.0.1:${port}/signal/${id}?temp_url_sig=x&temp_url_expires=9999999999`,
      },
      { name: 'deploy_signal_verb', type: 'String', value: 'PUT' },
    ],
  };
}

async function main() {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "node scripts/build.mjs"`);
  const root = mkdtempSync(path.join(os.tmpdir(), 'oca-soak-'));
  let polls = 0;
  const signals = new Map();
  let doc = { body: '{}', etag: '"0"' };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/metadata') {
        polls++;
        if (req.headers['if-none-match'] === doc.etag) {
          res.writeHead(304, { etag: doc.etag });
          return void res.end();
        }
        res.writeHead(200, {
          etag: doc.etag,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(doc.body),
        });
        return void res.end(doc.body);
      }
      if (req.method === 'PUT' && req.url?.startsWith('/signal/')) {
        const id = req.url.slice('/signal/'.length).split('?')[0];
        signals.set(id, (signals.get(id) ?? 0) + 1);
        res.writeHead(201, { 'content-length': '0' });
        return void res.end();
      }
      res.writeHead(404, { 'content-length': '0' });
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const publish = (n) => {
    const dep = deployment(n, port);
    doc = { body: JSON.stringify({ soak: { revision: n }, deployments: [dep] }), etag: `"${n + 1}"` };
    return dep.id;
  };

  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/os-collect-config.conf'),
    `[DEFAULT]\ncollectors = request\nmin_polling_interval = ${INTERVAL}\npolling_interval = ${INTERVAL}\n` +
      `[request]\nmetadata_url = http://127.0.0.1:${port}/metadata\ntimeout = 5\n` +
      '[agent]\npoll_jitter = 0\nwatch = false\n[deploy]\nsignal_timeout = 5\n',
    { mode: 0o600 },
  );
  const hook = path.join(root, 'var/lib/heat-config/hooks/soak');
  mkdirSync(path.dirname(hook), { recursive: true });
  writeFileSync(
    hook,
    '#!/bin/sh\ncat > /dev/null\nprintf \'{"deploy_stdout": "soaked", "deploy_stderr": "", "deploy_status_code": 0}\'\n',
  );
  chmodSync(hook, 0o755);
  const templates = path.join(root, 'usr/libexec/os-apply-config/templates/etc');
  mkdirSync(templates, { recursive: true });
  writeFileSync(path.join(templates, 'soak.conf'), 'revision = {{soak.revision}}\n');

  const ids = [publish(0)];
  const started = Date.now();
  // --debug: the agent logs its own memory figures (heap used) after every cycle.
  const child = spawn(process.execPath, [BUNDLE, 'run', '--root', root, '--debug'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let errors = 0;
  let lines = 0;
  let heapUsedMb = NaN;
  let buf = '';
  child.stdout.on('data', (c) => {
    buf += c.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines++;
      if (/"level":"(error|fatal)"/.test(line)) errors++;
      const heap = /"heapUsedMb":([\d.]+)/.exec(line);
      if (heap) heapUsedMb = Number(heap[1]);
    }
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c.toString()));
  const exit = new Promise((r) =>
    child.on('exit', (code, signal) => {
      daemonGone = `code ${code}, signal ${signal}: ${stderr.slice(-500)}`;
      r({ code, signal });
    }),
  );
  const pid = child.pid;

  try {
    const signalled = (id) => signals.has(id);
    await until('warm-up', () => signalled(ids[0]) && polls >= WARMUP_POLLS, 120_000);
    const start = await sample(pid, () => heapUsedMb);
    const pollsAtStart = polls;
    // RSS and heap used every 250 ms: the growth figure compares the floors (after garbage collection) of the first
    // and the last quarter of the run, since a single sample lands anywhere on the collector's sawtooth.
    const trace = [];
    const sampler = setInterval(() => {
      try {
        trace.push({ poll: polls, rssKb: statusKb(pid, 'VmRSS'), heapMb: heapUsedMb });
      } catch {
        // The daemon is stopping.
      }
    }, 250);
    // Once per simulated hour: RSS and heap used, to tell a steady climb (a leak) from the heap settling.
    const hourly = [];
    for (let n = 1; n <= DEPLOYS; n++) {
      await until(`poll ${n * POLLS_PER_DEPLOY}`, () => polls >= n * POLLS_PER_DEPLOY, 600_000);
      hourly.push([Math.round(statusKb(pid, 'VmRSS') / 102.4) / 10, heapUsedMb]);
      ids.push(publish(n));
    }
    await until('the last redeploy signalled', () => signalled(ids[ids.length - 1]), 120_000);
    await until('all polls', () => polls >= POLLS, 600_000);
    const rendered = readFileSync(path.join(root, 'etc/soak.conf'), 'utf8');
    clearInterval(sampler);
    const end = await sample(pid, () => heapUsedMb);
    const span = polls - pollsAtStart;
    const first = trace.filter((x) => x.poll < pollsAtStart + span / 4);
    const last = trace.filter((x) => x.poll >= pollsAtStart + (3 * span) / 4);
    const floor = (xs, key) => Math.min(...xs.map((x) => x[key]).filter((v) => Number.isFinite(v)));
    // Least-squares slope over every sample, scaled to the whole run: the trend under the collector's sawtooth.
    const trend = (key, scale) => {
      const pts = trace.filter((x) => Number.isFinite(x[key]));
      const mx = pts.reduce((a, x) => a + x.poll, 0) / pts.length;
      const my = pts.reduce((a, x) => a + x[key], 0) / pts.length;
      const sxy = pts.reduce((a, x) => a + (x.poll - mx) * (x[key] - my), 0);
      const sxx = pts.reduce((a, x) => a + (x.poll - mx) ** 2, 0);
      return sxx > 0 ? Math.round(((sxy / sxx) * span * 10) / scale) / 10 : NaN;
    };
    const peakKb = statusKb(pid, 'VmHWM');
    child.kill('SIGTERM');
    const { code, signal } = await exit;
    const duplicates = [...signals.values()].filter((c) => c > 1).length;
    const summary = {
      bench: 'soak',
      polls,
      simulatedHours: Math.round(((polls * SIMULATED_POLL_SECONDS) / 3600) * 10) / 10,
      deploys: DEPLOYS,
      signals: [...signals.values()].reduce((a, b) => a + b, 0),
      unsignalled: ids.filter((id) => !signalled(id)).length,
      duplicateSignals: duplicates,
      renderedLastRevision: rendered.trim() === `revision = ${DEPLOYS}`,
      rssStartMb: Math.round((start.rssKb / 1024) * 10) / 10,
      rssEndMb: Math.round((end.rssKb / 1024) * 10) / 10,
      rssFloorFirstQuarterMb: Math.round((floor(first, 'rssKb') / 1024) * 10) / 10,
      rssFloorLastQuarterMb: Math.round((floor(last, 'rssKb') / 1024) * 10) / 10,
      rssGrowthMb: Math.round(((floor(last, 'rssKb') - floor(first, 'rssKb')) / 1024) * 10) / 10,
      rssTrendMb: trend('rssKb', 1024),
      heapTrendMb: trend('heapMb', 1),
      heapFloorFirstQuarterMb: floor(first, 'heapMb'),
      heapFloorLastQuarterMb: floor(last, 'heapMb'),
      samples: trace.length,
      heapUsedStartMb: start.heapUsedMb,
      heapUsedEndMb: end.heapUsedMb,
      peakRssMb: Math.round((peakKb / 1024) * 10) / 10,
      fdStart: start.fds,
      fdEnd: end.fds,
      childrenStart: start.children,
      childrenEnd: end.children,
      pollsMeasured: polls - pollsAtStart,
      hourlyRssAndHeapMb: hourly,
      logLines: lines,
      errorLines: errors,
      exitCode: code,
      exitSignal: signal,
      wallSeconds: Math.round((Date.now() - started) / 100) / 10,
    };
    console.log(JSON.stringify(summary));
    if (code !== 0 || summary.unsignalled > 0 || errors > 0) {
      process.stderr.write(stderr.slice(-4000));
      process.exitCode = 1;
    }
  } finally {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already stopped.
    }
    server.closeAllConnections?.();
    server.close();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
