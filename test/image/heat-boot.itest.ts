import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { HeatClient, outputsOf, type Stack } from '../integration/heat/heat-client.js';
import { startRealHeat, type RealHeat } from '../integration/heat/harness.js';
import { waitUntil } from '../integration/heat/processes.js';
import { bootContainer, type Container } from './container.js';
import { scopeCommand } from '../../src/util/systemd-scope.js';

// A real image against real Heat: the tree test/image/build-image.sh built with cloud-init (NoCloud) and the agent's
// elements boots with systemd as PID 1 under systemd-nspawn, sharing this machine's network so it reaches Heat on
// 127.0.0.1. Its NoCloud seed carries the user-data Heat itself builds for a SOFTWARE_CONFIG server (heat-userdata.py:
// Heat's part-handler and the `cfn-init-data` part holding the metadata of a real DeployedServer/POLL_SERVER_CFN
// stack). Nothing is done inside the image by hand: cloud-init, the part-handler, the unit and the agent must take the
// stack to CREATE_COMPLETE. Then the operator's view (journal, `os-config-agent status`) and a reboot of the same tree.
// Needs root, the real-Heat packages and a built tree; run it through test/image/heat-boot.sh (see README.md there).
//
// The only things the test adds to the container, read-only from outside and named here: the seed, an agent drop-in
// that empties `[ec2] metadata_url` (the image's built-in collector list includes the EC2 metadata service at
// 169.254.169.254, which must never be asked from this machine; a collectors line instead would change the merge
// order of the collected data), a cloud-init drop-in that turns network configuration off (the
// container shares the host's interfaces) and a journald drop-in copying the journal to the console log.

const HERE = path.dirname(fileURLToPath(import.meta.url));
const WORK = process.env.OCA_IMAGE_WORK ?? '/var/tmp/oca-heat-image';
const TREE = path.join(WORK, 'tree');
const ROOT = path.join(WORK, 'boot-root');
const BOOT = path.join(WORK, 'heat-boot');
const STACK = 'boot';
const HOSTNAME = 'boot-test-server';
const GREETING = 'hello from heat';
const CREATE_TIMEOUT_MS = 180_000;
const run = promisify(execFile);

let heat: RealHeat | undefined;
let client: HeatClient;
let container: Container | undefined;
/** Filled by the first boot, read by the reboot. */
const firstBoot = { done: false, runs: '', bridgeCalls: 0, binds: {} as Record<string, string>, ids: { first: '', second: '', cfn: '' } };

t.before(async () => {
  if (process.getuid?.() !== 0) throw new Error('run as root (systemd-nspawn, nsenter)');
  for (const tool of ['/usr/bin/systemd-nspawn', '/usr/bin/nsenter', '/usr/bin/heat-all', '/usr/bin/keystone-wsgi-public']) {
    if (!existsSync(tool)) throw new Error(`${tool} is missing: apt-get install -y systemd-container util-linux, and run "sudo bash test/integration/heat/install.sh"`);
  }
  if (!existsSync(path.join(TREE, 'usr/bin/cloud-init')) || !existsSync(path.join(TREE, 'opt/os-config-agent/bin/os-config-agent'))) {
    throw new Error(`no tree with cloud-init and the agent in ${TREE}: run "OS_CONFIG_AGENT_IMAGE_CLOUD_INIT=1 OS_CONFIG_AGENT_IMAGE_ELEMENTS='heat-config-script heat-config-cfn-init' test/image/build-image.sh ${WORK}" first`);
  }
  const started = Date.now();
  heat = await startRealHeat();
  client = new HeatClient(heat.keystoneUrl, heat.adminPassword, heat.apiPort);
  t.comment(`real Heat up in ${((Date.now() - started) / 1000).toFixed(1)} s; state in ${heat.dir}`);
});

