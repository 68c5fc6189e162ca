// Benchmark (issue 4): render trees of 200 and 2,000 templates (directories of 10; each 50 scalar substitutions and a
// 20-item section, as in the reference study), ours vs Debian's os-apply-config on the same input in the same run.
// One-shot processes: into a fresh output directory, onto an up-to-date tree (ours skips every unchanged file), and
// with changed metadata onto an existing tree (every file rewritten). Then the same applies done the way `run` does
// them, in-process in a running daemon (daemon-apply.mjs), against upstream's one process per apply.
// Every measured run starts from a flushed filesystem (`sync`, untimed): ours ends with a syncfs, which would otherwise
// also pay for the dirty pages the other tool's previous run left behind.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { daemonApplies } from './daemon-apply.mjs';
import { interleave, measure, median } from './measure.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const UPSTREAM = '/usr/bin/os-apply-config';
const launcher = path.resolve('dist/bin/os-apply-config');
const bundle = path.resolve('dist/os-config-agent.mjs');

/** Metadata of variant `v`: v > 0 changes every scalar, so every rendered file changes. */
function metadataFor(v) {
  const suffix = v === 0 ? '' : `-v${v}`;
  const metadata = { items: Array.from({ length: 20 }, (_, i) => ({ name: `item-${i}${suffix}`, value: i })) };
  for (let k = 0; k < 50; k++) metadata[`key${k}`] = `value-${k}${suffix}`;
  metadata.nested = { port: 8080, enabled: true, list: ['a', 'b'] };
  return metadata;
}
const body = [
  ...Array.from({ length: 50 }, (_, k) => `key${k} = {{key${k}}}`),
  'port = {{nested.port}} enabled = {{nested.enabled}} list = {{nested.list}}',
  '{{#items}}',
  '  {{name}}: {{value}}',
  '{{/items}}',
  '',
].join('\n');
const settle = () => spawnSync('sync');
const env = { ...process.env };
delete env.OS_CONFIG_FILES;
// This sandbox sets NODE_EXTRA_CA_CERTS for npm; with it every node process parses the whole CA bundle at start (about
// 60 ms here). An instance's systemd unit and phase scripts do not set it, so neither side is measured with it.
delete env.NODE_EXTRA_CA_CERTS;
/** One measured run, after an untimed flush of the filesystem. */
const timed = (argv) => {
  settle();
  return measure(argv, { env });
};
const summarise = (r) => ({ wallS: +r.wall.toFixed(3), peakRssMb: +(r.rssKb / 1024).toFixed(1), cpuS: +r.cpu.toFixed(3), statuses: r.statuses });

/** One tree of `count` templates (directories of 10), both tools on it. */
async function benchTree(count) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-apply-'));
  const templates = path.join(base, 'templates');
  for (let d = 0; d < count / 10; d++) {
    const dir = path.join(templates, `dir${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 10; f++) writeFileSync(path.join(dir, `file${f}.conf`), body);
  }
  const metaFile = (v) => {
    const file = path.join(base, `metadata-${v}.json`);
    writeFileSync(file, JSON.stringify(metadataFor(v)));
    return file;
  };
  const args = (out, v = 0) => ['-t', templates, '-o', out, '-m', metaFile(v), '--fallback-metadata', '--os-config-files', path.join(base, 'none.json')];
  // Ours through its launcher with the same flags (plus --root so no default path outside the bench dir is read).
  const oursCmd = (out, v) => [process.execPath, launcher, '--root', base, ...args(out, v)];
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
  const daemon = await daemonApplies({ bundle, root: path.join(base, 'daemon-root'), templatesDir: templates, cycles: RUNS + 1, metadataFor, settle, env });
  rmSync(base, { recursive: true, force: true });
  const inProcessFresh = daemon.seconds[0];
  const inProcessChanged = median(daemon.seconds.slice(1));
  return {
    templates: count,
    fresh: {
      ours: summarise(ours),
      upstream: summarise(upstream),
      wallRatio: +(upstream.wall / ours.wall).toFixed(2),
      rssRatio: +(upstream.rssKb / ours.rssKb).toFixed(2),
      cpuRatio: +(upstream.cpu / ours.cpu).toFixed(2),
    },
    unchangedRerun: { ours: summarise(oursSteady), upstream: summarise(upSteady), wallRatio: +(upSteady.wall / oursSteady.wall).toFixed(2) },
    changedRerun: { ours: summarise(oursChanged), upstream: summarise(upChanged), wallRatio: +(upChanged.wall / oursChanged.wall).toFixed(2) },
    inProcess: {
      freshS: inProcessFresh,
      changedS: inProcessChanged,
      daemonPeakRssMb: +(daemon.peakRssKb / 1024).toFixed(1),
      freshRatioVsUpstreamProcess: +(upstream.wall / inProcessFresh).toFixed(2),
      changedRatioVsUpstreamProcess: +(upChanged.wall / inProcessChanged).toFixed(2),
    },
  };
}

const startupBase = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-apply-'));
const [oursStart, upStart] = interleave(RUNS, [
  () => timed([process.execPath, launcher, '--root', startupBase, '--print-templates']),
  () => timed([UPSTREAM, '--print-templates']),
]);
rmSync(startupBase, { recursive: true, force: true });
const sizes = [await benchTree(200), await benchTree(2000)];
const [small, large] = sizes;
// Linear in the template count: the cost of 10x the templates, after the start-up cost, is about 10x.
const perTemplateMs = (r, side) => +(((r.fresh[side].wallS - (side === 'ours' ? oursStart.wall : upStart.wall)) * 1000) / r.templates).toFixed(3);
console.log(JSON.stringify({
  bench: 'apply-templates',
  runs: RUNS,
  startupPrintTemplates: { ours: summarise(oursStart), upstream: summarise(upStart), wallRatio: +(upStart.wall / oursStart.wall).toFixed(2) },
  sizes,
  perTemplateMs: { ours: [perTemplateMs(small, 'ours'), perTemplateMs(large, 'ours')], upstream: [perTemplateMs(small, 'upstream'), perTemplateMs(large, 'upstream')] },
}));
