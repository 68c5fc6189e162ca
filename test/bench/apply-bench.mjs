// Benchmark (issue 4): render a tree of 200 templates (20 directories x 10; each 50 scalar substitutions and a
// 20-item section, as in the reference study), ours vs Debian's os-apply-config on the same input in the same run.
// Each run writes into a fresh output directory; a second measurement re-renders onto an up-to-date tree (ours then
// skips every unchanged file).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { measure, repeat } from './measure.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const UPSTREAM = '/usr/bin/os-apply-config';
const launcher = path.resolve('dist/bin/os-apply-config');

const base = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-apply-'));
const templates = path.join(base, 'templates');
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
for (let d = 0; d < 20; d++) {
  const dir = path.join(templates, `dir${d}`);
  mkdirSync(dir, { recursive: true });
  for (let f = 0; f < 10; f++) writeFileSync(path.join(dir, `file${f}.conf`), body);
}
const metaFile = path.join(base, 'metadata.json');
writeFileSync(metaFile, JSON.stringify(metadata));

function args(out) {
  return ['-t', templates, '-o', out, '-m', metaFile, '--fallback-metadata', '--os-config-files', path.join(base, 'none.json')];
}
// Ours through its launcher with the same flags (plus --root so no default path outside the bench dir is read).
const env = { ...process.env };
delete env.OS_CONFIG_FILES;
const oursCmd = (out) => [process.execPath, launcher, '--root', base, ...args(out)];
const upCmd = (out) => [UPSTREAM, ...args(out)];

const summarise = (r) => ({ wallS: +r.wall.toFixed(3), peakRssMb: +(r.rssKb / 1024).toFixed(1), cpuS: +r.cpu.toFixed(3), statuses: r.statuses });
const fresh = (side, cmd) => repeat(RUNS, (i) => measure(cmd(path.join(base, `${side}-fresh-${i}`)), { env }));
const steady = (side, cmd) => {
  const out = path.join(base, `${side}-steady`);
  measure(cmd(out), { env });
  return repeat(RUNS, () => measure(cmd(out), { env }));
};
const startup = (cmd) => repeat(RUNS, () => measure([...cmd, '--print-templates'], { env }));

const ours = fresh('ours', oursCmd);
const upstream = fresh('up', upCmd);
const oursSteady = steady('ours', oursCmd);
const upSteady = steady('up', upCmd);
const oursStart = startup([process.execPath, launcher, '--root', base]);
const upStart = startup([UPSTREAM]);

const result = {
  bench: 'apply-200-templates',
  runs: RUNS,
  fresh: { ours: summarise(ours), upstream: summarise(upstream), wallRatio: +(upstream.wall / ours.wall).toFixed(2), rssRatio: +(upstream.rssKb / ours.rssKb).toFixed(2), cpuRatio: +(upstream.cpu / ours.cpu).toFixed(2) },
  unchangedRerun: { ours: summarise(oursSteady), upstream: summarise(upSteady), wallRatio: +(upSteady.wall / oursSteady.wall).toFixed(2) },
  startupPrintTemplates: { ours: summarise(oursStart), upstream: summarise(upStart), wallRatio: +(upStart.wall / oursStart.wall).toFixed(2) },
};
console.log(JSON.stringify(result));
rmSync(base, { recursive: true, force: true });