t.teardown(async () => {
  await container?.stop();
  if (!heat) return;
  const keep = !t.passing() || process.env.OCA_REAL_HEAT_KEEP === '1';
  await heat.stop({ keep });
  if (keep) t.comment(`real-heat state and logs kept in ${heat.dir}; the booted tree is ${ROOT}, console logs in ${BOOT}`);
});

/** The seed and drop-ins the container gets (see the header). Host path -> container path. */
function prepareBoot(metadata: unknown, instanceId: string): Record<string, string> {
  rmSync(BOOT, { recursive: true, force: true });
  for (const d of ['seed', 'occ.conf.d', 'journald']) mkdirSync(path.join(BOOT, d), { recursive: true });
  const metadataFile = path.join(BOOT, 'server-metadata.json');
  writeFileSync(metadataFile, JSON.stringify(metadata), { mode: 0o600 });
  writeFileSync(path.join(BOOT, 'seed/meta-data'), `instance-id: ${instanceId}\nlocal-hostname: ${HOSTNAME}\n`);
  // An empty [ec2] metadata_url leaves that collector unconfigured (skipped); the collector list stays the image's.
  writeFileSync(path.join(BOOT, 'occ.conf.d/boot-test.conf'), '[ec2]\nmetadata_url =\n');
  writeFileSync(path.join(BOOT, 'cloud-no-network.cfg'), 'network: {config: disabled}\n');
  writeFileSync(path.join(BOOT, 'journald/console.conf'), '[Journal]\nForwardToConsole=yes\nMaxLevelConsole=info\n');
  return {
    [path.join(BOOT, 'seed')]: '/var/lib/cloud/seed/nocloud',
    [path.join(BOOT, 'occ.conf.d')]: '/etc/os-collect-config.conf.d',
    [path.join(BOOT, 'cloud-no-network.cfg')]: '/etc/cloud/cloud.cfg.d/99-boot-test-no-network.cfg',
    [path.join(BOOT, 'journald')]: '/etc/systemd/journald.conf.d',
  };
}

