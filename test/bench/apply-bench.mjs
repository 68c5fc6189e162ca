// Benchmark (issue 4): render trees of 200 and 2,000 templates (directories of 10; each 50 scalar substitutions and a
// 20-item section, as in the reference study), ours vs Debian's os-apply-config on the same input in the same run.
// Each run writes into a fresh output directory; a second measurement re-renders onto an up-to-date tree (ours then
// skips every unchanged file).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { interleave, measure } from './measure.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const UPSTREAM = '/usr/bin/os-apply-config';
const launcher = path.resolve('dist/bin/os-apply-config');

const metadata = { items: Array.from({ length: 20 }, (_, i) => ({ name: `item-${i}`, value: i })) };
for (let k = 0; k < 50; k++) metadata[`key${k}`] = `value-${k}`;
metadata.nested = { port: 8080, enabled: true, list: ['a', 'b'] };
const body = [
  ...Array.from({ length: 50 }, (_, k) => `key${k} = {{key${k}}}`),
  'port = {{nested.port}} enabled = {{nested.enabled}} list = {{nested.list}}',
  '{{#items}}',
  '  {{name}}: {{value}}',
  '{{/items}}',
  '',
].join('\n');
const env = { ...process.env };
delete env.OS_CONFIG_FILES;
// This sandbox sets NODE_EXTRA_CA_CERTS for npm; with it every node process parses the whole CA bundle at start (about
// 60 ms here). An instance's systemd unit and phase scripts do not set it, so neither side is measured with it.
delete env.NODE_EXTRA_CA_CERTS;
const summarise = (r) => ({ wallS: +r.wall.toFixed(3), peakRssMb: +(r.rssKb / 1024).toFixed(1), cpuS: +r.cpu.toFixed(3), statuses: r.statuses });

/** One tree of `count` templates (directories of 10), both tools on it. */
function benchTree(count) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-apply-'));
  const templates = path.join(base, 'templates');
  for (let d = 0; d < count / 10; d++) {
    const dir = path.join(templates, `dir${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 10; f++) writeFileSync(path.join(dir, `file${f}.conf`), body);
  }
  const metaFile = path.join(base, 'metadata.json');
  writeFileSync(metaFile, JSON.stringify(metadata));
  const args = (out) => ['-t', templates, '-o', out, '-m', metaFile, '--fallback-metadata', '--os-config-files', path.join(base, 'none.json')];
  // Ours through its launcher with the same flags (plus --root so no default path outside the bench dir is read).
  const oursCmd = (out) => [process.execPath, launcher, '--root', base, ...args(out)];
  const upCmd = (out) => [UPSTREAM, ...args(out)];
  const fresh = (side, cmd) => (i) => measure(cmd(path.join(base, `${side}-fresh-${i}`)), { env });
  const [ours, upstream] = interleave(RUNS, [fresh('ours', oursCmd), fresh('up', upCmd)]);
  // Re-runs onto an up-to-date tree (each side's first run is not measured).
  const steady = (side, cmd) => {
    const out = path.join(base, `${side}-steady`);
    measure(cmd(out), { env });
    return () => measure(cmd(out), { env });
  };
  const [oursSteady, upSteady] = interleave(RUNS, [steady('ours', oursCmd), steady('up', upCmd)]);
  rmSync(base, { recursive: true, force: true });
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
  };
}

const startupBase = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-apply-'));
const [oursStart, upStart] = interleave(RUNS, [
  () => measure([process.execPath, launcher, '--root', startupBase, '--print-templates'], { env }),
  () => measure([UPSTREAM, '--print-templates'], { env }),
]);
rmSync(startupBase, { recursive: true, force: true });
const sizes = [200, 2000].map(benchTree);
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
