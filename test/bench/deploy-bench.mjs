// Benchmark (issues 5 and 18): 50 script deployments end to end (hook run + signal to a local sink) with
// `os-config-agent deploy --heat-config FILE`, the built script hook run in-process. Reports the wall time, the cost of
// the config scripts alone and of the hook as a process alone, and the agent's overhead per deployment beyond the
// script's own run. With HEAT_AGENTS_DIR pointing at an openstack/heat-agents checkout (never committed), the
// upstream chain runs on the same input in the same run: 55-heat-config + hook-script.py + heat-config-notify.
// Prints one JSON summary line.
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { measure, median, withThisNode } from './measure.mjs';

const COUNT = Number(process.env.BENCH_DEPLOYMENTS ?? 50);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bundle = path.join(REPO, 'dist/os-config-agent.mjs');
const UPSTREAM = process.env.HEAT_AGENTS_DIR;

if (!existsSync(bundle)) {
  console.error(`${bundle} is missing: run "node scripts/build.mjs" first (npm run bench does)`);
  process.exit(1);
}

// The signal sink runs in its own process: measure() blocks this one while a run is in progress.
const SINK = `
const http = require('node:http');
let count = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'GET' && req.url === '/count') { res.end(String(count)); return; }
    if (req.method === 'POST' && req.url.startsWith('/v1/signal/')) {
      try { JSON.parse(Buffer.concat(chunks).toString()); count++; res.writeHead(200); res.end(); }
      catch { res.writeHead(400); res.end('not json'); }
      return;
    }
    res.writeHead(404); res.end();
  });
});
// No idle timeout: this process reads the count between runs that block it for longer than Node's 5 s default, and
// fetch would reuse a connection the sink had closed meanwhile.
server.keepAliveTimeout = 0;
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
`;

async function startSink() {
  const child = spawn(process.execPath, ['-e', SINK], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve) => child.stdout.once('data', (c) => resolve(Number(String(c).trim()))));
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async count() {
      return Number(await (await globalThis.fetch(`${url}/count`)).text());
    },
    stop: () => child.kill('SIGTERM'),
  };
}

function deployments(sinkUrl, tag) {
  return Array.from({ length: COUNT }, (_, i) => {
    const id = `${tag}-${String(i).padStart(3, '0')}-5c1e0000-0000-4000-8000-000000000000`;
    return {
      id,
      name: `deployment-${i}`,
      group: 'script',
      creation_time: '2026-01-01T00:00:00Z',
      options: {},
      config: '#!/bin/sh\necho "deployment $n on $deploy_server_id"\nprintf "%s" "$n" > "$heat_outputs_path.result"\n',
      inputs: [
        { name: 'n', type: 'String', value: String(i) },
        { name: 'deploy_server_id', type: 'String', value: 'bench-server' },
        { name: 'deploy_action', type: 'String', value: 'CREATE' },
        { name: 'deploy_stack_id', type: 'String', value: 'bench/00000000-0000-4000-8000-000000000000' },
        { name: 'deploy_resource_name', type: 'String', value: `deployment-${i}` },
        { name: 'deploy_signal_transport', type: 'String', value: 'CFN_SIGNAL' },
        {
          name: 'deploy_signal_id',
          type: 'String',
          value: `${sinkUrl}/v1/signal/${id}?SignatureMethod=HmacSHA256&SignatureVersion=2&AWSAccessKeyId=BENCH&Signature=bench`,
        },
        { name: 'deploy_signal_verb', type: 'String', value: 'POST' },
      ],
      outputs: [{ name: 'result', type: 'String', description: '', error_output: false }],
    };
  });
}

/** Our script hook: the built one (dist/hooks/script), which the agent recognises and runs in-process. */
function installOurHook(dir) {
  mkdirSync(dir, { recursive: true });
  copyFileSync(path.join(REPO, 'dist/hooks/script'), path.join(dir, 'script'));
  chmodSync(path.join(dir, 'script'), 0o755);
  return 'dist/hooks/script';
}

