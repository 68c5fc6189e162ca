import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { HeatClient, outputsOf, type Stack } from '../integration/heat/heat-client.js';
import type { RealHeat } from '../integration/heat/harness.js';
import { startHeatSession, stopHeatSession } from '../integration/heat/heat-session.js';
import { waitUntil } from '../integration/heat/processes.js';
import {
  agentLines,
  bootContainer,
  NSPAWN_REBOOT_STATUS,
  settleStack,
  unitNumber,
  type Container,
  type JournalLine,
} from './container.js';
import { scopeCommand } from '../../src/util/systemd-scope.js';

// A real image against real Heat: the tree test/image/build-image.sh built with cloud-init (NoCloud) and the agent's
// elements boots with systemd as PID 1 under systemd-nspawn, sharing this machine's network so it reaches Heat on
// 127.0.0.1. Its NoCloud seed carries the user-data Heat itself builds for a SOFTWARE_CONFIG server (heat-userdata.py:
// Heat's part-handler and the `cfn-init-data` part holding the metadata of a real DeployedServer/POLL_SERVER_CFN
// stack). Nothing is done inside the image by hand: cloud-init, the part-handler, the unit and the agent must take the
// stack to CREATE_COMPLETE. One deployment exits 194 on its first run: the agent reboots the system (systemd-nspawn
// exits 133), the test boots the same tree again as systemd-nspawn@.service would, and the deployment runs once more
// and is signalled once. Then the operator's view (journal, `os-config-agent status`), a poweroff and a third boot of
// the same tree in which nothing runs again. Needs root, the real-Heat packages and a built tree; run it through
// test/image/heat-boot.sh (see README.md there).
//
// The only things the test adds to the container, read-only from outside and named here: the seed, an agent drop-in
// that empties `[ec2] metadata_url` (the image's built-in collector list includes the EC2 metadata service at
// 169.254.169.254, which must never be asked from this machine; a collectors line instead would change the merge
// order of the collected data) and sets `[deploy] hook_memory_max` (each deployment in a transient scope), a
// cloud-init drop-in that turns network configuration off (the container shares the host's interfaces), a journald
// drop-in copying the journal to the console log and, in the third boot only, a unit drop-in shortening the agent's
// watchdog so that its feeding can be seen.

const HERE = path.dirname(fileURLToPath(import.meta.url));
const WORK = process.env.OCA_IMAGE_WORK ?? '/var/tmp/oca-heat-image';
const TREE = path.join(WORK, 'tree');
const ROOT = path.join(WORK, 'boot-root');
const BOOT = path.join(WORK, 'heat-boot');
const STACK = 'boot';
const HOSTNAME = 'boot-test-server';
const GREETING = 'hello from heat';
const CREATE_TIMEOUT_MS = 180_000;
/** [deploy] hook_memory_max in the test's drop-in, and the bytes systemd makes of it. */
const HOOK_MEMORY_MAX = '512M';
const HOOK_MEMORY_MAX_BYTES = String(512 * 1024 * 1024);
/** WatchdogSec= of the third boot's unit drop-in: short, so feeding over several periods takes seconds. */
const SHORT_WATCHDOG_SEC = 6;
const run = promisify(execFile);

let heat: RealHeat | undefined;
let client: HeatClient;
let container: Container | undefined;
/** Filled by the boots in turn, read by the later ones. */
const boots = {
  rebooted: false,
  done: false,
  firstBootId: '',
  runs: '',
  bridgeCalls: 0,
  binds: {} as Record<string, string>,
  ids: { first: '', second: '', reboot: '', cfn: '' },
};

t.before(async () => {
  if (process.getuid?.() !== 0) throw new Error('run as root (systemd-nspawn, nsenter)');
  for (const tool of [
    '/usr/bin/systemd-nspawn',
    '/usr/bin/nsenter',
    '/usr/bin/heat-all',
    '/usr/bin/keystone-wsgi-public',
  ]) {
    if (!existsSync(tool))
      throw new Error(
        `${tool} is missing: apt-get install -y systemd-container util-linux, and run "sudo bash test/integration/heat/install.sh"`,
      );
  }
  if (
    !existsSync(path.join(TREE, 'usr/bin/cloud-init')) ||
    !existsSync(path.join(TREE, 'opt/os-config-agent/bin/os-config-agent'))
  ) {
    throw new Error(
      `no tree with cloud-init and the agent in ${TREE}: run "OS_CONFIG_AGENT_IMAGE_CLOUD_INIT=1 OS_CONFIG_AGENT_IMAGE_ELEMENTS='heat-config-script heat-config-cfn-init' test/image/build-image.sh ${WORK}" first`,
    );
  }
  ({ heat, client } = await startHeatSession(t));
});

t.teardown(async () => {
  await container?.stop();
  if (heat) await stopHeatSession(t, heat, `; the booted tree is ${ROOT}, console logs in ${BOOT}`);
});

