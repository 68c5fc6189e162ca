// Benchmark (issue 29): heat-cfntools' commands as a template runs them, ours against Debian's heat-cfntools in the
// same run, taking turns: `cfn-init -s -r --access-key --secret-key` of a resource whose AWS::CloudFormation::Init
// has 50 files and 20 commands (fetched from heat-api-cfn, applied, saved), then `cfn-hup -f` with no change since.
// heat-api-cfn is a loopback server in a process of its own that answers both boto's JSON and our XML requests
// (signatures are not checked here; the tests check them). Each turn runs in a scratch root (a private mount namespace
// with an overlay over /, as the conformance tests make them), so nothing on this machine changes and every turn
// starts from nothing (the upper layer on the temporary directory's disk, or a tmpfs: BENCH_SCRATCH). Wall time comes
// from bash's clock inside the root, peak RSS and CPU from GNU time there (the command alone, not the set-up).
// Needs root, unshare, overlayfs, heat-cfntools and GNU time. Prints one JSON summary line.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './measure.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
// Where each turn's changes land (the overlay's upper layer): by default the disk of the temporary directory, as an
// instance's root is a disk, so the durable writes cost what they cost there (heat-cfntools flushes nothing); with
// BENCH_SCRATCH=tmpfs a tmpfs, which leaves the disk out.
const SCRATCH = process.env.BENCH_SCRATCH === 'tmpfs' ? 'tmpfs' : 'disk';
const FILES = 50;
const COMMANDS = 20;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUNDLE = path.join(REPO, 'dist/os-config-agent.mjs');

const missing =
  process.getuid?.() !== 0
    ? 'root (mount namespaces)'
    : !existsSync(BUNDLE)
      ? `${BUNDLE} (npm run build)`
      : !existsSync('/usr/bin/cfn-init') || !existsSync('/usr/bin/cfn-hup')
        ? 'heat-cfntools'
        : !existsSync('/usr/bin/time')
          ? 'GNU time (apt-get install time)'
          : undefined;
if (missing) {
  console.log(JSON.stringify({ bench: 'cfntools', skipped: `needs ${missing}` }));
  process.exit(0);
}

// Text content only: heat-cfntools 1.4.2 cannot write JSON content under Python 3.
const files = Object.fromEntries(
  Array.from({ length: FILES }, (_, i) => [
    `/srv/bench/conf.d/${String(i % 5)}/file-${String(i).padStart(2, '0')}.conf`,
    { content: `# file ${i}\nkey_${i} = ${'v'.repeat(200)}\n`, mode: i % 2 ? '000644' : '000600', owner: 'root' },
  ]),
);
const commands = Object.fromEntries(
  Array.from({ length: COMMANDS }, (_, i) => [
    `cmd-${String(i).padStart(2, '0')}`,
    { command: `echo ${i} >> /srv/bench/order.log`, ...(i % 4 === 0 ? { test: 'test -d /srv/bench' } : {}) },
  ]),
);
const METADATA = JSON.stringify({ 'AWS::CloudFormation::Init': { config: { files, commands } } });

const dir = mkdtempSync(path.join(os.tmpdir(), 'cfntools-bench-'));
const share = path.join(dir, 'share');
const oca = path.join(share, 'oca');
mkdirSync(oca, { recursive: true });
// Laid out as the image element lays it out: the entries, their chunks, a link per name to the entry it starts.
const { entries } = JSON.parse(readFileSync(path.join(REPO, 'dist/command-names.json'), 'utf8'));
for (const entry of new Set(Object.values(entries))) cpSync(path.join(REPO, 'dist', entry), path.join(oca, entry));
cpSync(path.join(REPO, 'dist/chunks'), path.join(oca, 'chunks'), { recursive: true });
for (const name of ['cfn-init', 'cfn-hup']) symlinkSync(entries[name], path.join(oca, name));
// BENCH_NODE: another Node.js to run ours with (the image and the package run Node 24; this process's by default),
// copied into the share, which the scratch root sees. Its compile cache is kept there too, as the launchers keep it
// in /var/cache/os-config-agent (Node >= 22.1; the warm-up turn fills it).
const nodeInside = process.env.BENCH_NODE ? '/tmp/share/node' : process.execPath;
if (process.env.BENCH_NODE) cpSync(process.env.BENCH_NODE, path.join(share, 'node'));
mkdirSync(path.join(share, 'compile-cache'), { mode: 0o700 });
writeFileSync(path.join(share, 'metadata.json'), METADATA);

