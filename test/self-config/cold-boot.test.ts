import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { Agent } from '../../src/daemon/agent.js';
import type { AgentDeps } from '../../src/daemon/agent-deps.js';
import { createHttpClient } from '../../src/http/client.js';
import { selfConfigHook } from '../../src/self-config/self-config-hook.js';
import { makeAgentRoot, recordingCommand } from '../helpers/agent-root.js';
import { runBundle } from '../helpers/bundle.js';
import { startCfnServer, type CfnServer } from '../helpers/cfn-server.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { captureLog, type CapturedLog } from '../helpers/log-capture.js';

// Integration: a cold boot where only heat_local has data (cloud-init's cfn-init-data with Heat's os-collect-config
// section pointing at a loopback heat-api-cfn). In ONE cycle the agent rewrites its config file (0600), reloads,
// collects from cfn with a signature the server verifies, and runs the command once with the cfn data.
// Upstream needed a command run, a config-hash check and a re-exec for the same result.

async function cfnWithMetadata(t: { teardown(fn: () => unknown): void }) {
  const cfn = await startCfnServer();
  t.teardown(() => cfn.close());
  const agentSection = {
    collectors: ['cfn', 'local'],
    cfn: {
      metadata_url: cfn.metadataUrl,
      access_key_id: cfn.accessKey,
      secret_access_key: cfn.secret,
      stack_name: cfn.stackName,
      path: 'server.Metadata',
    },
  };
  // What heat-api-cfn serves now: the same agent section plus a deployment the boot data does not have yet.
  cfn.resources.set(
    'server',
    JSON.stringify({
      'os-collect-config': agentSection,
      deployments: [
        { id: 'd-1', name: 'settings', group: 'os-apply-config', config: { app: { port: 8080 } } },
        { id: 'd-2', name: 'hello', group: 'script', config: '#!/bin/sh\necho hi\n' },
      ],
    }),
  );
  return { cfn, bootData: { 'os-collect-config': agentSection, deployments: [] } };
}

function runs(file: string): Array<{ files: string }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { files: string });
}

function deps(root: string, log: CapturedLog, cli: AgentDeps['sources']['cli'] = {}): AgentDeps {
  return {
    sources: { root, cli },
    log: log.log,
    mode: 'collect',
    createHttp: (loaded) =>
      createHttpClient({ defaultMaxBytes: loaded.config.agent.http_max_bytes, defaultRetries: 0 }),
    afterCollect: [selfConfigHook],
    random: () => 0,
  };
}

function auditSecrets(t: TapTest, cfn: CfnServer, log: CapturedLog, root: string): void {
  const signatures = cfn.requests
    .map((r) => new URL(r.url, 'http://x').searchParams.get('Signature'))
    .filter((s): s is string => !!s);
  t.ok(signatures.length > 0);
  for (const s of [cfn.secret, ...signatures])
    t.notOk(log.text().includes(s), 'no cfn secret or signature in any log line');
  for (const file of walk(root)) {
    if (statSync(file).mode & 0o044)
      t.notOk(
        readFileSync(file, 'utf8').includes(cfn.secret),
        `group/world-readable ${path.relative(root, file)} holds no secret`,
      );
  }
}

