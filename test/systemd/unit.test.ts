import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO } from '../helpers/bundle.js';

// systemd/os-config-agent.service: what it promises (ordering after cloud-init and the network, restart policy,
// journald, hardening that leaves deployments alone), checked statically and by systemd-analyze verify in a
// directory root holding the system's units, the unit, and an executable at its ExecStart path. With stand-ins for
// cloud-init's units ordered as Debian ships them (cloud-final.service after multi-user.target), booting to
// multi-user.target must involve no ordering cycle, since systemd would drop the agent's start job to break one.

const UNIT = path.join(REPO, 'systemd/os-config-agent.service');
const HOST_UNITS = '/usr/lib/systemd/system';
const analyze = existsSync('/usr/bin/systemd-analyze') && existsSync(path.join(HOST_UNITS, 'multi-user.target'));
const NO_SYSTEMD = 'systemd-analyze or the system unit files are not installed';

type Unit = Map<string, Map<string, string[]>>;

function parseUnit(text: string): Unit {
  const out: Unit = new Map();
  let section: Map<string, string[]> | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const head = /^\[(.+)\]$/.exec(line);
    if (head) {
      section = new Map();
      out.set(head[1]!, section);
      continue;
    }
    const eq = line.indexOf('=');
    if (!section || eq < 0) throw new Error(`unparseable unit line: ${line}`);
    const key = line.slice(0, eq);
    section.set(key, [...(section.get(key) ?? []), line.slice(eq + 1)]);
  }
  return out;
}

const text = readFileSync(UNIT, 'utf8');
const unit = parseUnit(text);
const values = (section: string, key: string) => unit.get(section)?.get(key) ?? [];
const words = (section: string, key: string) => values(section, key).flatMap((v) => v.split(/\s+/));

t.test('what the unit declares', async (t) => {
  t.same(
    values('Service', 'ExecStart'),
    ['/opt/os-config-agent/bin/node --lite-mode --v8-pool-size=0 /opt/os-config-agent/lib/os-config-agent.mjs run'],
    "runs `os-config-agent run` with the installed Node.js, V8's flags on its command line (docs/build.md)",
  );
  const installer = readFileSync(
    path.join(REPO, 'elements/os-config-agent/install.d/20-os-config-agent-install'),
    'utf8',
  );
  t.match(installer, 'prefix=/opt/os-config-agent', 'the element installs Node.js and the bundle there');
  for (const after of ['network-online.target', 'cloud-init.service', 'cloud-config.service', 'cloud-final.service'])
    t.ok(words('Unit', 'After').includes(after), `After=${after}`);
  t.ok(words('Unit', 'Wants').includes('network-online.target'));
  t.same(values('Service', 'Restart'), ['always']);
  t.same(values('Service', 'RestartSec'), ['5s']);
  t.same(values('Unit', 'StartLimitIntervalSec'), ['0'], 'never stops restarting');
  t.same(values('Service', 'KillMode'), ['mixed'], 'SIGTERM to the agent only');
  t.ok(values('Service', 'TimeoutStopSec').length === 1);
  t.same(values('Service', 'StandardOutput'), ['journal']);
  t.same(values('Service', 'StandardError'), ['journal']);
  t.same(
    values('Service', 'ExecReload'),
    [`/bin/sh -c 'kill -HUP "$MAINPID"'`],
    'reload is the SIGHUP the agent handles',
  );
  t.match(
    values('Service', 'Environment').join(' '),
    /^PATH=\/opt\/os-config-agent\/bin:/,
    "hooks find the agent's Node.js first",
  );
  t.same(values('Install', 'WantedBy'), ['multi-user.target']);
  t.same(values('Service', 'Type'), ['notify'], 'READY=1 from the agent (docs/systemd.md)');
  t.same(values('Service', 'NotifyAccess'), ['all'], 'the messages come from its child systemd-notify');
  t.same(values('Service', 'WatchdogSec'), ['120s'], 'the poll loop feeds a watchdog');
  t.ok(
    Number(values('Service', 'OOMScoreAdjust')[0]) < 0,
    'the kernel kills a deployment (raised to 0) before the agent',
  );
  // Settings that would break deployments run as root are absent.
  for (const key of [
    'ProtectSystem',
    'ProtectHome',
    'PrivateTmp',
    'NoNewPrivileges',
    'ReadOnlyPaths',
    'PrivateDevices',
    'ProtectKernelTunables',
    'ProtectKernelModules',
    'MemoryDenyWriteExecute',
    'User',
    'DynamicUser',
    'CapabilityBoundingSet',
  ]) {
    t.same(values('Service', key), [], `${key} not set`);
  }
  // Each hardening setting carries its reason on the line above.
  const raw = text.split('\n');
  for (const key of [
    'LimitCORE',
    'SystemCallFilter',
    'KeyringMode',
    'UMask',
    'DefaultDependencies',
    'KillMode',
    'StartLimitIntervalSec',
    'Type',
    'WatchdogSec',
    'OOMScoreAdjust',
  ]) {
    const i = raw.findIndex((l) => l.startsWith(`${key}=`));
    t.ok(i > 0 && raw[i - 1]!.startsWith('#'), `${key} is commented`);
  }
});

