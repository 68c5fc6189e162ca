// Benchmark (issue 2): one-shot collect of 5 local sources, ours vs Debian's os-collect-config on the same input in
// the same run; then the idle daemon's RSS after IDLE_SECONDS (default 600) of 1 s polling.
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { measure, repeat, withThisNode } from './measure.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 600);
const UPSTREAM = '/usr/bin/os-collect-config';
const bundle = path.resolve(process.env.BENCH_DIST ?? 'dist', 'os-config-agent.mjs');

const base = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-collect-'));
const local = path.join(base, 'local');
mkdirSync(local, { mode: 0o700 });
chmodSync(local, 0o700);
for (let i = 0; i < 5; i++) {
  const doc = {
    [`source${i}`]: {
      items: Array.from({ length: 50 }, (_, j) => ({ id: j, name: `item-${i}-${j}`, tags: ['a', 'b'] })),
    },
  };
  writeFileSync(path.join(local, `${i}0-source.json`), JSON.stringify(doc), { mode: 0o600 });
}
writeFileSync(path.join(base, 'occ.conf'), '[DEFAULT]\n');

function args(side, i) {
  const dir = path.join(base, `${side}-${i}`);
  // Upstream creates only the last level of cachedir.
  mkdirSync(dir, { recursive: true });
  return [
    '--config-file',
    path.join(base, 'occ.conf'),
    '--cachedir',
    path.join(dir, 'cache'),
    '--backup-cachedir',
    path.join(dir, 'backup'),
    '--local-path',
    local,
    '--command',
    'true',
    '--one-time',
    'local',
  ];
}

const ours = repeat(RUNS, (i) => measure([bundle, 'collect', ...args('ours', i)], { env: withThisNode() }));
const upstream = repeat(RUNS, (i) => measure([UPSTREAM, ...args('up', i)]));
const result = {
  bench: 'collect-one-shot-5-local-sources',
  runs: RUNS,
  ours: {
    wallS: +ours.wall.toFixed(3),
    peakRssMb: +(ours.rssKb / 1024).toFixed(1),
    cpuS: +ours.cpu.toFixed(3),
    statuses: ours.statuses,
  },
  upstream: {
    wallS: +upstream.wall.toFixed(3),
    peakRssMb: +(upstream.rssKb / 1024).toFixed(1),
    cpuS: +upstream.cpu.toFixed(3),
    statuses: upstream.statuses,
  },
  speedup: +(upstream.wall / ours.wall).toFixed(2),
};
console.log(JSON.stringify(result));

// Idle daemon: 1 s polling of the same sources, nothing changes; sample RSS at the end. Two daemons side by side, each
// started as the unit starts it (node's command line with the V8 flags, systemd/os-config-agent.service): with V8's lite
// mode and without it, so that what lite mode buys is measured in the same run.
if (IDLE_SECONDS > 0) {
  const daemon = (label, v8Flags) => {
    const root = path.join(base, `idle-root-${label}`);
    mkdirSync(path.join(root, 'etc'), { recursive: true });
    // Paths in the config are instance paths, mapped under --root: the sources go to the default local.path there.
    const rootLocal = path.join(root, 'var/lib/os-collect-config/local-data');
    mkdirSync(rootLocal, { recursive: true, mode: 0o700 });
    cpSync(local, rootLocal, { recursive: true });
    writeFileSync(
      path.join(root, 'etc/os-collect-config.conf'),
      `[DEFAULT]\ncommand = true\ncollectors = local\nmin_polling_interval = 1\npolling_interval = 1\n[agent]\nnative_pipeline = false\nlog_level = warn\n`,
    );
    const env = withThisNode();
    delete env.NODE_EXTRA_CA_CERTS;
    // Builds before issue 22 switched to lite mode at run time unless told not to.
    if (!v8Flags.includes('--lite-mode')) env.OS_CONFIG_AGENT_FULL_JIT = '1';
    const child = spawn(process.execPath, [...v8Flags, bundle, 'run', '--root', root], { stdio: 'ignore', env });
    const rss = () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      // The split says whose memory it is: file-backed is mostly the node binary's pages (Node's own builtins among
      // them), anonymous is the V8 heap and native allocations (docs/performance.md, the idle daemon's memory).
      const mb = (k) => +(kb(k) / 1024).toFixed(1);
      return { rssMb: mb('VmRSS'), hwmMb: mb('VmHWM'), fileMb: mb('RssFile'), anonMb: mb('RssAnon') };
    };
    return { label, v8Flags, child, rss };
  };
  const daemons = [daemon('lite-mode', ['--lite-mode', '--v8-pool-size=0']), daemon('full-jit', ['--v8-pool-size=0'])];
  await new Promise((r) => setTimeout(r, 5000));
  const early = daemons.map((d) => d.rss());
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  daemons.forEach((d, i) => {
    const late = d.rss();
    d.child.kill('SIGTERM');
    console.log(
      JSON.stringify({
        bench: 'idle-daemon-1s-polling',
        node: process.version,
        v8Flags: d.v8Flags.join(' '),
        seconds: IDLE_SECONDS,
        after5s: early[i],
        end: late,
        growthMb: +(late.rssMb - early[i].rssMb).toFixed(1),
      }),
    );
  });
}
rmSync(base, { recursive: true, force: true });
