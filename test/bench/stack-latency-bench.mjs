// Benchmark (issue 30): stack latency on real Heat with the default polling settings. Stacks of 3 and of 6 chained
// script deployments (each takes the previous one's output as an input, so Heat publishes it only after the previous
// one's signal; test/integration/heat/chain-template.ts), timed from `stack create` to CREATE_COMPLETE, for:
//   ours-default  os-config-agent with min_polling_interval 1, polling_interval 30 (and the default jitter)
//   ours-poll1    the same with polling_interval 1
//   upstream      Debian's os-collect-config (cfn collector, the same defaults) -> os-refresh-config ->
//                 20-os-apply-config -> heat-agents' 55-heat-config, hook-script.py and heat-config-notify, from the
//                 checkout HEAT_AGENTS_DIR names (left out, and said so, without it)
// Real Heat, Keystone and PostgreSQL run on 127.0.0.1 as the real-Heat tests start them (test/integration/heat/, as
// root, packages from install.sh); skipped with one line when they are not installed. Each agent starts once its
// stack's server exists (it needs the server's credentials), as on a server that boots with its stack. Sides run one
// after another against the one Heat; BENCH_RUNS rounds (default 1). Prints one JSON summary line with the ratios.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { heatAgentsDir, upstreamChain } from './upstream-chain.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const UPSTREAM = heatAgentsDir();
const RUNS = Number(process.env.BENCH_RUNS ?? 1);
const LINKS = [3, 6];
const STACK_TIMEOUT_MS = 600_000;

const missing = ['heat-all', 'keystone-wsgi-public', 'keystone-manage', 'heat-manage'].find(
  (tool) => !existsSync(`/usr/bin/${tool}`),
);
if (missing || process.getuid?.() !== 0) {
  console.log(
    `# stack-latency-bench: skipped: ${missing ? `real Heat is not installed (/usr/bin/${missing}; sudo bash test/integration/heat/install.sh)` : 'real Heat needs root'}`,
  );
  process.exit(0);
}
for (const f of ['dist/os-config-agent.mjs', 'dist/hooks/script']) {
  if (!existsSync(path.join(REPO, f))) {
    console.error(`${f} is missing: run "node scripts/build.mjs" first (npm run bench does)`);
    process.exit(1);
  }
}

// The harness is TypeScript: bundled once for this process, each file keeping its own import.meta.url so that the
// paths it derives from its location (the repository, dist/) stay right.
const harnessFile = path.join(REPO, 'node_modules/.cache/oca-stack-latency-bench/harness.mjs');
await build({
  stdin: {
    contents: [
      "export { startRealHeat } from './harness.ts';",
      "export { HeatClient, outputsOf } from './heat-client.ts';",
      "export { prepareInstance, startAgent } from './instance.ts';",
      "export { chainedTemplate, chainValue } from './chain-template.ts';",
      "export { guardGroup, stopGroup } from './processes.ts';",
    ].join('\n'),
    resolveDir: path.join(REPO, 'test/integration/heat'),
    loader: 'ts',
  },
  outfile: harnessFile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  logLevel: 'warning',
  plugins: [
    {
      name: 'own-import-meta-url',
      setup(b) {
        b.onLoad({ filter: /\.ts$/ }, (args) => ({
          contents: readFileSync(args.path, 'utf8').replaceAll(
            'import.meta.url',
            JSON.stringify(pathToFileURL(args.path).href),
          ),
          loader: 'ts',
        }));
      },
    },
  ],
});
const H = await import(harnessFile);

const ENV = {
  PATH: [...new Set([path.dirname(process.execPath), '/usr/sbin', '/usr/bin', '/sbin', '/bin'])].join(':'),
  HOME: process.env.HOME ?? '/root',
  LANG: 'C.UTF-8',
};