/** The seed and drop-ins the container gets (see the header). Host path -> container path. */
function prepareBoot(metadata: unknown, instanceId: string): Record<string, string> {
  rmSync(BOOT, { recursive: true, force: true });
  for (const d of ['seed', 'occ.conf.d', 'journald']) mkdirSync(path.join(BOOT, d), { recursive: true });
  const metadataFile = path.join(BOOT, 'server-metadata.json');
  writeFileSync(metadataFile, JSON.stringify(metadata), { mode: 0o600 });
  writeFileSync(path.join(BOOT, 'seed/meta-data'), `instance-id: ${instanceId}\nlocal-hostname: ${HOSTNAME}\n`);
  // An empty [ec2] metadata_url leaves that collector unconfigured (skipped); the collector list stays the image's.
  // hook_memory_max puts every deployment's processes in a transient scope (docs/systemd.md); the first script reports
  // the scope it ran in.
  writeFileSync(
    path.join(BOOT, 'occ.conf.d/boot-test.conf'),
    `[ec2]\nmetadata_url =\n\n[deploy]\nhook_memory_max = ${HOOK_MEMORY_MAX}\n`,
  );
  writeFileSync(path.join(BOOT, 'cloud-no-network.cfg'), 'network: {config: disabled}\n');
  writeFileSync(path.join(BOOT, 'journald/console.conf'), '[Journal]\nForwardToConsole=yes\nMaxLevelConsole=info\n');
  return {
    [path.join(BOOT, 'seed')]: '/var/lib/cloud/seed/nocloud',
    [path.join(BOOT, 'occ.conf.d')]: '/etc/os-collect-config.conf.d',
    [path.join(BOOT, 'cloud-no-network.cfg')]: '/etc/cloud/cloud.cfg.d/99-boot-test-no-network.cfg',
    [path.join(BOOT, 'journald')]: '/etc/systemd/journald.conf.d',
  };
}

const settle = (c: Container): Promise<Stack> => settleStack(client, STACK, c, CREATE_TIMEOUT_MS);

/**
 * Waits for the container to go down by itself (the reboot a deployment asked for) and returns nspawn's exit status;
 * fails if the stack's CREATE ends first or nothing happens within CREATE_TIMEOUT_MS.
 */
