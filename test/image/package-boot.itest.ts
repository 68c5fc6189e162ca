import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { waitUntil } from '../integration/heat/processes.js';
import { bootContainer, type Container } from './container.js';
import {
  agentLines,
  debPackage,
  dpkgStatus,
  exists,
  freshTree,
  missingForBoot,
  say,
  VERSION,
  WORK,
} from './pristine-tree.js';

// The Debian package on a booted system: a stock debootstrapped bookworm (test/image/debootstrap-tree.sh, nothing of
// ours in it) boots with systemd as PID 1 under systemd-nspawn, and inside it `apt install ./os-config-agent_*.deb`
// must leave the unit enabled and running the package's agent; a reinstall restarts it; a reinstall run by the
// agent's own script deployment leaves dpkg sound and the agent restarting itself after it; `apt remove` stops it and
// takes the unit away but keeps /var/lib state and the configuration; `apt purge` removes those too. cloud-init is
// disabled here (no datasource: this is the package alone; pristine-boot.itest.ts boots with it). Run through
// test/image/pristine-boot.sh. The container shares this machine's network; what is added to it, read-only from
// outside: the package, and an agent drop-in emptying `[ec2] metadata_url` (the package's configuration polls the
// built-in collector list, which includes the EC2 metadata service at 169.254.169.254, never to be asked from here).

const ROOT = path.join(WORK, 'package-root');
const BOOT = path.join(WORK, 'package-boot');
const UNIT = 'os-config-agent.service';
const skip = missingForBoot() ?? false;

/** A `script` deployment that reinstalls the agent's package, as an `apt-get -y upgrade` in a deployment would. */
const SELF_UPGRADE = {
  id: '6d0c1f4e-7b3a-4c52-9e1d-2a8f5b7c9e10',
  name: 'self-upgrade',
  group: 'script',
  creation_time: '2026-11-26T00:00:00Z',
  config: [
    '#!/bin/sh',
    'set -e',
    'echo "${OS_CONFIG_AGENT_PID:-unset}" >> /root/upgrade-runs',
    'DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall --no-install-recommends /root/os-config-agent.deb > /root/upgrade-apt.log 2>&1',
    '',
  ].join('\n'),
  options: {},
  inputs: [
    { name: 'deploy_server_id', type: 'String', value: 'package-test' },
    { name: 'deploy_action', type: 'String', value: 'CREATE' },
    { name: 'deploy_stack_id', type: 'String', value: 'package-test/0000' },
    { name: 'deploy_resource_name', type: 'String', value: 'self-upgrade' },
    { name: 'deploy_signal_transport', type: 'String', value: 'NO_SIGNAL' },
  ],
  outputs: [],
};

/** A `script` deployment that fails: journald files its state change as a warning. */
const FAILING = {
  ...SELF_UPGRADE,
  id: '6d0c1f4e-7b3a-4c52-9e1d-2a8f5b7c9e11',
  name: 'fails-on-purpose',
  config: '#!/bin/sh\necho "failing on purpose" >&2\nexit 3\n',
  inputs: SELF_UPGRADE.inputs.map((i) => (i.name === 'deploy_resource_name' ? { ...i, value: 'fails' } : i)),
};

interface StatusJson {
  agent?: { pid?: number; lastCycle?: { endedAt?: string } };
  deployments?: Array<{ id: string; state: string; exitCode?: number; hookStarts?: number }>;
}
let container: Container | undefined;

t.teardown(async () => {
  await container?.stop();
  if (t.passing()) rmSync(ROOT, { recursive: true, force: true });
  else t.comment(`the booted tree is kept in ${ROOT}, the console log in ${BOOT}`);
});

