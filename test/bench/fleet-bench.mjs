// Benchmark (issue 3, not a test): a fleet of simulated agents polling one loopback metadata server (a Swift-like
// object with ETag/Last-Modified), on an accelerated clock, comparing
//   ours:     one conditional GET per poll (If-None-Match / If-Modified-Since; 304 when unchanged), poll sleeps with
//             the agent's jitter (sleep * (1 + poll_jitter * random));
//   upstream: HEAD + full GET every poll (B10), no jitter.
// Both follow os-collect-config's schedule: first sleep min_polling_interval, doubling up to polling_interval.
// Real HTTP requests go to a real node:http server; the clock is virtual (each virtual second's requests are sent
// together, then the clock moves on), so 2,000 agents and hours of fleet time fit in well under a minute.
//
// Phases, with the metadata unchanged throughout:
//   boot:   the fleet boots within BOOT_WINDOW seconds (a stack creating its servers) and polls for BOOT_SECONDS;
//   warm-up: WARMUP_HOURS of schedule only (no requests: the fleet has been running a while; ours keeps its ETag);
//   steady: MEASURE_SECONDS of polling, where requests/s (1-second buckets) and bytes are measured.
// Prints one JSON summary line. Targets: steady bytes(ours) <= 5% of upstream; steady peak/mean(ours) <= 1.5.
import { createHash } from 'node:crypto';
import http from 'node:http';

const AGENTS = Number(process.env.FLEET_AGENTS ?? 2000);
const META_BYTES = Number(process.env.META_BYTES ?? 64 * 1024);
const BOOT_WINDOW = Number(process.env.BOOT_WINDOW ?? 5);
const BOOT_SECONDS = Number(process.env.BOOT_SECONDS ?? 120);
const WARMUP_HOURS = Number(process.env.WARMUP_HOURS ?? 6);
const MEASURE_SECONDS = Number(process.env.MEASURE_SECONDS ?? 300);
const MIN_POLL = Number(process.env.MIN_POLL ?? 1);
const MAX_POLL = Number(process.env.MAX_POLL ?? 30);
const JITTER = Number(process.env.POLL_JITTER ?? 0.1);
const SEED = Number(process.env.SEED ?? 42);
const DEADLINE_MS = 55_000;
const started = Date.now();

// The agent's schedule (src/daemon/schedule.ts), duplicated: the bench runs without the TypeScript sources.
const nextSleepSeconds = (previous, min, max) => (previous === undefined ? min : Math.min(previous * 2, max));
const withJitter = (seconds, fraction, random) => seconds * (1 + Math.min(Math.max(fraction, 0), 1) * random);
const capPhaseOffset = (previous, next, max, random) =>
  next >= max && (previous === undefined || previous < max) && (previous !== undefined || next > 0) ? random * max : 0;

// Seeded PRNG (mulberry32) so runs are comparable.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// --- the server: one object, validators, per-virtual-second request counts, exact bytes written -------------------
const body = Buffer.from(
  JSON.stringify({
    'os-collect-config': { collectors: ['request', 'local'] },
    deployments: [],
    padding: 'x'.repeat(Math.max(0, META_BYTES - 120)),
  }),
);
const etag = `"${createHash('md5').update(body).digest('hex')}"`;
const lastModified = new Date(Date.UTC(2026, 0, 1)).toUTCString();
let buckets = new Map();
const sockets = new Set();
let closedBytes = 0;
const server = http.createServer((req, res) => {
  const second = Number(req.headers['x-sim-second']);
  buckets.set(second, (buckets.get(second) ?? 0) + 1);
  const common = { etag, 'last-modified': lastModified, 'content-type': 'application/json' };
  const ims = req.headers['if-modified-since'];
  if (
    req.headers['if-none-match'] === etag ||
    (req.headers['if-none-match'] === undefined && ims && Date.parse(ims) >= Date.parse(lastModified))
  ) {
    res.writeHead(304, common);
    return res.end();
  }
  res.writeHead(200, { ...common, 'content-length': String(body.length) });
  res.end(req.method === 'HEAD' ? undefined : body);
});
server.on('connection', (s) => {
  sockets.add(s);
  s.on('close', () => {
    closedBytes += s.bytesWritten;
    sockets.delete(s);
  });
});
const bytesWritten = () => closedBytes + [...sockets].reduce((n, s) => n + s.bytesWritten, 0);
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 256 });