/** A directory root with the system's units, this unit, optional extra units, and the ExecStart binary. */
function makeRoot(
  dir: string,
  unitText: string,
  options: { binary?: boolean; extraUnits?: Record<string, string> } = {},
): string {
  const root = path.join(dir, 'root');
  mkdirSync(path.join(root, 'usr/lib/systemd'), { recursive: true });
  mkdirSync(path.join(root, 'etc/systemd/system'), { recursive: true });
  cpSync(HOST_UNITS, path.join(root, 'usr/lib/systemd/system'), { recursive: true, verbatimSymlinks: true });
  writeFileSync(path.join(root, 'usr/lib/systemd/system/os-config-agent.service'), unitText);
  for (const [name, body] of Object.entries(options.extraUnits ?? {}))
    writeFileSync(path.join(root, 'usr/lib/systemd/system', name), body);
  if (options.binary !== false) {
    mkdirSync(path.join(root, 'opt/os-config-agent/bin'), { recursive: true });
    writeFileSync(path.join(root, 'opt/os-config-agent/bin/node'), '#!/bin/sh\n', { mode: 0o755 });
  }
  // ExecReload's shell, and ExecStart of the cloud-init stand-ins.
  mkdirSync(path.join(root, 'bin'), { recursive: true });
  for (const tool of ['sh', 'true']) writeFileSync(path.join(root, 'bin', tool), '#!/bin/sh\n', { mode: 0o755 });
  return root;
}

function verify(root: string, ...units: string[]): { status: number | null; output: string } {
  const r = spawnSync('systemd-analyze', ['verify', `--root=${root}`, ...units], {
    encoding: 'utf8',
    timeout: 30_000,
    cwd: root,
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

function enable(root: string, ...units: string[]): void {
  const r = spawnSync('systemctl', [`--root=${root}`, 'enable', ...units], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`systemctl enable failed: ${r.stderr}`);
}

t.test('systemd-analyze verify', { skip: !analyze && NO_SYSTEMD }, async (t) => {
  t.test('the unit verifies cleanly', async (t) => {
    const r = verify(makeRoot(t.testdir(), text), 'os-config-agent.service');
    t.equal(r.status, 0, r.output);
    t.notMatch(r.output, /os-config-agent/, 'no warning about the unit (unknown keys, bad values)');
  });

  t.test('verify does catch a broken unit (the check can fail)', async (t) => {
    const missing = verify(makeRoot(t.testdir(), text, { binary: false }), 'os-config-agent.service');
    t.not(missing.status, 0);
    t.match(missing.output, /\/opt\/os-config-agent\/bin\/node is not executable/);
    const typo = verify(
      makeRoot(t.testdir(), text.replace('KillMode=mixed', 'KillMode=mixed\nRestartSecs=5s')),
      'os-config-agent.service',
    );
    t.match(typo.output, /Unknown key 'RestartSecs'/);
  });

  // Debian's cloud-init orders cloud-final.service after multi-user.target and starts it from cloud-init.target,
  // itself pulled in by multi-user.target. These stand-ins keep exactly that ordering.
  const cloudInit = {
    'cloud-init.service':
      '[Unit]\nDescription=stand-in cloud-init (network stage)\nDefaultDependencies=no\nBefore=network-online.target sysinit.target\n[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=cloud-init.target\n',
    'cloud-config.service':
      '[Unit]\nDescription=stand-in cloud-config\nAfter=network-online.target\nWants=network-online.target\n[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=cloud-init.target\n',
    'cloud-final.service':
      '[Unit]\nDescription=stand-in cloud-final\nAfter=network-online.target cloud-config.service\nAfter=multi-user.target\nWants=network-online.target cloud-config.service\n[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=cloud-init.target\n',
    'cloud-init.target':
      '[Unit]\nDescription=stand-in cloud-init target\nAfter=multi-user.target\n[Install]\nWantedBy=multi-user.target\n',
  };
  const boot = (dir: string, unitText: string) => {
    const root = makeRoot(dir, unitText, { extraUnits: cloudInit });
    enable(
      root,
      'os-config-agent.service',
      'cloud-init.target',
      'cloud-init.service',
      'cloud-config.service',
      'cloud-final.service',
    );
    return verify(root, 'multi-user.target');
  };

  t.test('booting to multi-user.target with cloud-init: no ordering cycle', async (t) => {
    const r = boot(t.testdir(), text);
    t.equal(r.status, 0, r.output);
    t.notMatch(r.output, /ordering cycle/i, r.output);
    t.notMatch(r.output, /deleted to break/i);
  });

  t.test('with the default dependencies the same boot has a cycle (why they are off)', async (t) => {
    const withDefaults = text.replace(
      /^(DefaultDependencies=no|Requires=sysinit\.target|After=sysinit\.target basic\.target|Conflicts=shutdown\.target|Before=shutdown\.target)\n/gm,
      '',
    );
    t.notMatch(withDefaults, /DefaultDependencies/);
    const r = boot(t.testdir(), withDefaults);
    t.match(r.output, /Found ordering cycle/);
    t.match(
      r.output,
      /(Found ordering cycle on|Found dependency on) os-config-agent\.service\/start/,
      'the agent is part of it',
    );
    t.match(r.output, /Job \S+ deleted to break ordering cycle/, 'systemd drops a start job to break it');
  });
});