t.test(
  'apt install, reinstall, remove and purge of the package on a booted bookworm',
  { skip, timeout: 600_000 },
  async (t) => {
    rmSync(BOOT, { recursive: true, force: true });
    mkdirSync(path.join(BOOT, 'occ.conf.d'), { recursive: true });
    writeFileSync(path.join(BOOT, 'occ.conf.d/package-test.conf'), '[ec2]\nmetadata_url =\n');
    t.comment(`fresh tree in ${(await freshTree(ROOT)).toFixed(1)} s`);
    writeFileSync(
      path.join(ROOT, 'etc/cloud/cloud-init.disabled'),
      'package-boot.itest.ts: the package alone, no datasource\n',
    );

    const c = bootContainer({
      tree: ROOT,
      consoleLog: path.join(BOOT, 'console.log'),
      hostname: 'package-test',
      bindRo: {
        [debPackage() as string]: '/root/os-config-agent.deb',
        [path.join(BOOT, 'occ.conf.d')]: '/etc/os-collect-config.conf.d',
      },
    });
    container = c;
    t.comment(`booted: ${await c.booted(120_000)} in ${((Date.now() - c.startedAt) / 1000).toFixed(1)} s`);
    t.equal(await dpkgStatus(c, 'os-config-agent'), 'absent', 'the stock system has no agent');

    const apt = async (args: string, log: string) => {
      const started = Date.now();
      await c.exec(
        [
          'sh',
          '-c',
          `DEBIAN_FRONTEND=noninteractive apt-get ${args} > /root/${log} 2>&1 || { cat /root/${log}; exit 1; }`,
        ],
        300_000,
      );
      return (Date.now() - started) / 1000;
    };
    const active = () => say(c, ['systemctl', 'is-active', UNIT]);
    const mainPid = async () => Number(await say(c, ['systemctl', 'show', '-p', 'MainPID', '--value', UNIT]));

    // Install: enabled, started on this running system, the package's agent.
    t.comment(
      `apt install in ${(await apt('install -y --no-install-recommends /root/os-config-agent.deb', 'install.log')).toFixed(1)} s`,
    );
    t.equal(await dpkgStatus(c, 'os-config-agent'), 'ii', 'installed');
    t.equal(await say(c, ['systemctl', 'is-enabled', UNIT]), 'enabled', 'the unit is enabled');
    await waitUntil('the agent to be active', async () => (await active()) === 'active', 60_000, c.service);
    t.pass('the unit is active');
    t.equal(
      await say(c, ['os-collect-config', '--version']),
      `os-collect-config (os-config-agent) ${VERSION}`,
      'os-collect-config --version is ours, and says so',
    );
    // A hook run by hand on this stock system, which has no node of its own: its interpreter is the package's.
    t.equal(await say(c, ['sh', '-c', 'command -v node || echo none']), 'none', 'no node on PATH');
    t.match(
      await say(c, [
        'sh',
        '-c',
        `printf '%s' '${JSON.stringify({ id: 'by-hand', name: 'by-hand', group: 'script', config: '#!/bin/sh\necho by hand\n', inputs: [], outputs: [], options: {} })}' | /usr/libexec/heat-config/hooks/script`,
      ]),
      // Printed as upstream's hooks print it: Python's json.dumps.
      /"deploy_stdout": "by hand\\n".*"deploy_status_code": 0/,
      'the script hook runs by hand',
    );
    t.equal(
      await say(c, ['readlink', '-f', '/usr/bin/os-collect-config']),
      '/usr/lib/os-config-agent/bin/os-collect-config',
      'from the package',
    );
    const pid = await mainPid();
    t.equal(
      await say(c, ['readlink', `/proc/${pid}/exe`]),
      '/usr/lib/os-config-agent/node/bin/node',
      "the service runs on the package's Node.js",
    );
    await waitUntil(
      "the agent's first line in the journal",
      async () =>
        agentLines(await say(c, ['journalctl', '--no-pager', '-u', UNIT, '-o', 'cat'])).some(
          (l) => l.msg === 'agent starting',
        ),
      60_000,
      c.service,
    );
    t.pass('the agent logs to the journal');
    t.equal(await say(c, ['stat', '-c', '%a', '/var/lib/os-config-agent']), '700', 'state directory 0700');
    t.equal(await say(c, ['stat', '-c', '%a', '/etc/os-collect-config.conf']), '600', 'configuration 0600');

    // Reinstall (an upgrade's path through postinst): the running agent is restarted.
    await apt('install -y --reinstall --no-install-recommends /root/os-config-agent.deb', 'reinstall.log');
    await waitUntil(
      'the agent to be restarted',
      async () => (await active()) === 'active' && (await mainPid()) !== pid && (await mainPid()) > 0,
      60_000,
      c.service,
    );
    t.pass('a reinstall restarts the running agent');

    // A reinstall run by the agent's own `script` deployment (as `apt-get -y upgrade` in a deployment would upgrade
    // it): the postinst must not restart the unit, whose stop would end the deployment's processes, apt and dpkg among
    // them; the agent restarts itself once the pass is over. The deployment comes from a local data file (the `local`
    // collector alone, through a conf.d file written on the host side of the bind mount), asks for no signal, and
    // records the OS_CONFIG_AGENT_PID it was given and apt's output.
    const localData = path.join(ROOT, 'var/lib/os-collect-config/local-data');
    mkdirSync(localData, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(localData, 'upgrade.json'), JSON.stringify({ deployments: [SELF_UPGRADE, FAILING] }), {
      mode: 0o600,
    });
    writeFileSync(path.join(BOOT, 'occ.conf.d/upgrade-test.conf'), '[DEFAULT]\ncollectors = local\n');
    const agentPid = await mainPid();
    await c.exec(['systemctl', 'reload', UNIT]);
    const runs = async () =>
      (await say(c, ['sh', '-c', 'cat /root/upgrade-runs 2>/dev/null || true'])).split('\n').filter(Boolean);
    await waitUntil('the upgrading deployment to run', async () => (await runs()).length > 0, 120_000, c.service);
    const statusJson = async () => JSON.parse(await say(c, ['os-config-agent', 'status', '--json'])) as StatusJson;
    // Whichever agent runs once things settle (killed half-way, the deployment would run again under a third one).
    await waitUntil(
      'a restarted agent to end its first cycle',
      async () => {
        const pid = await mainPid();
        if ((await active()) !== 'active' || pid === 0 || pid === agentPid) return false;
        const s = await statusJson();
        return s.agent?.pid === pid && s.agent.lastCycle?.endedAt !== undefined;
      },
      180_000,
      c.service,
    );
    t.same(await runs(), [String(agentPid)], 'the deployment ran exactly once, told the pid of the agent running it');
    t.equal(
      await say(c, ['dpkg-query', '-W', '-f', '${Status}', 'os-config-agent']),
      'install ok installed',
      'dpkg finished configuring the package',
    );
    t.equal(await say(c, ['dpkg', '--audit']), '', 'dpkg --audit finds nothing half-done');
    t.match(
      await say(c, ['cat', '/root/upgrade-apt.log']),
      /os-config-agent: upgraded by one of the agent's own deployments; the agent \(process \d+\) will restart itself once its current cycle is over/,
      'the postinst said why it left the unit alone',
    );
    const record = (await statusJson()).deployments?.find((d) => d.id === SELF_UPGRADE.id);
    t.match(record, { state: 'done', exitCode: 0, hookStarts: 1 }, 'the deployment is done, its hook started once');
    // journald's priorities: the failed deployment is among the warnings, and nothing below a warning is.
    const warnings = agentLines(await say(c, ['journalctl', '--no-pager', '-u', UNIT, '-p', 'warning', '-o', 'cat']));
    t.ok(
      warnings.some(
        (l) => l.msg === 'deployment state changed' && l.deploymentName === FAILING.name && l.failed === true,
      ),
      'journalctl -p warning shows the failed deployment',
    );
    t.ok(
      warnings.every((l) => ['warn', 'error', 'fatal'].includes(String(l.level))),
      'and only warnings and worse',
    );
    const status = await c.exec(['os-config-agent', 'status']).catch((e: { code?: number; stdout?: string }) => e);
    t.match(
      typeof status === 'string' ? status : (status.stdout ?? ''),
      /^RESULT: a deployment failed \(exit 1\)$/m,
      'status: the failure, with the agent running',
    );
    // Its own lines only: the agent before it may have said the same, had one of its passes ended between the shell
    // reinstall's unpacking and the restart that reinstall queued.
    const oldAgent = agentLines(
      await say(c, ['journalctl', '--no-pager', '-u', UNIT, `_PID=${agentPid}`, '-o', 'cat']),
    );
    t.equal(
      oldAgent.filter((l) => l.msg === "the agent's files were upgraded; restarting to run the new version").length,
      1,
      'the agent that ran the deployment logged its restart, once',
    );
    t.equal(oldAgent.at(-1)?.msg, 'stopped', 'and stopped by itself (no SIGTERM)');
    t.notOk(
      oldAgent.some((l) => l.msg === 'shutting down'),
      'no shutdown signal reached it',
    );

    // Remove: stopped, unit gone, configuration and state kept.
    await c.exec(['touch', '/var/lib/os-config-agent/marker']);
    await apt('remove -y os-config-agent', 'remove.log');
    t.equal(await dpkgStatus(c, 'os-config-agent'), 'rc', 'removed, configuration files kept');
    t.not(await active(), 'active', 'the agent is stopped');
    t.equal(await mainPid(), 0, 'no agent process');
    t.notOk(await exists(c, '/lib/systemd/system/os-config-agent.service'), 'the unit file is gone');
    t.notOk(
      await exists(c, '/etc/systemd/system/multi-user.target.wants/os-config-agent.service'),
      'and its enablement',
    );
    t.notOk(await exists(c, '/usr/bin/os-collect-config'), 'the commands are gone');
    t.ok(await exists(c, '/var/lib/os-config-agent/marker'), '/var/lib state is kept');
    t.ok(await exists(c, '/etc/os-collect-config.conf'), 'the configuration is kept');

    // Purge: the agent's state and the configuration go, and no mask is left behind.
    await apt('purge -y os-config-agent', 'purge.log');
    t.equal(await dpkgStatus(c, 'os-config-agent'), 'absent', 'purged');
    t.notOk(await exists(c, '/var/lib/os-config-agent'), "the agent's state is gone");
    t.notOk(await exists(c, '/etc/os-collect-config.conf'), 'the configuration is gone');
    t.notOk(await exists(c, '/etc/systemd/system/os-config-agent.service'), 'no mask is left');
    t.match(
      await say(c, ['systemctl', 'list-unit-files', '--no-legend', UNIT]),
      /^$/,
      'systemd knows no such unit any more',
    );

    const stopped = Date.now();
    await c.stop();
    container = undefined;
    t.equal(await c.service.exited, 0, `clean poweroff in ${((Date.now() - stopped) / 1000).toFixed(1)} s`);
  },
);
