// `npm run bench`: every benchmark in turn, each printing JSON summary lines. Benchmarks measure; tests assert.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const benches = [
  'startup-bench.mjs',
  'collect-bench.mjs',
  'apply-bench.mjs',
  'deploy-bench.mjs',
  'cfn-init-bench.mjs',
  'cfntools-bench.mjs',
  'cycle-bench.mjs',
  'fleet-bench.mjs',
  // Real Heat on loopback, as root; says it is skipped when Heat is not installed.
  'stack-latency-bench.mjs',
  'scale-bench.mjs',
  'proxy-bench.mjs',
  'soak.mjs',
];
let failed = 0;
for (const b of benches) {
  const file = new URL(b, import.meta.url).pathname;
  if (!existsSync(file)) continue;
  console.log(`# ${b}`);
  const res = spawnSync(process.execPath, [file], { stdio: 'inherit' });
  if (res.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
