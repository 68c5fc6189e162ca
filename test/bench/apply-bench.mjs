// Benchmark (issue 4): render trees of 200 and 2,000 templates (directories of 10; each 50 scalar substitutions and a
// 20-item section, as in the reference study), ours vs Debian's os-apply-config on the same input in the same run.
// One-shot processes: into a fresh output directory, onto an up-to-date tree (ours skips every unchanged file), and
// with changed metadata onto an existing tree (every file rewritten). Then the same applies done the way `run` does
// them, in-process in a running daemon (daemon-apply.mjs), against upstream's one process per apply.
//
// Each case runs on two filesystems: the machine's temporary directory, and, when this process may mount one (root,
// mkfs.ext4, a loop device), a freshly made ext4 such as an instance's root filesystem is. They differ where it
// matters: on this sandbox's root mount (ext4 with its own `resv_strict` option) allocating an inode costs ~90 us,
// against ~7 us on a plain ext4, and both tools create one per written file.
//
// Every measured run starts from a flushed filesystem (`sync`, untimed): ours makes its writes durable (syncfs before
// the renames), which would otherwise also pay for the dirty pages the other tool's previous run left behind.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { daemonApplies } from './daemon-apply.mjs';
import { interleave, measure, median, withThisNode } from './measure.mjs';
import { TEMPLATE_BODY, templateMetadata } from './template-set.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const UPSTREAM = '/usr/bin/os-apply-config';
const launcher = path.resolve('dist/bin/os-apply-config');
const bundle = path.resolve('dist/os-config-agent.mjs');
const EXT4_IMAGE_BYTES = 2 * 1024 ** 3;
const TOOL_TIMEOUT_MS = 60_000;

const settle = () => spawnSync('sync');
const env = withThisNode();
delete env.OS_CONFIG_FILES;
// This sandbox sets NODE_EXTRA_CA_CERTS for npm; with it every node process parses the whole CA bundle at start (about
// 35-60 ms here). An instance's systemd unit and phase scripts do not set it, so neither side is measured with it.
delete env.NODE_EXTRA_CA_CERTS;
/** One measured run, after an untimed flush of the filesystem. */
const timed = (argv) => {
  settle();
  return measure(argv, { env });
};
const summarise = (r) => ({
  wallS: +r.wall.toFixed(3),
  peakRssMb: +(r.rssKb / 1024).toFixed(1),
  cpuS: +r.cpu.toFixed(3),
  statuses: r.statuses,
});
const ratio = (upstream, ours) => +(upstream / ours).toFixed(2);

/** A fresh ext4 on a loop device under `dir`, or undefined (with the reason) when this process cannot make one. */
function mountExt4(dir) {
  if (process.getuid?.() !== 0) return { reason: 'not root' };
  const image = path.join(dir, 'ext4.img');
  const mountPoint = path.join(dir, 'mnt');
  mkdirSync(mountPoint);
  const run = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8', timeout: TOOL_TIMEOUT_MS });
  const steps = [
    ['truncate', ['-s', String(EXT4_IMAGE_BYTES), image]],
    ['mkfs.ext4', ['-q', '-F', image]],
    ['mount', ['-o', 'loop', image, mountPoint]],
  ];
  for (const [cmd, args] of steps) {
    const res = run(cmd, args);
    if (res.status !== 0)
      return { reason: `${cmd} failed: ${(res.stderr || res.error?.message || '').trim().split('\n')[0]}` };
  }
  return { mountPoint, unmount: () => run('umount', [mountPoint]) };
}

