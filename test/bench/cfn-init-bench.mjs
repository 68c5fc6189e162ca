// Benchmark (issue 19): one cfn-init deployment of 50 files and 20 commands, applied by our hook (dist/hooks/cfn-init,
// a process, as the executable) and by Debian's heat-cfntools cfn-init (what heat-agents' hook-cfn-init.py runs), in
// the same run, taking turns. Each run is in a private mount namespace with fresh tmpfs over /srv (the files and the
// commands' log), /var/cache and /var/log (the metadata and cfn-init's log), so nothing on this machine changes and
// every run starts from nothing. Wall time and peak RSS come from GNU time inside the namespace (the tool alone, not
// the set-up). Needs root, unshare and heat-cfntools. Prints one JSON summary line.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './measure.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const FILES = 50;
const COMMANDS = 20;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const HOOK = path.join(REPO, 'dist/hooks/cfn-init');
const CFN_INIT = '/usr/bin/cfn-init';

const missing =
  process.getuid?.() !== 0
    ? 'root (mount namespaces)'
    : !existsSync(HOOK)
      ? `${HOOK} (npm run build)`
      : !existsSync(CFN_INIT)
        ? 'heat-cfntools'
        : !existsSync('/usr/bin/time')
          ? 'GNU time (apt-get install time)'
          : undefined;
if (missing) {
  console.log(JSON.stringify({ bench: 'cfn-init', skipped: `needs ${missing}` }));
  process.exit(0);
}

const files = Object.fromEntries(
  Array.from({ length: FILES }, (_, i) => [
    `/srv/bench/conf.d/${String(i % 5)}/file-${String(i).padStart(2, '0')}.conf`,
    {
      content: `# file ${i}\nkey_${i} = ${'v'.repeat(200)}\n`,
      mode: i % 2 ? '000644' : '000600',
      owner: 'root',
      group: 'root',
    },
  ]),
);
const commands = Object.fromEntries(
  Array.from({ length: COMMANDS }, (_, i) => [
    `cmd-${String(i).padStart(2, '0')}`,
    { command: `echo ${i} >> /srv/bench/order.log`, ...(i % 4 === 0 ? { test: 'test -d /srv/bench' } : {}) },
  ]),
);
const init = { config: { files, commands } };

const dir = mkdtempSync(path.join(os.tmpdir(), 'cfn-init-bench-'));
writeFileSync(
  path.join(dir, 'deployment.json'),
  JSON.stringify({
    id: 'bench-1',
    name: 'bench',
    group: 'cfn-init',
    inputs: [],
    outputs: [],
    options: {},
    config: init,
  }),
);
writeFileSync(path.join(dir, 'metadata.json'), JSON.stringify({ 'AWS::CloudFormation::Init': init }));

const SCRIPT = `
set -eu
SIDE=$1; DIR=$2; NODE=$3
mount --make-rprivate /
for d in /srv /var/cache /var/log; do mount -t tmpfs bench "$d"; done
T='__MEASURE__ %e %M'
if [ "$SIDE" = ours ]; then
  /usr/bin/time -f "$T" -o "$DIR/time" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$NODE" ${HOOK} < "$DIR/deployment.json" > "$DIR/result.json"
else
  mkdir -m 700 /var/cache/heat-cfntools
  cp "$DIR/metadata.json" /var/cache/heat-cfntools/last_metadata
  /usr/bin/time -f "$T" -o "$DIR/time" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ${CFN_INIT}
fi
[ "$(wc -l < /srv/bench/order.log)" -eq ${COMMANDS} ] && [ "$(find /srv/bench/conf.d -type f | wc -l)" -eq ${FILES} ]
`;

function once(side) {
  const res = spawnSync('unshare', ['--mount', '--fork', 'sh', '-c', SCRIPT, 'bench', side, dir, process.execPath], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (res.status !== 0) throw new Error(`${side} run failed (${res.status}): ${res.stderr}`);
  const m = /__MEASURE__ ([\d.]+) (\d+)/.exec(spawnSync('cat', [path.join(dir, 'time')], { encoding: 'utf8' }).stdout);
  if (!m) throw new Error(`${side}: no measurement`);
  return { wall: Number(m[1]), rssKb: Number(m[2]) };
}

try {
  once('ours');
  once('theirs'); // warm the page cache for both
  const runs = { ours: [], theirs: [] };
  for (let i = 0; i < RUNS; i++) for (const side of ['ours', 'theirs']) runs[side].push(once(side));
  const sum = (side) => ({
    wallMedianS: median(runs[side].map((r) => r.wall)),
    peakRssKb: Math.max(...runs[side].map((r) => r.rssKb)),
  });
  const ours = sum('ours');
  const theirs = sum('theirs');
  console.log(
    JSON.stringify({
      bench: 'cfn-init',
      files: FILES,
      commands: COMMANDS,
      runs: RUNS,
      ours,
      theirs,
      speedup: Number((theirs.wallMedianS / ours.wallMedianS).toFixed(2)),
      rssRatio: Number((ours.peakRssKb / theirs.peakRssKb).toFixed(2)),
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
