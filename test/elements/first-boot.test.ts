import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { recordingCommand } from '../helpers/agent-root.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { startOrchestrator, type Orchestrator } from '../helpers/orchestrator/orchestrator.js';
import { installElements, makeNodeTarball, makeSource } from './dib-sim.js';

// First boot of an image built with the os-config-agent element, without the VM: the elements are installed into a
// directory root, then the installed launcher runs `os-config-agent run` on that root (--root) with nothing but what
// the image ships (its /etc/os-collect-config.conf has no collectors line) and what cloud-init leaves for a Heat
// server with user_data_format SOFTWARE_CONFIG: Heat's part-handler writes the server metadata to
// /var/lib/heat-cfntools/cfn-init-data. The simulated Heat (loopback) serves CFN metadata and the EC2 metadata
// service; the first cycle must reach CFN with no manual step.
//
// The ec2 collector is pointed at the loopback service on the command line (the image's default URL must never be
// contacted from a test), and the pipeline is a recording command, so this checks collection and
// self-configuration; whole-cycle deployments are covered by test/e2e.

interface Run {
  code: Promise<number | null>;
  out: () => string;
  kill: (signal: NodeJS.Signals) => void;
}

function startLauncher(root: string, args: string[]): Run {
  const child = spawn(path.join(root, 'usr/local/bin/os-config-agent'), ['run', '--root', root, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = new Promise<number | null>((resolve) =>
    child.on('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    }),
  );
  return { code, out: () => out, kill: (s) => child.kill(s) };
}

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function runs(file: string): Array<{ files: string }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { files: string });
}

async function image(t: { testdir(): string; teardown(fn: () => unknown): void }) {
  const dir = t.testdir();
  const { root } = installElements(dir, ['os-config-agent', 'heat-config-script'], {
    DIB_OS_CONFIG_AGENT_SOURCE: makeSource(path.join(dir, 'src')),
    DIB_OS_CONFIG_AGENT_NODE_TARBALL: makeNodeTarball(dir),
  });
  const o = await startOrchestrator({ transport: 'POLL_SERVER_CFN' });
  t.teardown(() => o.close());
  o.addDeployment({ name: 'settings', group: 'os-apply-config', config: { app: { port: 8080 } }, signal: 'NO_SIGNAL' });
  o.addDeployment({ name: 'hello', group: 'script', config: '#!/bin/sh\necho hello\n' });
  const cmd = recordingCommand(dir);
  const args = [
    '--ec2-metadata-url',
    `${o.url}/latest/meta-data`,
    '--no-agent-native-pipeline',
    '--command',
    cmd.command,
  ];
  return { root, o, cmd, args };
}

/** What Heat's cloud-init part-handler leaves: the server metadata, in a root-only directory. */
function cloudInitWritesBootData(root: string, o: Orchestrator): void {
  const dir = path.join(root, 'var/lib/heat-cfntools');
  writeFileSync(path.join(dir, 'cfn-init-data'), JSON.stringify(o.metadata()));
  writeFileSync(path.join(dir, 'cfn-metadata-server'), `${o.url}/v1/`);
}

function checkConfigured(t: TapTest, root: string, o: Orchestrator, out: string): void {
  const conf = path.join(root, 'etc/os-collect-config.conf');
  const text = readFileSync(conf, 'utf8');
  t.match(text, /^collectors = cfn$/m, "the agent rewrote its configuration with Heat's collectors");
  t.match(text, /^\[cfn\]$/m);
  t.match(text, `metadata_url = ${o.url}/v1/`);
  t.equal(statSync(conf).mode & 0o777, 0o600, 'still 0600: it now holds the CFN secret');
  t.ok((o.requests.cfn ?? 0) > 0, 'CFN polled');
  const cache = path.join(root, 'var/lib/os-collect-config');
  t.equal(statSync(cache).mode & 0o777, 0o700);
  for (const key of ['cfn', 'settings'])
    t.equal(statSync(path.join(cache, `${key}.json`)).mode & 0o777, 0o600, `${key} cached, 0600`);
  t.notOk(out.includes(o.creds.cfnSecret), 'the CFN secret is in no log line');
}

t.test('first boot: heat_local data in place when the service starts', async (t) => {
  const { root, o, cmd, args } = await image(t);
  cloudInitWritesBootData(root, o);
  const run = startLauncher(root, ['--one-time', ...args]);
  t.equal(await run.code, 0, run.out());
  t.ok((o.requests.ec2 ?? 0) > 0, "the image's default collectors were used (ec2 among them)");
  checkConfigured(t, root, o, run.out());
  const done = runs(cmd.record);
  t.equal(done.length, 1, 'the pipeline ran once, in the first cycle');
  t.match(done[0]?.files, /cfn\.json/, 'with the CFN data already');
  t.notMatch(done[0]?.files, /heat_local\.json/, "Heat's collector list (cfn, local) already applies");
  t.match(done[0]?.files, /settings\.json/, 'and the exploded os-apply-config deployment');
});

t.test('first boot: the agent started before cloud-init wrote the data', async (t) => {
  const { root, o, cmd, args } = await image(t);
  const run = startLauncher(root, ['--min-polling-interval', '0.2', '--polling-interval', '1', ...args]);
  t.teardown(() => run.kill('SIGKILL'));
  await until('the agent to poll once', () => (o.requests.ec2 ?? 0) > 0);
  t.equal(o.requests.cfn ?? 0, 0, 'nothing to say where CFN is yet');
  cloudInitWritesBootData(root, o);
  await until('the pipeline to run with CFN data', () => runs(cmd.record).some((r) => r.files.includes('cfn.json')));
  checkConfigured(t, root, o, run.out());
  run.kill('SIGTERM');
  t.equal(await run.code, 0, 'SIGTERM stops the service cleanly');
});