function installUpstreamHook(dir) {
  mkdirSync(dir, { recursive: true });
  copyFileSync(path.join(UPSTREAM, 'heat-config-script/install.d/hook-script.py'), path.join(dir, 'script'));
  chmodSync(path.join(dir, 'script'), 0o755);
}

/** The hook alone, run COUNT times in a row on the same deployments, as a process each. */
function hookOnly(hook, list, env) {
  const started = process.hrtime.bigint();
  for (const d of list) {
    const res = spawnSync(hook, [], { input: JSON.stringify(d), env, encoding: 'utf8', timeout: 60_000 });
    if (res.status !== 0) throw new Error(`hook failed: ${res.stderr}`);
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/**
 * The config scripts alone, run COUNT times in a row as the script hook runs them (an executable file, the inputs in
 * its environment): what no agent can avoid. Wall time minus this, per deployment, is the agent's overhead.
 */
function scriptsOnly(dir, list, env) {
  mkdirSync(dir, { recursive: true });
  const started = process.hrtime.bigint();
  for (const d of list) {
    const file = path.join(dir, d.id);
    writeFileSync(file, d.config, { mode: 0o700 });
    const inputs = Object.fromEntries(d.inputs.map((i) => [i.name, i.value]));
    const res = spawnSync(file, [], {
      env: { ...env, ...inputs, heat_outputs_path: path.join(dir, `${d.id}.out`) },
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (res.status !== 0) throw new Error(`script failed: ${res.stderr}`);
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const base = mkdtempSync(path.join(os.tmpdir(), 'oca-bench-deploy-'));
const sink = await startSink();
const result = { bench: 'deploy-50-script-deployments', deployments: COUNT, runs: RUNS };
try {
  // Ours.
  const ours = { wall: [], rssKb: [], cpu: [], hook: [], scripts: [], empty: [] };
  let signals = await sink.count();
  for (let r = 0; r < RUNS; r++) {
    const root = path.join(base, `ours-${r}`);
    const hooks = path.join(root, 'var/lib/heat-config/hooks');
    result.ourHook = installOurHook(hooks);
    const work = path.join(root, 'var/lib/heat-config/heat-config-script');
    const env = {
      ...process.env,
      HEAT_SCRIPT_WORKING: work,
      HEAT_SCRIPT_OUTPUTS: path.join(root, 'var/run/heat-config/heat-config-script'),
    };
    const list = deployments(sink.url, `o${r}`);
    writeFileSync(path.join(root, 'heat-config.json'), JSON.stringify(list));
    writeFileSync(path.join(root, 'empty.json'), '[]');
    ours.empty.push(
      measure([bundle, 'deploy', '--root', root, '--heat-config', '/empty.json'], { env: withThisNode(env) }).wall,
    );
    const run = measure(
      [bundle, 'deploy', '--root', root, '--heat-config', '/heat-config.json', '--log-level', 'warn'],
      { env: withThisNode(env) },
    );
    if (run.status !== 0) throw new Error(`os-config-agent deploy exited ${run.status}: ${run.stderr}`);
    const now = await sink.count();
    if (now - signals !== COUNT) throw new Error(`expected ${COUNT} signals, got ${now - signals}`);
    signals = now;
    ours.wall.push(run.wall);
    ours.rssKb.push(run.rssKb ?? 0);
    ours.cpu.push(run.cpu ?? 0);
    ours.hook.push(hookOnly(path.join(hooks, 'script'), deployments(sink.url, `h${r}`), env));
    ours.scripts.push(scriptsOnly(path.join(root, 'scripts-only'), deployments(sink.url, `s${r}`), env));
  }
  result.ours = summarise(ours);

  if (UPSTREAM) {
    const heatConfig = path.join(UPSTREAM, 'heat-config/os-refresh-config/configure.d/55-heat-config');
    const notify = path.join(UPSTREAM, 'heat-config/bin/heat-config-notify');
    if (!existsSync(heatConfig) || !existsSync(notify))
      throw new Error(`HEAT_AGENTS_DIR=${UPSTREAM} has no heat-config/ (55-heat-config, heat-config-notify)`);
    const up = { wall: [], rssKb: [], cpu: [], hook: [], scripts: [], empty: [] };
    for (let r = 0; r < RUNS; r++) {
      const root = path.join(base, `upstream-${r}`);
      const hooks = path.join(root, 'hooks');
      installUpstreamHook(hooks);
      const list = deployments(sink.url, `u${r}`);
      const config = path.join(root, 'heat-config');
      writeFileSync(config, JSON.stringify(list), { mode: 0o600 });
      writeFileSync(path.join(root, 'empty'), '[]', { mode: 0o600 });
      const env = {
        ...process.env,
        HEAT_SHELL_CONFIG: config,
        HEAT_CONFIG_HOOKS: hooks,
        HEAT_CONFIG_DEPLOYED: path.join(root, 'deployed'),
        HEAT_CONFIG_DEPLOYED_OLD: path.join(root, 'deployed-old'),
        HEAT_CONFIG_NOTIFY: notify,
        HEAT_SCRIPT_WORKING: path.join(root, 'work'),
        HEAT_SCRIPT_OUTPUTS: path.join(root, 'outputs'),
      };
      up.empty.push(
        measure(['python3', heatConfig], {
          env: {
            ...env,
            HEAT_SHELL_CONFIG: path.join(root, 'empty'),
            HEAT_CONFIG_DEPLOYED: path.join(root, 'deployed-empty'),
          },
        }).wall,
      );
      const run = measure(['python3', heatConfig], { env });
      if (run.status !== 0) throw new Error(`55-heat-config exited ${run.status}: ${run.stderr.slice(-2000)}`);
      const now = await sink.count();
      if (now - signals !== COUNT) throw new Error(`upstream: expected ${COUNT} signals, got ${now - signals}`);
      signals = now;
      const deployed = readdirSync(path.join(root, 'deployed')).filter((f) => f.endsWith('.notify.json')).length;
      if (deployed !== COUNT) throw new Error(`upstream wrote ${deployed} notify files`);
      up.wall.push(run.wall);
      up.rssKb.push(run.rssKb ?? 0);
      up.cpu.push(run.cpu ?? 0);
      up.hook.push(hookOnly(path.join(hooks, 'script'), deployments(sink.url, `v${r}`), env));
      up.scripts.push(scriptsOnly(path.join(root, 'scripts-only'), deployments(sink.url, `w${r}`), env));
    }
    result.upstream = summarise(up);
    result.speedup = +(result.upstream.wallS / result.ours.wallS).toFixed(2);
    result.overheadRatio = +(result.upstream.overheadPerDeploymentMs / result.ours.overheadPerDeploymentMs).toFixed(2);
  } else {
    result.upstream = 'not run (set HEAT_AGENTS_DIR to an openstack/heat-agents checkout to compare)';
  }
} finally {
  sink.stop();
  rmSync(base, { recursive: true, force: true });
}
console.log(JSON.stringify(result));

function summarise(s) {
  const wall = median(s.wall);
  const hook = median(s.hook);
  return {
    wallS: +wall.toFixed(3),
    cpuS: +median(s.cpu).toFixed(3),
    peakRssMb: +(Math.max(...s.rssKb) / 1024).toFixed(1),
    perDeploymentMs: +((wall / COUNT) * 1000).toFixed(1),
    // The hook run as a process on its own (ours runs in-process in the agent, so this is what an out-of-process run
    // of it would cost).
    hookOnlyPerDeploymentMs: +((hook / COUNT) * 1000).toFixed(1),
    scriptOnlyPerDeploymentMs: +((median(s.scripts) / COUNT) * 1000).toFixed(1),
    // Everything but the config scripts' own runs: start-up, hooks, state writes, signalling.
    overheadPerDeploymentMs: +(((wall - median(s.scripts)) / COUNT) * 1000).toFixed(1),
    // The same less the process's start and end (a run with no deployments), each run against its own: what one more
    // deployment costs a running agent (issue 30's figure; the daemon starts once per boot).
    overheadBeyondStartPerDeploymentMs: +(
      median(s.wall.map((w, r) => w - s.scripts[r] - s.empty[r])) *
      (1000 / COUNT)
    ).toFixed(1),
    emptyRunS: +median(s.empty).toFixed(3),
  };
}