async function selfExit(c: Container): Promise<number | string> {
  let exited: number | string | undefined;
  void c.service.exited.then((r) => (exited = r));
  const deadline = Date.now() + CREATE_TIMEOUT_MS;
  for (;;) {
    if (exited !== undefined) return exited;
    const s = await client.stack(STACK);
    if (s && /^CREATE_(COMPLETE|FAILED)$/.test(s.stack_status))
      throw new Error(
        `stack ${STACK} reached ${s.stack_status} (${s.stack_status_reason}) while the container should have rebooted; console: ${c.service.logFile}`,
      );
    if (Date.now() > deadline)
      throw new Error(
        `the container did not go down within ${CREATE_TIMEOUT_MS} ms (stack ${s?.stack_status ?? 'gone'}); console: ${c.service.logFile}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function signalEvents(resource: string): Promise<number> {
  return (await client.events(STACK, resource)).filter((e) => e.resource_status.startsWith('SIGNAL')).length;
}

/** The agent's lines of `journalctl -o json`, each with the id of the boot that logged it (dashes removed). */
function parseJournalJson(lines: string): Array<JournalLine & { journalBootId: string }> {
  const out: Array<JournalLine & { journalBootId: string }> = [];
  for (const l of lines.split('\n')) {
    if (!l.startsWith('{')) continue;
    const entry = JSON.parse(l) as { MESSAGE?: unknown; _BOOT_ID?: string };
    if (typeof entry.MESSAGE !== 'string' || !entry.MESSAGE.startsWith('{')) continue;
    out.push({ ...(JSON.parse(entry.MESSAGE) as JournalLine), journalBootId: entry._BOOT_ID ?? '' });
  }
  return out;
}

const bare = (uuid: string) => uuid.replaceAll('-', '');

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

t.test(
  "first boot: cloud-init hands over Heat's data, the agent runs the deployments until one asks for a reboot, the system reboots",
  { timeout: 420_000 },
  async (t) => {
    await client.createStack(STACK, readFileSync(path.join(HERE, 'templates/boot.yaml'), 'utf8'), {
      greeting: GREETING,
    });
    await client.waitResource(STACK, 'server', 60_000);
    const metadata = await client.resourceMetadata(STACK, 'server');
    const occ = metadata['os-collect-config'] as { collectors: string[] };
    t.same(occ.collectors, ['cfn', 'local'], 'Heat gives the server the CFN transport');
    const binds = prepareBoot(metadata, await client.resourceId(STACK, 'server'));
    const { stdout: userData } = await run(
      '/usr/bin/python3',
      [path.join(HERE, 'heat-userdata.py'), path.join(BOOT, 'server-metadata.json')],
      { timeout: 60_000 },
    );
    t.match(userData, /Content-Type: text\/part-handler/, "the user-data carries Heat's part-handler");
    t.match(userData, /Content-Type: text\/x-cfninitdata[^]*filename="cfn-init-data"/, 'and the cfn-init-data part');
    writeFileSync(path.join(BOOT, 'seed/user-data'), userData, { mode: 0o600 });

    // A fresh copy of the built tree: the later boots boot this copy again, the built tree stays as built.
    rmSync(ROOT, { recursive: true, force: true });
    const copyStart = Date.now();
    await run('cp', ['-a', '--reflink=auto', TREE, ROOT], { timeout: 300_000 });
    t.comment(`tree copied in ${((Date.now() - copyStart) / 1000).toFixed(1)} s`);

    const c = bootContainer({
      tree: ROOT,
      consoleLog: path.join(BOOT, 'console-1.log'),
      bindRo: binds,
      hostname: HOSTNAME,
    });
    container = c;
    // The agent's `systemctl reboot` inside: systemd shuts the system down and nspawn exits with its reboot status.
    const status = await selfExit(c);
    const seconds = (Date.now() - c.startedAt) / 1000;
    container = undefined;
    await c.stop();
    t.equal(
      status,
      NSPAWN_REBOOT_STATUS,
      `the system inside rebooted: systemd-nspawn exited ${String(status)} (133: reboot) ${seconds.toFixed(1)} s after its start`,
    );
    // The tree is the container's root file system (--volatile=no): what the scripts recorded is readable from here.
    const runs = readFileSync(path.join(ROOT, 'var/lib/boot-test/runs'), 'utf8');
    const asked = /^first CREATE\nsecond CREATE\nreboot CREATE 0 ([0-9a-f-]{36})\n$/.exec(runs);
    t.ok(
      asked,
      `first, second, then the deployment asking for the reboot, without OS_CONFIG_AGENT_REBOOTED; nothing after it ran:\n${runs}`,
    );
    boots.firstBootId = asked?.[1] ?? '(none recorded)';
    t.not(
      boots.firstBootId,
      readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      "the container has a boot id of its own, not this machine's",
    );
    t.equal(await signalEvents('first'), 1, 'first deployment signalled once');
    t.equal(await signalEvents('second'), 1, 'second deployment signalled once');
    t.equal(await signalEvents('reboot'), 0, 'the deployment that asked for the reboot is not signalled before it');
    t.equal((await client.stack(STACK))?.stack_status, 'CREATE_IN_PROGRESS', 'the stack waits for it');
    boots.binds = binds;
    boots.rebooted = true;
  },
);

t.test(
  'after the reboot: the deployment runs once more and is signalled once, the stack completes',
  { timeout: 300_000 },
  async (t) => {
    if (!boots.rebooted) throw new Error('the first boot did not end in a reboot');
    // What systemd-nspawn@.service does on exit status 133 (RestartForceExitStatus=133): the same tree, booted again.
    const c = bootContainer({
      tree: ROOT,
      consoleLog: path.join(BOOT, 'console-2.log'),
      bindRo: boots.binds,
      hostname: HOSTNAME,
    });
    container = c;
    const done = await settle(c);
    const seconds = (Date.now() - c.startedAt) / 1000;
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    const out = outputsOf(done);
    t.equal(out.echoed, `first says ${GREETING}`, "the first deployment's output");
    t.equal(out.seen, `second saw [first says ${GREETING}]`, "the second deployment got the first's output as input");
    t.equal(out.hostname, HOSTNAME, 'the script ran inside the booted system');
    t.equal(out.first_status, 0, 'deploy_status_code');
    t.equal(out.first_stdout, 'first deployment ran\n', 'deploy_stdout');
    t.equal(
      out.after_reboot,
      'rebooted=1 runs=2',
      'the deployment that asked for the reboot: its output from the run after it',
    );
    t.equal(out.reboot_status, 0, "and that run's status");
    t.equal(out.reboot_stdout, 'carried on after the reboot\n', "and that run's stdout (not the first run's)");
    t.equal(await signalEvents('first'), 1, 'first deployment signalled once');
    t.equal(await signalEvents('second'), 1, 'second deployment signalled once');
    t.equal(await signalEvents('reboot'), 1, 'the deployment that asked for the reboot signalled once');
    t.equal(out.cfn_status, 0, 'the cfn-init deployment succeeded');
    t.equal(await signalEvents('cfn'), 1, 'cfn-init deployment signalled once');
    t.comment(`second boot's start -> CREATE_COMPLETE: ${seconds.toFixed(1)} s`);
    writeFileSync(path.join(BOOT, 'create-seconds'), `${seconds.toFixed(1)}\n`);

    // Each boot has its own id (nspawn mounts a new random /proc/sys/kernel/random/boot_id for each): the agent told
    // the boots apart by it.
    const bootId = (await c.exec(['cat', '/proc/sys/kernel/random/boot_id'])).trim();
    t.not(bootId, boots.firstBootId, `a new boot id: ${boots.firstBootId} -> ${bootId}`);
    boots.runs = await c.exec(['cat', '/var/lib/boot-test/runs']);
    t.equal(
      boots.runs,
      `first CREATE\nsecond CREATE\nreboot CREATE 0 ${boots.firstBootId}\nreboot CREATE 1 ${bootId}\ncfn-init\n`,
      'the deployment that asked ran twice, the second time in the new boot with OS_CONFIG_AGENT_REBOOTED=1; the others once',
    );

    // cfn-init, native, with systemd as PID 1: the unit it wrote is enabled and running, its files have their modes.
    t.equal(
      (
        await c
          .exec(['systemctl', 'is-active', 'boot-test-web.service'])
          .catch((e: { stdout?: string }) => e.stdout ?? '')
      ).trim(),
      'active',
      'cfn-init started the service',
    );
    t.equal(
      (
        await c
          .exec(['systemctl', 'is-enabled', 'boot-test-web.service'])
          .catch((e: { stdout?: string }) => e.stdout ?? '')
      ).trim(),
      'enabled',
      'and enabled it',
    );
    t.equal(await c.exec(['cat', '/etc/boot-test/cfn.conf']), 'written by cfn-init\n');
    t.equal((await c.exec(['stat', '-c', '%a', '/etc/boot-test/cfn.conf'])).trim(), '600', 'with its mode');
    t.equal(
      (
        await c.exec([
          'sh',
          '-c',
          'readlink -f "$(command -v cfn-init)"; [ -e /usr/bin/cfn-init ] || echo "no heat-cfntools"',
        ])
      ).trim(),
      '/opt/os-config-agent/bin/cfn-init\nno heat-cfntools',
      "without heat-cfntools in the image, cfn-init on PATH is the agent's (the hook needs none)",
    );

    // What cloud-init and the part-handler did (in the first boot; the same instance id, so not again).
    const metadata = await client.resourceMetadata(STACK, 'server');
    const cfnInit = await c.exec(['cat', '/var/lib/heat-cfntools/cfn-init-data']);
    t.same(
      JSON.parse(cfnInit),
      JSON.parse(readFileSync(path.join(BOOT, 'server-metadata.json'), 'utf8')),
      'the part-handler wrote the server metadata to /var/lib/heat-cfntools/cfn-init-data',
    );
    t.match(
      await c.exec(['cat', '/var/log/part-handler.log']),
      /filename:cfn-init-data, ctype:text\/x-cfninitdata/,
      "Heat's part-handler ran",
    );
    t.equal((await c.exec(['stat', '-c', '%a', '/var/lib/heat-cfntools'])).trim(), '700', 'its directory is 0700');
    t.equal(
      (await c.exec(['cloud-init', 'status'], 60_000).catch((e: { stdout?: string }) => e.stdout ?? '')).trim(),
      'status: done',
      'cloud-init finished',
    );

    // The unit: started once, after cloud-init's last stage.
    const agentStart = await unitNumber(c, 'os-config-agent.service', 'ExecMainStartTimestampMonotonic');
    const finalDone = await unitNumber(c, 'cloud-final.service', 'ActiveEnterTimestampMonotonic');
    const initDone = await unitNumber(c, 'cloud-init.service', 'ActiveEnterTimestampMonotonic');
    t.ok(
      initDone > 0 && finalDone > 0 && agentStart >= finalDone,
      `the agent started after cloud-init (${initDone}) and cloud-final (${finalDone}): ${agentStart}`,
    );
    t.equal(
      (await c.exec(['systemctl', 'show', '-p', 'NRestarts', '--value', 'os-config-agent.service'])).trim(),
      '0',
      'the agent was never restarted',
    );
    // systemd: Type=notify (active means READY=1 arrived), the watchdog armed (its feeding: the third boot), the agent
    // below the OOM killer's neutral value and its deployment's processes back at it (docs/systemd.md).
    const shown = await c.exec([
      'systemctl',
      'show',
      '-p',
      'Type',
      '-p',
      'ActiveState',
      '-p',
      'SubState',
      '-p',
      'WatchdogUSec',
      '-p',
      'MainPID',
      'os-config-agent.service',
    ]);
    t.comment(`systemctl show os-config-agent.service:\n${shown}`);
    const prop = (name: string) => new RegExp(`^${name}=(.*)$`, 'm').exec(shown)?.[1] ?? '';
    t.equal(prop('Type'), 'notify');
    t.equal(`${prop('ActiveState')}/${prop('SubState')}`, 'active/running', 'READY=1 was received');
    t.equal(prop('WatchdogUSec'), '2min', 'the watchdog is armed');
    t.equal(
      (await c.exec(['systemctl', 'show', '-p', 'OOMScoreAdjust', '--value', 'os-config-agent.service'])).trim(),
      '-500',
      'OOMScoreAdjust=-500',
    );
    // Lowering an oom_score_adj needs CAP_SYS_RESOURCE, which some build machines (containers themselves) lack; nspawn
    // is given it where the host has it (container.ts), and then the agent must run at -500.
    const capBnd = /^CapBnd:\s+([0-9a-f]+)$/m.exec(await c.exec(['cat', '/proc/1/status']))?.[1] ?? '0';
    const agentAdj = (await c.exec(['cat', `/proc/${prop('MainPID')}/oom_score_adj`])).trim();
    if (((BigInt(`0x${capBnd}`) >> 24n) & 1n) === 1n) t.equal(agentAdj, '-500', 'the agent runs at -500');
    else
      t.comment(`no CAP_SYS_RESOURCE on this machine: systemd could not lower the agent's oom_score_adj (${agentAdj})`);
    t.equal(
      await c.exec(['cat', '/var/lib/boot-test/oom-first']),
      '0\n',
      "a deployment's script runs at 0: the kernel kills it first",
    );
    // [deploy] hook_memory_max: the first script ran in a transient scope of its own holding the limit.
    const [scopeUnit, scopeMemoryMax, kernelMemoryMax] = (
      await c.exec(['cat', '/var/lib/boot-test/scope-first'])
    ).split('\n');
    t.match(scopeUnit, /^run-\w+\.scope$/, `the deployment ran in a transient scope (${scopeUnit})`);
    t.equal(scopeMemoryMax, HOOK_MEMORY_MAX_BYTES, `with MemoryMax=${HOOK_MEMORY_MAX} from hook_memory_max`);
    if (kernelMemoryMax !== 'unavailable')
      t.equal(kernelMemoryMax, HOOK_MEMORY_MAX_BYTES, "and the kernel applied it to the scope's cgroup (memory.max)");
    else
      t.comment(
        "no cgroup v2 memory controller in the container (a cgroup v1 host): systemd holds the scope's MemoryMax=, the kernel does not apply it here",
      );
    const conf = await c.exec(['cat', '/etc/os-collect-config.conf']);
    t.match(conf, /collectors = cfn/, 'the agent configured itself from cfn-init-data');
    t.equal(
      (await c.exec(['stat', '-c', '%a', '/etc/os-collect-config.conf'])).trim(),
      '600',
      'the rewritten configuration is 0600',
    );

    // The operator's view, both boots.
    writeFileSync(
      path.join(BOOT, 'journal-1.txt'),
      await c.exec(['journalctl', '--no-pager', '-b', '-1', '-u', 'os-config-agent', '-o', 'short-iso']),
    );
    const journalText = await c.exec([
      'journalctl',
      '--no-pager',
      '-b',
      '0',
      '-u',
      'os-config-agent',
      '-o',
      'short-iso',
    ]);
    writeFileSync(path.join(BOOT, 'journal-2.txt'), journalText);
    const journal = parseJournalJson(await c.exec(['journalctl', '--no-pager', '-u', 'os-config-agent', '-o', 'json']));
    const bootOf = (l: { journalBootId: string }) =>
      l.journalBootId === bare(boots.firstBootId)
        ? 'boot 1'
        : l.journalBootId === bare(bootId)
          ? 'boot 2'
          : `boot ${l.journalBootId}`;
    // Deployments are known to the server by the id of their derived config, under the config's name.
    const listed = (metadata.deployments ?? []) as Array<{ id: string; name: string }>;
    const idOf = (config: string) =>
      listed.find((d) => d.name.startsWith(`${STACK}-${config}-`))?.id ?? `(no ${config} in the metadata)`;
    const ids = {
      first: idOf('first_config'),
      second: idOf('second_config'),
      reboot: idOf('reboot_config'),
      cfn: idOf('cfn_config'),
    };
    const changesOf = (id: string) =>
      journal
        .filter((l) => l.msg === 'deployment state changed' && l.deploymentId === id)
        .map((l) => `${l.from ?? 'new'}>${l.to} (${bootOf(l)})`);
    for (const [name, bootName] of [
      ['first', 'boot 1'],
      ['second', 'boot 1'],
      ['cfn', 'boot 2'],
    ] as const) {
      const changes = changesOf(ids[name]);
      t.ok(changes.length >= 3, `${name}: one line per state change (${changes.join(', ')})`);
      t.equal(new Set(changes).size, changes.length, `${name}: no state change logged twice`);
      t.equal(changes.at(-1)?.startsWith('done>signalled'), true, `${name}: the last state change is to signalled`);
      t.ok(
        changes.every((x) => x.endsWith(`(${bootName})`)),
        `${name}: all in ${bootName}`,
      );
    }
    t.same(
      changesOf(ids.reboot),
      [
        'new>pending (boot 1)',
        'pending>running (boot 1)',
        'running>awaiting-reboot (boot 1)',
        'awaiting-reboot>running (boot 2)',
        'running>done (boot 2)',
        'done>signalled (boot 2)',
      ],
      "reboot: awaiting-reboot in the first boot's journal, run again, done and signalled in the second",
    );
    const hookRuns = (id: string) => journal.filter((l) => l.msg === 'hook finished' && l.deploymentId === id).length;
    t.same(
      [hookRuns(ids.first), hookRuns(ids.second), hookRuns(ids.reboot), hookRuns(ids.cfn)],
      [1, 1, 2, 1],
      'hooks run: once each, twice for the deployment that asked for the reboot',
    );
    t.same(
      journal.filter((l) => l.msg === 'rebooting the machine: a deployment asked for it').map(bootOf),
      ['boot 1'],
      'the reboot command ran once, in the first boot',
    );
    t.same(
      journal.filter((l) => l.msg === 'machine rebooted as the deployment asked; running it again').map(bootOf),
      ['boot 2'],
      'the rebooted agent took the deployment up once',
    );
    const secrets = secretsOf(metadata);
    t.ok(secrets.length >= 5, 'the secret key and the signal signatures are known to the test');
    t.notOk(
      secrets.some((s) => journalText.includes(s)),
      "no secret in the agent's journal",
    );
    const whole = await c.exec(['journalctl', '--no-pager', '-o', 'cat']);
    t.notOk(
      secrets.some((s) => whole.includes(s)),
      'no secret anywhere in the journal (both boots)',
    );
    const table = await c.exec(['os-config-agent', 'status']);
    writeFileSync(path.join(BOOT, 'status-1.txt'), table);
    t.comment(`os-config-agent status:\n${table}`);
    const report = JSON.parse(await c.exec(['os-config-agent', 'status', '--json'])) as {
      version: number;
      agent: { running: boolean };
      deployments: Array<{
        id: string;
        state: string;
        hookStarts: number;
        reboots?: number;
        signal: { state: string };
      }>;
      result: { exitCode: number };
    };
    t.equal(report.version, 1, 'status --json: version 1');
    t.ok(report.agent.running, 'status: the agent is running');
    t.equal(report.result.exitCode, 0, 'status: all done and signalled');
    t.same(
      report.deployments.map((s) => [s.id, s.state, s.signal.state, s.hookStarts, s.reboots ?? 0]).sort(),
      [
        [ids.first, 'signalled', 'sent', 1, 0],
        [ids.second, 'signalled', 'sent', 1, 0],
        [ids.reboot, 'signalled', 'sent', 1, 1],
        [ids.cfn, 'signalled', 'sent', 1, 0],
      ].sort(),
      'status lists the four deployments as signalled, one reboot for the one that asked',
    );
    for (const id of Object.values(ids))
      t.match(
        table,
        new RegExp(`^${id}\\s.*signalled.*sent CFN_SIGNAL`, 'm'),
        `the status table shows ${id} signalled`,
      );
    boots.ids = ids;

    // The command line the agent uses for [deploy] hook_* limits, run by the image's systemd: the tool is in a transient
    // scope of its own, under the limit.
    // systemd's own view of the tool's unit (the cgroup paths under nspawn are the host's).
    const scoped = scopeCommand(
      '/bin/sh',
      [
        '-c',
        'unit=$(grep -o "run-[^/]*[.]scope" /proc/self/cgroup | head -n 1); echo "$unit"; systemctl show -p TasksMax "$unit"',
      ],
      ['TasksMax=64'],
    );
    const inScope = await c
      .exec([scoped.file, ...scoped.args])
      .catch((e: { stderr?: string; message?: string }) => `failed: ${e.stderr ?? e.message ?? ''}`);
    t.match(
      inScope,
      /^run-\w+\.scope\nTasksMax=64\n$/,
      `systemd-run --scope runs a deployment's tool in a scope with its limits: ${inScope}`,
    );
    const stopStart = Date.now();
    await c.stop();
    container = undefined;
    t.equal(await c.service.exited, 0, `clean poweroff in ${((Date.now() - stopStart) / 1000).toFixed(1)} s`);
    boots.bridgeCalls = heat!.ec2Bridge.forwarded();
    boots.done = true;
  },
);

t.test(
  'poweroff and boot again: nothing runs again, nothing is signalled twice, the watchdog is fed',
  { timeout: 240_000 },
  async (t) => {
    if (!boots.done) throw new Error('the stack did not complete in the second boot');
    // A watchdog of a few seconds for this boot: the agent must feed it several times over, or systemd restarts it.
    const dropIn = path.join(BOOT, 'watchdog.conf');
    writeFileSync(dropIn, `[Service]\nWatchdogSec=${SHORT_WATCHDOG_SEC}s\n`);
    const binds = { ...boots.binds, [dropIn]: '/etc/systemd/system/os-config-agent.service.d/boot-test-watchdog.conf' };
    const c = bootContainer({
      tree: ROOT,
      consoleLog: path.join(BOOT, 'console-3.log'),
      bindRo: binds,
      hostname: HOSTNAME,
    });
    container = c;
    t.comment(`third boot: ${await c.booted(120_000)}`);
    // Every CFN poll is a signed request Keystone checks through the ec2tokens bridge: three more of them mean the
    // agent has polled Heat three times since the boot.
    await waitUntil(
      'three CFN polls by the rebooted agent',
      async () => heat!.ec2Bridge.forwarded() >= boots.bridgeCalls + 3,
      90_000,
      c.service,
    );
    t.pass('the rebooted agent polls Heat again');
    t.equal(await c.exec(['cat', '/var/lib/boot-test/runs']), boots.runs, 'no script ran again');
    t.equal(await signalEvents('first'), 1, 'first deployment still signalled once');
    t.equal(await signalEvents('second'), 1, 'second deployment still signalled once');
    t.equal(await signalEvents('reboot'), 1, 'the deployment that asked for the reboot still signalled once');
    t.equal(await signalEvents('cfn'), 1, 'cfn-init deployment still signalled once');
    t.equal(
      (
        await c
          .exec(['systemctl', 'is-active', 'boot-test-web.service'])
          .catch((e: { stdout?: string }) => e.stdout ?? '')
      ).trim(),
      'active',
      'the service cfn-init enabled is started at boot',
    );
    const s = await client.stack(STACK);
    t.equal(s?.stack_status, 'CREATE_COMPLETE', 'the stack is untouched');

    // The watchdog: systemd stamps WatchdogTimestamp at READY=1 and at each WATCHDOG=1 after it. A stamp more than one
    // WatchdogSec after READY=1, with the same main process and no restart, means the agent fed it all along.
    t.equal(
      (await c.exec(['systemctl', 'show', '-p', 'WatchdogUSec', '--value', 'os-config-agent.service'])).trim(),
      `${SHORT_WATCHDOG_SEC}s`,
      "the drop-in's watchdog is armed",
    );
    const ready = await unitNumber(c, 'os-config-agent.service', 'ActiveEnterTimestampMonotonic');
    const mainPid = (await c.exec(['systemctl', 'show', '-p', 'MainPID', '--value', 'os-config-agent.service'])).trim();
    let fed = 0;
    await waitUntil(
      `a watchdog feed more than ${SHORT_WATCHDOG_SEC} s after READY=1`,
      async () => {
        fed = await unitNumber(c, 'os-config-agent.service', 'WatchdogTimestampMonotonic');
        return fed - ready > SHORT_WATCHDOG_SEC * 1_000_000;
      },
      SHORT_WATCHDOG_SEC * 5 * 1000,
      c.service,
    );
    t.pass(`the agent fed the watchdog ${((fed - ready) / 1e6).toFixed(1)} s after READY=1`);
    t.equal(
      (await c.exec(['systemctl', 'show', '-p', 'MainPID', '--value', 'os-config-agent.service'])).trim(),
      mainPid,
      'the same agent process all along',
    );
    t.equal(
      (await c.exec(['systemctl', 'show', '-p', 'NRestarts', '--value', 'os-config-agent.service'])).trim(),
      '0',
      'never restarted by the watchdog',
    );

    const journalText = await c.exec([
      'journalctl',
      '--no-pager',
      '-b',
      '0',
      '-u',
      'os-config-agent',
      '-o',
      'short-iso',
    ]);
    writeFileSync(path.join(BOOT, 'journal-3.txt'), journalText);
    t.notMatch(journalText, /[Ww]atchdog timeout/, 'no watchdog timeout in the journal');
    const journal = agentLines(
      await c.exec(['journalctl', '--no-pager', '-b', '0', '-u', 'os-config-agent', '-o', 'cat']),
    );
    t.ok(
      journal.some((l) => l.msg === 'agent starting'),
      'the agent started again at boot',
    );
    t.same(
      journal.filter((l) => l.msg === 'deployment state changed' || l.msg === 'hook finished'),
      [],
      'no deployment state changed and no hook ran in this boot',
    );
    const status = (
      JSON.parse(await c.exec(['os-config-agent', 'status', '--json'])) as {
        deployments: Array<{
          id: string;
          state: string;
          hookStarts: number;
          signal: { state: string; attempts: number };
        }>;
      }
    ).deployments;
    t.same(
      status.map((d) => [d.id, d.state, d.hookStarts, d.signal.state]).sort(),
      [
        [boots.ids.first, 'signalled', 1, 'sent'],
        [boots.ids.second, 'signalled', 1, 'sent'],
        [boots.ids.reboot, 'signalled', 1, 'sent'],
        [boots.ids.cfn, 'signalled', 1, 'sent'],
      ].sort(),
      'status: all four still signalled, each hook started once since its last reboot',
    );
    t.comment(`journalctl --list-boots:\n${await c.exec(['journalctl', '--no-pager', '--list-boots'])}`);
    await c.stop();
    container = undefined;
    t.equal(await c.service.exited, 0, 'clean poweroff');
  },
);

t.test(
  "a CloudFormation-style server: Heat's HEAT_CFNTOOLS user-data runs /opt/aws/bin/cfn-init and cfn-signal, the wait condition completes",
  { timeout: 300_000 },
  async (t) => {
    if (!boots.done) throw new Error('the stack did not complete in the second boot');
    const stack = 'cfntools';
    const greeting = 'configured by cfn-init';
    await client.createStack(stack, readFileSync(path.join(HERE, 'templates/cfn-tools.yaml'), 'utf8'), { greeting });
    await client.waitResource(stack, 'boot', 60_000);
    await client.waitResource(stack, 'web', 60_000);
    const given = (await client.resourceMetadata(stack, 'boot')) as Record<string, string>;
    // The user-data script of a CloudFormation-style template (its Fn::Join / str_replace resolved), run by Heat's
    // loguserdata.py: cfn-init and cfn-signal as templates call them. The keys are quoted for the shell: the secret
    // key Heat makes for an AWS::IAM::AccessKey is a random password that may hold `&`, `#` or `!`.
    const quoted = (word: string | undefined): string => `'${String(word).replaceAll("'", "'\\''")}'`;
    const script =
      '#!/bin/bash -v\n' +
      `/opt/aws/bin/cfn-init -s ${stack} -r web --access-key ${quoted(given.access_key)} --secret-key ${quoted(given.secret_key)} --region RegionOne\n` +
      `/opt/aws/bin/cfn-signal -e $? -i web -d "$(cat /etc/cfn-tools/greeting)" ${quoted(given.handle)}\n`;
    const seed = path.join(BOOT, 'seed-cfntools');
    mkdirSync(seed, { recursive: true });
    writeFileSync(path.join(BOOT, 'cfn-userdata.sh'), script, { mode: 0o600 });
    writeFileSync(path.join(BOOT, 'web-metadata.json'), JSON.stringify(await client.resourceMetadata(stack, 'web')));
    const { stdout: userData } = await run(
      '/usr/bin/python3',
      [
        path.join(HERE, 'heat-userdata.py'),
        path.join(BOOT, 'web-metadata.json'),
        'HEAT_CFNTOOLS',
        path.join(BOOT, 'cfn-userdata.sh'),
        `http://127.0.0.1:${heat!.cfnPort}/v1/`,
      ],
      { timeout: 60_000 },
    );
    t.match(userData, /filename="cfn-userdata"/, 'the user-data carries the script as cfn-userdata');
    t.match(userData, /filename="cfn-metadata-server"/, "and heat-api-cfn's URL");
    t.match(userData, /cfn-create-aws-symlinks/, 'and the boothook that links /opt/aws/bin');
    writeFileSync(path.join(seed, 'user-data'), userData, { mode: 0o600 });
    // A new instance id: cloud-init runs the new user-data, as on a new server.
    writeFileSync(path.join(seed, 'meta-data'), `instance-id: cfntools-1\nlocal-hostname: ${HOSTNAME}\n`);
    const c = bootContainer({
      tree: ROOT,
      consoleLog: path.join(BOOT, 'console-4.log'),
      bindRo: { ...boots.binds, [seed]: '/var/lib/cloud/seed/nocloud' },
      hostname: HOSTNAME,
    });
    container = c;
    const done = await settleStack(client, stack, c, CREATE_TIMEOUT_MS);
    t.equal(done.stack_status, 'CREATE_COMPLETE', done.stack_status_reason);
    t.same(
      JSON.parse(String(outputsOf(done).wait_data)),
      { web: greeting },
      "cfn-signal's data reached the wait condition",
    );
    t.equal(await c.exec(['cat', '/etc/cfn-tools/greeting']), greeting, 'cfn-init wrote the file');
    t.equal(await c.exec(['cat', '/var/lib/boot-test/cfn-tools']), 'cfn-init from user-data\n', 'and ran its command');
    t.equal(
      (await c.exec(['readlink', '/opt/aws/bin/cfn-init', '/opt/aws/bin/cfn-signal'])).trim(),
      '/opt/os-config-agent/bin/cfn-init\n/opt/os-config-agent/bin/cfn-signal',
      "/opt/aws/bin links to the agent's commands",
    );
    t.match(
      await c.exec(['cat', '/var/log/heat-provision.log']),
      /Provision done/,
      "Heat's loguserdata.py ran the script",
    );
    t.equal((await c.exec(['stat', '-c', '%a', '/var/log/cfn-init.log'])).trim(), '600', "cfn-init's log, 0600");
    t.notMatch(await c.exec(['cat', '/var/log/cfn-init.log']), given.secret_key!, 'without the secret key');
    t.notMatch(
      await c.exec(['journalctl', '--no-pager', '-b', '0', '-u', 'os-config-agent', '-o', 'cat']),
      given.secret_key!,
      "nor the agent's journal (it delivered the queued signal)",
    );
    t.equal(await signalEvents('first'), 1, 'the other stack untouched');
    await c.stop();
    container = undefined;
    t.equal(await c.service.exited, 0, 'clean poweroff');
  },
);