t.test('existing minimal config: one cycle reconfigures, reloads and collects cfn', async (t) => {
  const { cfn, bootData } = await cfnWithMetadata(t);
  const dir = t.testdir();
  const cmd = recordingCommand(dir);
  const root = makeAgentRoot(
    path.join(dir, 'root'),
    `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = heat_local\n[agent]\nwatch = false\n`,
  );
  root.writeHeatLocal(bootData);
  const log = captureLog();
  const agent = await Agent.create(deps(root.root, log));
  const signal = new AbortController().signal;

  const report = await agent.cycle(signal);
  t.equal(report.exitCode, 0);
  t.same(report.changedKeys, ['cfn', 'settings'], 'cfn data collected in the same cycle, deployments exploded');
  t.same(cfn.verdicts, [true], 'the cfn server verified the signature');
  const cache = path.join(root.root, 'var/lib/os-collect-config');
  t.same(
    runs(cmd.record).map((r) => r.files),
    [`${cache}/cfn.json:${cache}/settings.json`],
    'the command ran once, with the cfn data',
  );
  const conf = readFileSync(root.configFile, 'utf8');
  t.equal(statSync(root.configFile).mode & 0o777, 0o600, 'config file written 0600');
  t.match(conf, /\[DEFAULT\]\ncommand = .*record\.sh\ncollectors = cfn\ncollectors = local\n/);
  t.match(conf, new RegExp(`\\[cfn\\]\\nmetadata_url = ${cfn.metadataUrl.replace(/[.?/]/g, '\\$&')}\\n`));
  t.match(conf, /\[agent\]\nwatch = false\n/, "the agent's own section is kept");
  t.same(agent.loaded.config.DEFAULT.collectors, ['cfn', 'local'], 'the running agent uses the new configuration');

  // Next poll: the new source, no rewrite, no reload, no command run.
  const ino = statSync(root.configFile).ino;
  const next = await agent.cycle(signal);
  t.same(next.changedKeys, []);
  t.equal(runs(cmd.record).length, 1);
  t.equal(statSync(root.configFile).ino, ino, 'config file not rewritten');
  t.same(cfn.verdicts, [true, true], 'cfn polled again');
  t.equal(log.lines.filter((l) => l.msg === 'configuration reloaded').length, 1);
  auditSecrets(t, cfn, log, root.root);
});

t.test(
  'no config file at all (--one-time, collectors on the command line): the file is created and used',
  async (t) => {
    const { cfn, bootData } = await cfnWithMetadata(t);
    const dir = t.testdir();
    const cmd = recordingCommand(dir);
    const root = makeAgentRoot(path.join(dir, 'root'), '');
    // makeAgentRoot always writes a config file; a cold image has none.
    rmSync(root.configFile);
    root.writeHeatLocal(bootData);
    const log = captureLog();
    const agent = await Agent.create(
      deps(root.root, log, {
        DEFAULT: { command: cmd.command, collectors: ['heat_local', 'cfn'], one_time: true },
        agent: { watch: false },
      }),
    );
    t.same(agent.loaded.files, [], 'started without a config file');
    const code = await agent.run(new AbortController().signal);
    t.equal(code, 0);
    t.equal(statSync(root.configFile).mode & 0o777, 0o600);
    t.same(agent.loaded.files, [root.configFile], 'the written file was discovered on reload');
    t.equal(agent.loaded.config.cfn.stack_name, cfn.stackName);
    const cache = path.join(root.root, 'var/lib/os-collect-config');
    t.same(
      runs(cmd.record).map((r) => r.files),
      [`${cache}/heat_local.json:${cache}/cfn.json:${cache}/settings.json`],
      'command-line collectors still decide the order; cfn is now configured',
    );
    t.match(
      readFileSync(root.configFile, 'utf8'),
      /command = os-refresh-config\n/,
      "the template's default command is written (the command line overrides it)",
    );
    auditSecrets(t, cfn, log, root.root);
  },
);

t.test(
  'the real bundle: `os-config-agent run --root DIR --one-time` reconfigures itself and collects cfn in one run',
  async (t) => {
    const { cfn, bootData } = await cfnWithMetadata(t);
    const dir = t.testdir();
    const cmd = recordingCommand(dir);
    const root = makeAgentRoot(
      path.join(dir, 'root'),
      `[DEFAULT]\ncommand = ${cmd.command}\ncollectors = heat_local\n[agent]\nwatch = false\nnative_pipeline = false\n`,
    );
    root.writeHeatLocal(bootData);
    const run = await runBundle(['run', '--root', root.root, '--one-time'], { timeoutMs: 30_000 });
    const output = `${run.stdout}${run.stderr}`;
    t.equal(run.code, 0, output);
    const cache = path.join(root.root, 'var/lib/os-collect-config');
    t.same(
      runs(cmd.record).map((r) => r.files),
      [`${cache}/cfn.json:${cache}/settings.json`],
    );
    t.equal(statSync(root.configFile).mode & 0o777, 0o600);
    t.match(readFileSync(root.configFile, 'utf8'), /collectors = cfn\ncollectors = local\n/);
    t.same(cfn.verdicts, [true]);
    const signatures = cfn.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('Signature') ?? '');
    for (const s of [cfn.secret, ...signatures]) t.notOk(output.includes(s), 'no secret or signature on stdout/stderr');
    t.match(output, /agent configuration rewritten from os-collect-config metadata; reloading/);
  },
);

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...walk(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}