/** Upstream's chain on a tree under `dir` (upstream-chain.mjs), polling heat-api-cfn with the server's credentials. */
function startUpstream(dir, occ, logFile) {
  const { cfn } = occ;
  const { env, confFile } = upstreamChain(dir, {
    heatAgents: UPSTREAM,
    env: { ...ENV, TMPDIR: dir },
    collector: {
      name: 'cfn',
      options: Object.fromEntries(
        ['metadata_url', 'access_key_id', 'secret_access_key', 'stack_name', 'path'].map((k) => [k, cfn[k]]),
      ),
    },
    polling: { min: 1, max: 30 },
  });
  const out = openLog(logFile);
  const child = spawn('os-collect-config', ['--config-file', confFile], {
    env,
    detached: true,
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const forget = H.guardGroup(child);
  return {
    problem: () => (child.exitCode !== null ? `os-collect-config exited ${child.exitCode}; see ${logFile}` : undefined),
    async stop() {
      await H.stopGroup(child, exit, () => process.kill(-child.pid, 'SIGTERM'), 5000);
      forget();
    },
  };
}

function openLog(file) {
  return openSync(file, 'a', 0o600);
}

const SIDES = {
  'ours-default': { min_polling_interval: 1, polling_interval: 30 },
  'ours-poll1': { min_polling_interval: 1, polling_interval: 1 },
};

/** One stack of `links` on one side: seconds from `stack create` to CREATE_COMPLETE. */
async function timeStack(heat, client, side, links, round) {
  const stack = `latency-${side}-${links}-${round}`;
  const dir = path.join(heat.dir, 'scenarios', stack);
  mkdirSync(dir, { recursive: true });
  const logFile = path.join(heat.dir, `agent-${stack}.log`);
  const seed = `r${round}`;
  const started = Date.now();
  await client.createStack(stack, H.chainedTemplate(links), { seed });
  await client.waitResource(stack, 'server', 60_000);
  const occ = (await client.resourceMetadata(stack, 'server'))['os-collect-config'];
  const agent =
    side === 'upstream'
      ? startUpstream(dir, occ, logFile)
      : H.startAgent(H.prepareInstance(dir, occ, SIDES[side]), logFile);
  try {
    let problem;
    const watch = setInterval(() => (problem ??= agent.problem()), 500);
    const done = await client.waitFor(stack, 'CREATE', STACK_TIMEOUT_MS, 100).finally(() => clearInterval(watch));
    const seconds = (Date.now() - started) / 1000;
    const last = H.outputsOf(done).last;
    if (done.stack_status !== 'CREATE_COMPLETE' || last !== H.chainValue(seed, links))
      throw new Error(
        `${stack}: ${done.stack_status} ${done.stack_status_reason}, last = ${last} ${problem ?? ''}; see ${logFile}`,
      );
    return seconds;
  } finally {
    await agent.stop();
  }
}

const sides = [...Object.keys(SIDES), ...(UPSTREAM ? ['upstream'] : [])];
if (!UPSTREAM)
  console.log('# stack-latency-bench: upstream side left out: set HEAT_AGENTS_DIR to a heat-agents checkout');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round2 = (x) => Math.round(x * 100) / 100;
const heatStarted = Date.now();
const heat = await H.startRealHeat();
const client = new H.HeatClient(heat.keystoneUrl, heat.adminPassword, heat.apiPort);
const times = {};
let failed = false;
try {
  console.log(`# real Heat up in ${((Date.now() - heatStarted) / 1000).toFixed(1)} s; state in ${heat.dir}`);
  for (let round = 0; round < RUNS; round++) {
    for (const links of LINKS) {
      for (const side of sides) {
        const seconds = await timeStack(heat, client, side, links, round);
        (times[`${side}-${links}`] ??= []).push(seconds);
        console.log(`# ${side}, ${links} links: ${seconds.toFixed(2)} s`);
      }
    }
  }
} catch (err) {
  failed = true;
  throw err;
} finally {
  await heat.stop({ keep: failed || process.env.OCA_REAL_HEAT_KEEP === '1' });
  if (failed || process.env.OCA_REAL_HEAT_KEEP === '1') console.log(`# real-heat state and logs kept in ${heat.dir}`);
}

const result = { bench: 'stack-latency', runs: RUNS, seconds: {}, ratios: {} };
for (const [key, xs] of Object.entries(times)) result.seconds[key] = round2(median(xs));
for (const links of LINKS) {
  const s = (side) => result.seconds[`${side}-${links}`];
  result.ratios[`default/poll1-${links}`] = round2(s('ours-default') / s('ours-poll1'));
  if (UPSTREAM) result.ratios[`upstream/default-${links}`] = round2(s('upstream') / s('ours-default'));
}
// The issue's targets, reported, not asserted (a benchmark measures; tests assert).
result.targets = {
  defaultAtMost20PercentSlowerThanPoll1: LINKS.every((l) => result.ratios[`default/poll1-${l}`] <= 1.2),
  atLeast5xFasterThanUpstreamAt6: UPSTREAM ? result.ratios['upstream/default-6'] >= 5 : 'upstream not run',
};
console.log(JSON.stringify(result));