function request(method, second, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/AUTH_fleet/heat/metadata',
        method,
        agent: keepAlive,
        headers: { 'x-sim-second': String(second), ...headers },
      },
      (res) => {
        res.on('data', () => {});
        res.on('end', () =>
          resolve({ status: res.statusCode, etag: res.headers.etag, lastModified: res.headers['last-modified'] }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// --- the fleet -----------------------------------------------------------------------------------------------------
const behaviours = {
  async ours(agent, second) {
    const headers = {};
    if (agent.etag) headers['if-none-match'] = agent.etag;
    if (agent.lastModified) headers['if-modified-since'] = agent.lastModified;
    const r = await request('GET', second, headers);
    if (r.status === 200) {
      agent.etag = r.etag;
      agent.lastModified = r.lastModified;
    }
  },
  async upstream(_agent, second) {
    await request('HEAD', second);
    await request('GET', second);
  },
};

function makeFleet(jitter, random) {
  return Array.from({ length: AGENTS }, () => ({ nextAt: random() * BOOT_WINDOW, sleep: undefined, jitter }));
}

function advance(agent, random) {
  const previous = agent.sleep;
  agent.sleep = nextSleepSeconds(previous, MIN_POLL, MAX_POLL);
  // Ours spreads its phase once when the doubling reaches the cap; upstream (jitter 0) does not.
  const spread = agent.jitter > 0 ? capPhaseOffset(previous, agent.sleep, MAX_POLL, random()) : 0;
  agent.nextAt += withJitter(agent.sleep, agent.jitter, random()) + spread;
}

/** Poll in real HTTP from `from` to `to` (virtual seconds); returns the measurements of that window. */
async function pollWindow(fleet, behaviour, random, from, to) {
  buckets = new Map();
  const bytesBefore = bytesWritten();
  // Agents due in each virtual second, found by one pass per second over a time-sorted list.
  for (let second = Math.floor(from); second < to; second++) {
    if (Date.now() - started > DEADLINE_MS)
      throw new Error(
        `fleet bench exceeded ${DEADLINE_MS / 1000} s of real time; lower FLEET_AGENTS or MEASURE_SECONDS`,
      );
    const due = fleet.filter((a) => a.nextAt < second + 1 && a.nextAt >= from);
    await Promise.all(due.map((a) => behaviour(a, second)));
    for (const a of due) {
      advance(a, random);
    }
  }
  const seconds = to - Math.floor(from);
  let requests = 0;
  let peak = 0;
  for (let s = Math.floor(from); s < to; s++) {
    const n = buckets.get(s) ?? 0;
    requests += n;
    peak = Math.max(peak, n);
  }
  const mean = requests / seconds;
  return {
    seconds,
    requests,
    bytes: bytesWritten() - bytesBefore,
    peakRps: peak,
    meanRps: +mean.toFixed(1),
    peakOverMean: +(peak / mean).toFixed(2),
  };
}

async function simulate(name) {
  const random = rng(SEED);
  const fleet = makeFleet(name === 'ours' ? JITTER : 0, random);
  const behaviour = behaviours[name];
  const boot = await pollWindow(fleet, behaviour, random, 0, BOOT_SECONDS);
  const steadyFrom = BOOT_SECONDS + WARMUP_HOURS * 3600;
  // Warm-up: schedule only.
  for (const a of fleet) while (a.nextAt < steadyFrom) advance(a, random);
  const steady = await pollWindow(fleet, behaviour, random, steadyFrom, steadyFrom + MEASURE_SECONDS);
  return { boot, steady };
}

const ours = await simulate('ours');
const upstream = await simulate('upstream');
keepAlive.destroy();
server.close();

const bytesRatio = ours.steady.bytes / upstream.steady.bytes;
const summary = {
  bench: 'fleet-request-collector',
  agents: AGENTS,
  metadataBytes: body.length,
  schedule: {
    minPollingInterval: MIN_POLL,
    pollingInterval: MAX_POLL,
    pollJitter: JITTER,
    bootWindowS: BOOT_WINDOW,
    bootMeasuredS: BOOT_SECONDS,
    warmupHours: WARMUP_HOURS,
    steadyMeasuredS: MEASURE_SECONDS,
  },
  ours,
  upstream,
  steadyBytesRatio: +bytesRatio.toFixed(4),
  targets: { steadyBytesRatioMax: 0.05, steadyPeakOverMeanMax: 1.5 },
  met: { bytes: bytesRatio <= 0.05, peakOverMean: ours.steady.peakOverMean <= 1.5 },
  realSeconds: +((Date.now() - started) / 1000).toFixed(1),
};
console.log(JSON.stringify(summary));
