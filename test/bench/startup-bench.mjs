// Benchmark (issue 22): the start-up of every command name, `<command> --version` started as an instance's phase
// scripts start it (by the launcher's #! line, with this Node.js first on PATH), median of BENCH_RUNS, the commands'
// runs interleaved so that drift in the machine's speed falls on all of them alike. The Python tools' own start-up
// (`--version` too) in the same run, for scale. BENCH_DISTS names the builds to compare, comma-separated (default
// ./dist), all interleaved in the same run.
// Each command runs once untimed first, so that a compile cache (Node.js >= 22.1, docs/build.md) is written before
// the measured runs, as it is after an instance's first boot.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { interleave, measure, withThisNode } from './measure.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const dists = (process.env.BENCH_DISTS ?? 'dist').split(',').map((d) => path.resolve(d));
const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-startup-cache-'));
const env = { ...withThisNode(), OS_CONFIG_AGENT_COMPILE_CACHE: cacheDir };
// See apply-bench.mjs: set for npm in this sandbox, not on an instance.
delete env.NODE_EXTRA_CA_CERTS;

const commands = [];
for (const dist of dists) {
  const label = (name) => (dists.length > 1 ? `${dist}: ${name}` : name);
  commands.push([label('os-config-agent'), path.join(dist, 'os-config-agent.mjs')]);
  for (const name of ['os-collect-config', 'os-apply-config', 'os-refresh-config', 'cfn-signal'])
    commands.push([label(name), path.join(dist, 'bin', name)]);
}
const upstream = ['os-collect-config', 'os-apply-config', 'os-refresh-config']
  .map((name) => [`upstream ${name}`, `/usr/bin/${name}`])
  .filter(([, file]) => existsSync(file));
const all = [...commands, ...upstream];

for (const [, file] of all) measure([file, '--version'], { env });
const results = interleave(
  RUNS,
  all.map(
    ([, file]) =>
      () =>
        measure([file, '--version'], { env }),
  ),
);
rmSync(cacheDir, { recursive: true, force: true });
console.log(
  JSON.stringify({
    bench: 'startup-version',
    node: process.version,
    dists,
    runs: RUNS,
    commands: Object.fromEntries(
      all.map(([name], i) => {
        const r = results[i];
        return [
          name,
          {
            wallMs: +(r.wall * 1000).toFixed(1),
            cpuMs: +(r.cpu * 1000).toFixed(1),
            peakRssMb: +(r.rssKb / 1024).toFixed(1),
            statuses: r.statuses,
          },
        ];
      }),
    ),
  }),
);