// The floor of cfn-init's work in each runtime: what any cfn-init must do, and nothing else. One GET to heat-api-cfn,
// the 50 files written (temp file and rename, no fsync, no parsing, no modes or owners), the 20 commands and 5 tests
// run in order through sh. Run in the same roots as the commands, it says how much of heat-cfntools' time the
// runtime alone already takes (docs/performance.md).
writeFileSync(
  path.join(share, 'floor.cjs'),
  `const fs = require('node:fs'); const http = require('node:http'); const { spawn } = require('node:child_process');
const [port, files, commands] = process.argv.slice(2).map(Number);
const sh = (c) => new Promise((ok) => spawn('/bin/sh', ['-c', c], { stdio: ['ignore', 'pipe', 'pipe'] }).on('close', ok));
http.get('http://127.0.0.1:' + port + '/?ContentType=JSON', (res) => {
  res.resume();
  res.on('end', async () => {
    fs.mkdirSync('/srv/floor', { recursive: true });
    for (let i = 0; i < files; i++) { fs.writeFileSync('/srv/floor/.f' + i, 'v'.repeat(200)); fs.renameSync('/srv/floor/.f' + i, '/srv/floor/f' + i); }
    for (let i = 0; i < commands; i++) { if (i % 4 === 0) await sh('test -d /srv/floor'); await sh('echo ' + i + ' >> /srv/floor/log'); }
  });
});
`,
);
writeFileSync(
  path.join(share, 'floor.py'),
  `import os, subprocess, sys, urllib.request
port, files, commands = (int(a) for a in sys.argv[1:])
urllib.request.urlopen('http://127.0.0.1:%d/?ContentType=JSON' % port).read()
os.makedirs('/srv/floor', exist_ok=True)
for i in range(files):
    with open('/srv/floor/.f%d' % i, 'w') as f:
        f.write('v' * 200)
    os.rename('/srv/floor/.f%d' % i, '/srv/floor/f%d' % i)
sh = lambda c: subprocess.run(['/bin/sh', '-c', c], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
for i in range(commands):
    if i % 4 == 0:
        sh('test -d /srv/floor')
    sh('echo %d >> /srv/floor/log' % i)
`,
);