/** One tree of `count` templates (directories of 10) under `fsBase`, both tools on it. */
async function benchTree(fsBase, count) {
  const base = mkdtempSync(path.join(fsBase, 'oca-bench-apply-'));
  const templates = path.join(base, 'templates');
  for (let d = 0; d < count / 10; d++) {
    const dir = path.join(templates, `dir${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 10; f++) writeFileSync(path.join(dir, `file${f}.conf`), TEMPLATE_BODY);
  }
  const metaFile = (v) => {
    const file = path.join(base, `metadata-${v}.json`);
    writeFileSync(file, JSON.stringify(templateMetadata(v)));
    return file;
  };
  const args = (out, v = 0) => [
    '-t',
    templates,
    '-o',
    out,
    '-m',
    metaFile(v),
    '--fallback-metadata',
    '--os-config-files',
    path.join(base, 'none.json'),
  ];
  // Ours through its launcher, started by its #! line as on an instance, with the same flags (plus --root so no default
  // path outside the bench dir is read).
  const oursCmd = (out, v) => [launcher, '--root', base, ...args(out, v)];
  const upCmd = (out, v) => [UPSTREAM, ...args(out, v)];
  const fresh = (side, cmd) => (i) => timed(cmd(path.join(base, `${side}-fresh-${i}`)));
  const [ours, upstream] = interleave(RUNS, [fresh('ours', oursCmd), fresh('up', upCmd)]);
  // Re-runs onto an existing tree (each side's first run is not measured): the same metadata, then changed metadata.
  const rerun = (side, cmd, changed) => {
    const out = path.join(base, `${side}-${changed ? 'changed' : 'steady'}`);
    timed(cmd(out, 0));
    return (i) => timed(cmd(out, changed ? i + 1 : 0));
  };
  const [oursSteady, upSteady] = interleave(RUNS, [rerun('ours', oursCmd, false), rerun('up', upCmd, false)]);
  const [oursChanged, upChanged] = interleave(RUNS, [rerun('ours', oursCmd, true), rerun('up', upCmd, true)]);
  const daemon = await daemonApplies({
    bundle,
    root: path.join(base, 'daemon-root'),
    templatesDir: templates,
    cycles: RUNS + 1,
    metadataFor: templateMetadata,
    settle,
    env,
  });
  rmSync(base, { recursive: true, force: true });
  const inProcessFresh = daemon.seconds[0];
  const inProcessChanged = median(daemon.seconds.slice(1));
  return {
    templates: count,
    fresh: {
      ours: summarise(ours),
      upstream: summarise(upstream),
      wallRatio: ratio(upstream.wall, ours.wall),
      rssRatio: ratio(upstream.rssKb, ours.rssKb),
      cpuRatio: ratio(upstream.cpu, ours.cpu),
    },
    unchangedRerun: {
      ours: summarise(oursSteady),
      upstream: summarise(upSteady),
      wallRatio: ratio(upSteady.wall, oursSteady.wall),
    },
    changedRerun: {
      ours: summarise(oursChanged),
      upstream: summarise(upChanged),
      wallRatio: ratio(upChanged.wall, oursChanged.wall),
    },
    inProcess: {
      freshS: inProcessFresh,
      changedS: inProcessChanged,
      daemonPeakRssMb: +(daemon.peakRssKb / 1024).toFixed(1),
      freshRatioVsUpstreamProcess: ratio(upstream.wall, inProcessFresh),
      changedRatioVsUpstreamProcess: ratio(upChanged.wall, inProcessChanged),
    },
  };
}

/** Start-up, then both tree sizes, on the filesystem at `fsBase`. */
async function benchFilesystem(label, fsBase) {
  const startupBase = mkdtempSync(path.join(fsBase, 'oca-bench-apply-'));
  const [oursStart, upStart] = interleave(RUNS, [
    () => timed([launcher, '--root', startupBase, '--print-templates']),
    () => timed([UPSTREAM, '--print-templates']),
  ]);
  rmSync(startupBase, { recursive: true, force: true });
  const sizes = [await benchTree(fsBase, 200), await benchTree(fsBase, 2000)];
  const [small, large] = sizes;
  // Linear in the template count: the cost of one more template is the difference between the two sizes over the
  // 1,800 templates between them; what is left at 200 is the fixed cost of a run (start-up, the flush to disk).
  const marginalMs = (side) =>
    ((large.fresh[side].wallS - small.fresh[side].wallS) * 1000) / (large.templates - small.templates);
  const linearity = (side) => ({
    perTemplateMs: +marginalMs(side).toFixed(3),
    fixedMs: +(small.fresh[side].wallS * 1000 - marginalMs(side) * small.templates).toFixed(1),
  });
  return {
    bench: 'apply-templates',
    filesystem: label,
    runs: RUNS,
    startupPrintTemplates: {
      ours: summarise(oursStart),
      upstream: summarise(upStart),
      wallRatio: ratio(upStart.wall, oursStart.wall),
    },
    sizes,
    linearFit: {
      ours: linearity('ours'),
      upstream: linearity('upstream'),
      perTemplateRatio: +(marginalMs('upstream') / marginalMs('ours')).toFixed(2),
    },
  };
}

console.log(JSON.stringify(await benchFilesystem(`temporary directory (${os.tmpdir()})`, os.tmpdir())));
const scratch = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-ext4-'));
const ext4 = mountExt4(scratch);
try {
  if (ext4.mountPoint)
    console.log(
      JSON.stringify(await benchFilesystem('fresh ext4 on a loop device (as an instance root)', ext4.mountPoint)),
    );
  else
    console.log(
      JSON.stringify({ bench: 'apply-templates', filesystem: 'fresh ext4 on a loop device', skipped: ext4.reason }),
    );
} finally {
  ext4.unmount?.();
  rmSync(scratch, { recursive: true, force: true });
}