/** Waits for the stack's CREATE to end; fails at once if the container goes away. */
async function settle(c: Container): Promise<Stack> {
  let exited: number | string | undefined;
  void c.service.exited.then((r) => (exited = r));
  const deadline = Date.now() + CREATE_TIMEOUT_MS;
  for (;;) {
    if (exited !== undefined) throw new Error(`the container exited (${exited}) before the stack completed; console: ${c.service.logFile}`);
    const s = await client.stack(STACK);
    if (!s) throw new Error(`stack ${STACK} disappeared`);
    if (/^CREATE_(COMPLETE|FAILED)$/.test(s.stack_status)) return s;
    if (Date.now() > deadline) throw new Error(`stack ${STACK} still ${s.stack_status} after ${CREATE_TIMEOUT_MS} ms; console: ${c.service.logFile}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function signalEvents(resource: string): Promise<number> {
  return (await client.events(STACK, resource)).filter((e) => e.resource_status.startsWith('SIGNAL')).length;
}

async function monotonic(c: Container, unit: string, property: string): Promise<number> {
  return Number((await c.exec(['systemctl', 'show', '-p', property, '--value', unit])).trim());
}

interface JournalLine {
  msg?: string;
  deploymentId?: string;
  from?: string | null;
  to?: string;
}

function parseJson(lines: string): JournalLine[] {
  return lines
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as JournalLine);
}

/** What must never appear in a log: the CFN secret key and each pre-signed signal URL's signature. */
function secretsOf(metadata: Record<string, unknown>): string[] {
  const occ = metadata['os-collect-config'] as { cfn: { secret_access_key: string } };
  const out = [occ.cfn.secret_access_key];
  for (const d of (metadata.deployments ?? []) as Array<{ inputs: Array<{ name: string; value: unknown }> }>) {
    const url = d.inputs.find((i) => i.name === 'deploy_signal_id')?.value;
    const sig = typeof url === 'string' ? new URL(url).searchParams.get('Signature') : null;
    if (sig) out.push(sig, encodeURIComponent(sig));
  }
  return out;
}

t.test('first boot: cloud-init hands over Heat\'s data, the agent runs both deployments, the stack completes', { timeout: 420_000 }, async (t) => {
  await client.createStack(STACK, readFileSync(path.join(HERE, 'templates/boot.yaml'), 'utf8'), { greeting: GREETING });
  await client.waitResource(STACK, 'server', 60_000);
  const metadata = await client.resourceMetadata(STACK, 'server');
  const occ = metadata['os-collect-config'] as { collectors: string[] };
  t.same(occ.collectors, ['cfn', 'local'], 'Heat gives the server the CFN transport');
  const binds = prepareBoot(metadata, await client.resourceId(STACK, 'server'));
  const { stdout: userData } = await run('/usr/bin/python3', [path.join(HERE, 'heat-userdata.py'), path.join(BOOT, 'server-metadata.json')], { timeout: 60_000 });
  t.match(userData, /Content-Type: text\/part-handler/, 'the user-data carries Heat\'s part-handler');
  t.match(userData, /Content-Type: text\/x-cfninitdata[^]*filename="cfn-init-data"/, 'and the cfn-init-data part');
  writeFileSync(path.join(BOOT, 'seed/user-data'), userData, { mode: 0o600 });

  // A fresh copy of the built tree: the reboot boots this copy again, the built tree stays as built.
  rmSync(ROOT, { recursive: true, force: true });
  const copyStart = Date.now();
  await run('cp', ['-a', '--reflink=auto', TREE, ROOT], { timeout: 300_000 });
  t.comment(`tree copied in ${((Date.now() - copyStart) / 1000).toFixed(1)} s`);

  const c = bootContainer({ tree: ROOT, consoleLog: path.join(BOOT, 'console-1.log'), bindRo: binds, hostname: HOSTNAME });
  container = c;
  const done = await settle(c);
  const seconds = (Date.now() - c.startedAt) / 1000;
  t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
  const out = outputsOf(done);
  t.equal(out.echoed, `first says ${GREETING}`, 'the first deployment\'s output');
  t.equal(out.seen, `second saw [first says ${GREETING}]`, 'the second deployment got the first\'s output as input');
  t.equal(out.hostname, HOSTNAME, 'the script ran inside the booted system');
  t.equal(out.first_status, 0, 'deploy_status_code');
  t.equal(out.first_stdout, 'first deployment ran\n', 'deploy_stdout');
  t.equal(await signalEvents('first'), 1, 'first deployment signalled once');
  t.equal(await signalEvents('second'), 1, 'second deployment signalled once');
  t.equal(out.cfn_status, 0, 'the cfn-init deployment succeeded');
  t.equal(await signalEvents('cfn'), 1, 'cfn-init deployment signalled once');
  t.comment(`container start -> CREATE_COMPLETE: ${seconds.toFixed(1)} s`);

  // cfn-init, native, with systemd as PID 1: the unit it wrote is enabled and running, its files have their modes.
  t.equal((await c.exec(['systemctl', 'is-active', 'boot-test-web.service']).catch((e: { stdout?: string }) => e.stdout ?? '')).trim(), 'active', 'cfn-init started the service');
  t.equal((await c.exec(['systemctl', 'is-enabled', 'boot-test-web.service']).catch((e: { stdout?: string }) => e.stdout ?? '')).trim(), 'enabled', 'and enabled it');
  t.equal(await c.exec(['cat', '/etc/boot-test/cfn.conf']), 'written by cfn-init\n');
  t.equal((await c.exec(['stat', '-c', '%a', '/etc/boot-test/cfn.conf'])).trim(), '600', 'with its mode');
  t.notOk((await c.exec(['sh', '-c', 'command -v cfn-init || true'])).trim(), 'without heat-cfntools in the image (cloud-init brings Python; the hook needs none)');
  writeFileSync(path.join(BOOT, 'create-seconds'), `${seconds.toFixed(1)}\n`);

  // What cloud-init and the part-handler did.
  const cfnInit = await c.exec(['cat', '/var/lib/heat-cfntools/cfn-init-data']);
  t.same(JSON.parse(cfnInit), metadata, 'the part-handler wrote the server metadata to /var/lib/heat-cfntools/cfn-init-data');
  t.match(await c.exec(['cat', '/var/log/part-handler.log']), /filename:cfn-init-data, ctype:text\/x-cfninitdata/, 'Heat\'s part-handler ran');
  t.equal((await c.exec(['stat', '-c', '%a', '/var/lib/heat-cfntools'])).trim(), '700', 'its directory is 0700');
  t.equal((await c.exec(['cloud-init', 'status'], 60_000).catch((e: { stdout?: string }) => e.stdout ?? '')).trim(), 'status: done', 'cloud-init finished');

  // The unit: started once, after cloud-init's last stage.
  const agentStart = await monotonic(c, 'os-config-agent.service', 'ExecMainStartTimestampMonotonic');
  const finalDone = await monotonic(c, 'cloud-final.service', 'ActiveEnterTimestampMonotonic');
  const initDone = await monotonic(c, 'cloud-init.service', 'ActiveEnterTimestampMonotonic');
  t.ok(initDone > 0 && finalDone > 0 && agentStart >= finalDone, `the agent started after cloud-init (${initDone}) and cloud-final (${finalDone}): ${agentStart}`);
  t.equal((await c.exec(['systemctl', 'show', '-p', 'NRestarts', '--value', 'os-config-agent.service'])).trim(), '0', 'the agent was never restarted');
  // systemd: Type=notify (active means READY=1 arrived), the watchdog fed for the whole boot (else NRestarts above),
  // the agent below the OOM killer's neutral value and its deployment's processes back at it (docs/systemd.md).
  const shown = await c.exec(['systemctl', 'show', '-p', 'Type', '-p', 'ActiveState', '-p', 'SubState', '-p', 'WatchdogUSec', '-p', 'MainPID', 'os-config-agent.service']);
  t.comment(`systemctl show os-config-agent.service:\n${shown}`);
  const prop = (name: string) => new RegExp(`^${name}=(.*)$`, 'm').exec(shown)?.[1] ?? '';
  t.equal(prop('Type'), 'notify');
  t.equal(`${prop('ActiveState')}/${prop('SubState')}`, 'active/running', 'READY=1 was received');
  t.equal(prop('WatchdogUSec'), '2min', 'the watchdog is armed');
  t.equal((await c.exec(['systemctl', 'show', '-p', 'OOMScoreAdjust', '--value', 'os-config-agent.service'])).trim(), '-500', 'OOMScoreAdjust=-500');
  // Lowering an oom_score_adj needs CAP_SYS_RESOURCE, which some build machines (containers themselves) lack; nspawn
  // is given it where the host has it (container.ts), and then the agent must run at -500.
  const capBnd = /^CapBnd:\s+([0-9a-f]+)$/m.exec(await c.exec(['cat', '/proc/1/status']))?.[1] ?? '0';
  const agentAdj = (await c.exec(['cat', `/proc/${prop('MainPID')}/oom_score_adj`])).trim();
  if (((BigInt(`0x${capBnd}`) >> 24n) & 1n) === 1n) t.equal(agentAdj, '-500', 'the agent runs at -500');
  else t.comment(`no CAP_SYS_RESOURCE on this machine: systemd could not lower the agent's oom_score_adj (${agentAdj})`);
  t.equal(await c.exec(['cat', '/var/lib/boot-test/oom-first']), '0\n', 'a deployment\'s script runs at 0: the kernel kills it first');
  const conf = await c.exec(['cat', '/etc/os-collect-config.conf']);
  t.match(conf, /collectors = cfn/, 'the agent configured itself from cfn-init-data');
  t.equal((await c.exec(['stat', '-c', '%a', '/etc/os-collect-config.conf'])).trim(), '600', 'the rewritten configuration is 0600');

  // The operator's view.
  const journalText = await c.exec(['journalctl', '--no-pager', '-u', 'os-config-agent', '-o', 'short-iso']);
  writeFileSync(path.join(BOOT, 'journal-1.txt'), journalText);
  const journal = parseJson(await c.exec(['journalctl', '--no-pager', '-u', 'os-config-agent', '-o', 'cat']));
  // Deployments are known to the server by the id of their derived config, under the config's name.
  const fullMetadata = await client.resourceMetadata(STACK, 'server');
  const listed = (fullMetadata.deployments ?? []) as Array<{ id: string; name: string }>;
  const idOf = (config: string) => listed.find((d) => d.name.startsWith(`${STACK}-${config}-`))?.id ?? `(no ${config} in the metadata)`;
  const ids = { first: idOf('first_config'), second: idOf('second_config'), cfn: idOf('cfn_config') };
  for (const [name, id] of Object.entries(ids)) {
    const changes = journal.filter((l) => l.msg === 'deployment state changed' && l.deploymentId === id).map((l) => `${l.from ?? 'new'}>${l.to}`);
    t.ok(changes.length >= 3, `${name}: one line per state change (${changes.join(', ')})`);
    t.equal(new Set(changes).size, changes.length, `${name}: no state change logged twice`);
    t.equal(changes.at(-1)?.endsWith('>signalled'), true, `${name}: the last state change is to signalled`);
  }
  const secrets = secretsOf(fullMetadata);
  t.ok(secrets.length >= 3, 'the secret key and both signal signatures are known to the test');
  t.notOk(secrets.some((s) => journalText.includes(s)), 'no secret in the agent\'s journal');
  const whole = await c.exec(['journalctl', '--no-pager', '-o', 'cat']);
  t.notOk(secrets.some((s) => whole.includes(s)), 'no secret anywhere in the journal');
  const table = await c.exec(['os-config-agent', 'status']);
  writeFileSync(path.join(BOOT, 'status-1.txt'), table);
  t.comment(`os-config-agent status:\n${table}`);
  const report = JSON.parse(await c.exec(['os-config-agent', 'status', '--json'])) as { version: number; agent: { running: boolean }; deployments: Array<{ id: string; state: string; signal: { state: string } }>; result: { exitCode: number } };
  t.equal(report.version, 1, 'status --json: version 1');
  t.ok(report.agent.running, 'status: the agent is running');
  t.equal(report.result.exitCode, 0, 'status: all done and signalled');
  const status = report.deployments;
  t.same(
    status.map((s) => [s.id, s.state, s.signal.state]).sort(),
    [[ids.first, 'signalled', 'sent'], [ids.second, 'signalled', 'sent'], [ids.cfn, 'signalled', 'sent']].sort(),
    'status lists the three deployments as signalled',
  );
  for (const id of Object.values(ids)) t.match(table, new RegExp(`^${id}\\s.*signalled.*sent CFN_SIGNAL`, 'm'), `the status table shows ${id} signalled`);
  firstBoot.ids = ids;

  firstBoot.runs = await c.exec(['cat', '/var/lib/boot-test/runs']);
  t.equal(firstBoot.runs, 'first CREATE\nsecond CREATE\ncfn-init\n', 'each script and the cfn-init command ran once');
  // The command line the agent uses for [deploy] hook_* limits, run by the image's systemd: the tool is in a transient
  // scope of its own, under the limit.
  // systemd's own view of the tool's unit (the cgroup paths under nspawn are the host's).
  const scoped = scopeCommand('/bin/sh', ['-c', 'unit=$(grep -o "run-[^/]*[.]scope" /proc/self/cgroup | head -n 1); echo "$unit"; systemctl show -p TasksMax "$unit"'], ['TasksMax=64']);
  const inScope = await c.exec([scoped.file, ...scoped.args]).catch((e: { stderr?: string; message?: string }) => `failed: ${e.stderr ?? e.message ?? ''}`);
  t.match(inScope, /^run-\w+\.scope\nTasksMax=64\n$/, `systemd-run --scope runs a deployment's tool in a scope with its limits: ${inScope}`);
  const stopStart = Date.now();
  await c.stop();
  container = undefined;
  t.equal(await c.service.exited, 0, `clean poweroff in ${((Date.now() - stopStart) / 1000).toFixed(1)} s`);
  firstBoot.bridgeCalls = heat!.ec2Bridge.forwarded();
  firstBoot.binds = binds;
  firstBoot.done = true;
});

t.test('reboot of the same tree: nothing runs again, nothing is signalled twice', { timeout: 240_000 }, async (t) => {
  if (!firstBoot.done) throw new Error('the first boot did not complete');
  const c = bootContainer({ tree: ROOT, consoleLog: path.join(BOOT, 'console-2.log'), bindRo: firstBoot.binds, hostname: HOSTNAME });
  container = c;
  t.comment(`second boot: ${await c.booted(120_000)}`);
  // Every CFN poll is a signed request Keystone checks through the ec2tokens bridge: three more of them mean the
  // agent has polled Heat three times since the reboot.
  await waitUntil('three CFN polls by the rebooted agent', async () => heat!.ec2Bridge.forwarded() >= firstBoot.bridgeCalls + 3, 90_000, c.service);
  t.pass('the rebooted agent polls Heat again');
  t.equal(await c.exec(['cat', '/var/lib/boot-test/runs']), firstBoot.runs, 'no script ran again');
  t.equal(await signalEvents('first'), 1, 'first deployment still signalled once');
  t.equal(await signalEvents('second'), 1, 'second deployment still signalled once');
  t.equal(await signalEvents('cfn'), 1, 'cfn-init deployment still signalled once');
  t.equal((await c.exec(['systemctl', 'is-active', 'boot-test-web.service']).catch((e: { stdout?: string }) => e.stdout ?? '')).trim(), 'active', 'the service cfn-init enabled is started at boot');
  const s = await client.stack(STACK);
  t.equal(s?.stack_status, 'CREATE_COMPLETE', 'the stack is untouched');
  const journalText = await c.exec(['journalctl', '--no-pager', '-b', '0', '-u', 'os-config-agent', '-o', 'short-iso']);
  writeFileSync(path.join(BOOT, 'journal-2.txt'), journalText);
  const journal = parseJson(await c.exec(['journalctl', '--no-pager', '-b', '0', '-u', 'os-config-agent', '-o', 'cat']));
  t.ok(journal.some((l) => l.msg === 'agent starting'), 'the agent started again at boot');
  t.same(journal.filter((l) => l.msg === 'deployment state changed' || l.msg === 'hook finished'), [], 'no deployment state changed and no hook ran in this boot');
  const status = (JSON.parse(await c.exec(['os-config-agent', 'status', '--json'])) as { deployments: Array<{ id: string; state: string; hookStarts: number; signal: { state: string; attempts: number } }> }).deployments;
  t.same(
    status.map((d) => [d.id, d.state, d.hookStarts, d.signal.state]).sort(),
    [[firstBoot.ids.first, 'signalled', 1, 'sent'], [firstBoot.ids.second, 'signalled', 1, 'sent'], [firstBoot.ids.cfn, 'signalled', 1, 'sent']].sort(),
    'status: all three still signalled, each hook started once',
  );
  t.comment(`journalctl --list-boots:\n${await c.exec(['journalctl', '--no-pager', '--list-boots'])}`);
  await c.stop();
  container = undefined;
  t.equal(await c.service.exited, 0, 'clean poweroff');
});