// heat-api-cfn on loopback, in its own process (the turns below block this one).
const SERVER = `
const http = require('node:http');
const md = require('node:fs').readFileSync(process.argv[1], 'utf8');
const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const server = http.createServer((req, res) => {
  const json = new URL(req.url, 'http://x').searchParams.get('ContentType') === 'JSON';
  res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/xml' });
  res.end(json
    ? '{"DescribeStackResourceResponse": {"DescribeStackResourceResult": {"StackResourceDetail": {"Metadata": ' + md + '}}}}'
    : '<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail><Metadata>' + esc(md) + '</Metadata></StackResourceDetail></DescribeStackResourceResult></DescribeStackResourceResponse>');
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

const TURN = `
set -eu
S=$1; SHARE=$2; SIDE=$3; NODE=$4; PORT=$5; SCRATCH=$6
mount --make-rprivate /
if [ "$SCRATCH" = tmpfs ]; then mount -t tmpfs bench "$S"; else rm -rf "$S/u" "$S/w" "$S/m"; fi
mkdir "$S/u" "$S/w" "$S/m"
mount -t overlay bench -o "lowerdir=/,upperdir=$S/u,workdir=$S/w" "$S/m"
mount --rbind /proc "$S/m/proc"
mount --rbind /dev "$S/m/dev"
mount -t tmpfs bench "$S/m/tmp"
mkdir "$S/m/tmp/share"
mount --bind "$SHARE" "$S/m/tmp/share"
mkdir -p "$S/m/var/lib/heat-cfntools" "$S/m/etc/cfn"
echo "http://127.0.0.1:$PORT" > "$S/m/var/lib/heat-cfntools/cfn-metadata-server"
printf '[Boto]\\nnum_retries = 0\\nis_secure = 0\\ncfn_region_name = heat\\ncfn_region_endpoint = 127.0.0.1\\n' > "$S/m/var/lib/heat-cfntools/cfn-boto-cfg"
printf '[main]\\nstack=bench\\ncredential-file=/etc/cfn/cfn-credentials\\n' > "$S/m/etc/cfn/cfn-hup.conf"
printf 'AWSAccessKeyId=AKBENCH\\nAWSSecretKey=bench-secret\\n' > "$S/m/etc/cfn/cfn-credentials"
printf '[reload]\\ntriggers=post.update\\npath=Resources.web.Metadata.AWS::CloudFormation::Init\\naction=touch /tmp/fired\\nrunas=root\\n' > "$S/m/etc/cfn/hooks.conf"
run() { chroot "$S/m" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
# A command's wall time on bash's clock (microseconds) and its peak RSS and CPU from GNU time (10 ms), in /tmp/time-NAME.
timed() { n=$1; shift; s=$EPOCHREALTIME; /usr/bin/time -f '__MEASURE__ %M %U %S' -o "/tmp/time-$n" "$@" || return; e=$EPOCHREALTIME; echo "__WALL__ $s $e" >> "/tmp/time-$n"; }
if [ "$SIDE" = ours ]; then
  CMD="$NODE --v8-pool-size=0 /tmp/share/oca/"; FLOOR="$NODE --v8-pool-size=0 /tmp/share/floor.cjs"; CACHE=/tmp/share/compile-cache
else
  CMD=/usr/bin/; FLOOR="/usr/bin/python3 /tmp/share/floor.py"; CACHE=
fi
run bash -c "$(declare -f timed); export OS_CONFIG_AGENT_COMPILE_CACHE=$CACHE; timed cfn-init \${CMD}cfn-init -s bench -r web --access-key AKBENCH --secret-key bench-secret && timed cfn-hup \${CMD}cfn-hup -f && timed floor $FLOOR $PORT ${FILES} ${COMMANDS}"
cat "$S/m/tmp/time-cfn-init" "$S/m/tmp/time-cfn-hup" "$S/m/tmp/time-floor" > "$SHARE/time-$SIDE"
[ "$(wc -l < "$S/m/srv/floor/log")" -eq ${COMMANDS} ]
[ "$(wc -l < "$S/m/srv/bench/order.log")" -eq ${COMMANDS} ] && [ "$(find "$S/m/srv/bench/conf.d" -type f | wc -l)" -eq ${FILES} ] && [ ! -e "$S/m/tmp/fired" ]
`;

function turn(side, port) {
  const scratch = path.join(dir, `scratch-${side}`);
  mkdirSync(scratch, { recursive: true });
  const res = spawnSync(
    'unshare',
    ['--mount', '--fork', 'bash', '-c', TURN, 'bench', scratch, share, side, nodeInside, String(port), SCRATCH],
    { encoding: 'utf8', timeout: 180_000 },
  );
  if (res.status !== 0) throw new Error(`${side} turn failed (${res.status}): ${res.stderr}`);
  const times = [
    ...readFileSync(path.join(share, `time-${side}`), 'utf8').matchAll(
      /__MEASURE__ (\d+) ([\d.]+) ([\d.]+)\n__WALL__ ([\d.]+) ([\d.]+)/g,
    ),
  ];
  if (times.length !== 3) throw new Error(`${side}: no measurement`);
  return times.map((m) => ({
    wall: Number(m[5]) - Number(m[4]),
    rssKb: Number(m[1]),
    cpu: Number(m[2]) + Number(m[3]),
  }));
}

const server = spawn(process.execPath, ['-e', SERVER, path.join(share, 'metadata.json')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const port = await new Promise((resolve, reject) => {
    server.stdout.once('data', (c) => resolve(Number(String(c).trim())));
    server.once('exit', () => reject(new Error('the heat-api-cfn server exited')));
  });
  turn('ours', port);
  turn('theirs', port); // warm the page cache for both
  const runs = { ours: [], theirs: [] };
  for (let i = 0; i < RUNS; i++) for (const side of ['ours', 'theirs']) runs[side].push(turn(side, port));
  const sum = (side, step) => ({
    wallMedianS: Number(median(runs[side].map((r) => r[step].wall)).toFixed(3)),
    cpuMedianS: Number(median(runs[side].map((r) => r[step].cpu)).toFixed(2)),
    peakRssKb: Math.max(...runs[side].map((r) => r[step].rssKb)),
  });
  const compare = (step) => {
    const ours = sum('ours', step);
    const theirs = sum('theirs', step);
    return {
      ours,
      theirs,
      speedup: Number((theirs.wallMedianS / ours.wallMedianS).toFixed(2)),
      rssRatio: Number((ours.peakRssKb / theirs.peakRssKb).toFixed(2)),
    };
  };
  console.log(
    JSON.stringify({
      bench: 'cfntools',
      files: FILES,
      commands: COMMANDS,
      runs: RUNS,
      scratch: SCRATCH,
      node: spawnSync(process.env.BENCH_NODE || process.execPath, ['--version'], { encoding: 'utf8' }).stdout.trim(),
      cfnInit: compare(0),
      cfnHupNoChange: compare(1),
      // The runtimes alone on cfn-init's work (ours: Node; theirs: Python): ourFloorOfTheirs is the share of
      // heat-cfntools' whole cfn-init that Node takes before any of our code runs.
      cfnInitFloor: {
        node: sum('ours', 2),
        python: sum('theirs', 2),
        ourFloorOfTheirs: Number((sum('ours', 2).wallMedianS / sum('theirs', 0).wallMedianS).toFixed(2)),
      },
    }),
  );
} finally {
  server.kill();
  rmSync(dir, { recursive: true, force: true });
}
