import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { BUILTIN_HOOK_GROUPS } from '../../src/hooks/registry.js';
import { REPO, runProcess, type BundleRun } from '../helpers/bundle.js';
import { SCRATCH_ROOT_MOUNTS, SCRATCH_ROOT_RUN } from '../helpers/scratch-root.js';

// `npm run package` (scripts/package-deb.mjs) with Debian's own tools: the .deb is built from dist/, checked with
// dpkg-deb and lintian (no errors), then installed for real with apt into a scratch root — an overlay over this
// machine's / in a private mount namespace, so nothing here changes — where it takes the os-collect-config commands
// over from Debian's Python packages, and is removed and purged. Its postinst's restart decision is run on a faked
// running system: an upgrade from inside one of the agent's own deployments must not restart the unit.

const tools = ['dpkg-deb', 'lintian', 'strip', 'unshare', 'apt-get'];
const missing = tools.find((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
const skip =
  process.getuid?.() !== 0
    ? 'needs root (mount namespaces, apt in a scratch root)'
    : missing
      ? `needs ${missing}`
      : !existsSync(path.join(REPO, 'dist/hooks/script'))
        ? 'needs the build (npm run build)'
        : false;

const { version, author } = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
  version: string;
  author: string;
};
// The build, lintian and the scratch install take over two minutes on a loaded machine: longer than the suite's
// per-file limit, shorter than the subtests' own timeouts.
t.setTimeout(480_000);
const out = mkdtempSync(path.join(os.tmpdir(), 'oca-deb-test-'));
t.teardown(() => rmSync(out, { recursive: true, force: true }));
let deb = '';
let lintian: Promise<BundleRun> | undefined;

t.before(() => {
  if (skip) return;
  // gzip: xz of the Node.js runtime would add a minute to every test run; the contents are the same.
  const res = spawnSync(
    process.execPath,
    [path.join(REPO, 'scripts/package-deb.mjs'), '--out', out, '--compress', 'gzip'],
    { encoding: 'utf8', timeout: 600_000 },
  );
  if (res.status !== 0) throw new Error(`package-deb failed: ${res.stderr}${res.stdout}`);
  deb = path.join(out, `os-config-agent_${version}-1_amd64.deb`);
  // lintian takes most of a minute of CPU: it runs while the scratch installs below wait on the disk, and its verdict
  // is read last (the file has tap's two minutes in all).
  lintian = runProcess('lintian', ['--tag-display-limit', '0', deb], { timeoutMs: 280_000 });
});

const dpkgDeb = (...args: string[]) =>
  spawnSync('dpkg-deb', [...args, deb], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).stdout;

t.test('control fields: version, architecture, the Python commands taken over, who made it', { skip }, async (t) => {
  const field = (name: string) =>
    dpkgDeb('-f')
      .split('\n')
      .find((l) => l.startsWith(`${name}:`))
      ?.slice(name.length + 1)
      .trim();
  t.equal(field('Package'), 'os-config-agent');
  t.equal(field('Version'), `${version}-1`);
  t.equal(field('Architecture'), 'amd64');
  for (const f of ['Conflicts', 'Replaces'])
    t.equal(field(f), 'python3-os-collect-config, python3-os-apply-config, python3-os-refresh-config', f);
  t.equal(dpkgDeb('--ctrl-tarfile').length > 0, true);
  t.equal(field('Maintainer'), author, "the project's maintainers (package.json author), no placeholder");
  t.notMatch(dpkgDeb('-f'), /opendev\.org|heat-agents\b.*Homepage|lists\.example\.org/, "no other project's page");
  const homepage = field('Homepage');
  if (homepage !== undefined) t.notMatch(homepage, /opendev|heat-agents/);
});

t.test(
  "contents: launchers on PATH, every hook, the unit with the package's paths, the conffile, the runtime",
  { skip },
  async (t) => {
    const listing = dpkgDeb('-c');
    t.match(
      listing,
      /^drwxr-xr-x root\/root +0 \S+ \S+ \.\/\n/,
      "./ is 0755: dpkg-deb -x leaves its target as others' can read",
    );
    for (const name of ['os-config-agent', 'os-collect-config', 'os-apply-config', 'os-refresh-config']) {
      t.match(
        listing,
        new RegExp(`\\./usr/bin/${name} -> \\.\\./lib/os-config-agent/bin/${name}\\n`),
        `/usr/bin/${name}`,
      );
    }
    t.notMatch(
      listing,
      /\.\/usr\/bin\/cfn-/,
      "no heat-cfntools command name in /usr/bin (heat-cfntools' package owns them)",
    );
    t.match(
      listing,
      /\.\/usr\/sbin\/cfn-create-aws-symlinks -> \.\.\/lib\/os-config-agent\/bin\/cfn-create-aws-symlinks\n/,
      "cfn-create-aws-symlinks in /usr/sbin, for Heat's boot script",
    );
    for (const name of ['cfn-init', 'cfn-get-metadata', 'cfn-hup', 'cfn-signal', 'cfn-push-stats'])
      t.match(listing, new RegExp(`\\./usr/lib/os-config-agent/bin/${name}\\n`), `${name} in the package's bin`);
    for (const group of BUILTIN_HOOK_GROUPS)
      t.match(
        listing,
        new RegExp(`^-rwxr-xr-x root/root .* \\./usr/libexec/heat-config/hooks/${group}$`, 'm'),
        `hook ${group}`,
      );
    t.match(listing, /^-rw------- root\/root .* \.\/etc\/os-collect-config\.conf$/m, 'the configuration, 0600');
    t.match(listing, /^drwxr-xr-x root\/root .* \.\/etc\/os-collect-config\.conf\.d\/$/m, 'conf.d, for local settings');
    t.notMatch(
      listing,
      /os-collect-config\.conf\.d\/./,
      "nothing in it that dpkg would own: 00-heat.conf is the agent's",
    );
    for (const page of [
      'os-config-agent',
      'os-config-agent-status',
      'os-config-agent-collect-logs',
      'os-collect-config',
    ])
      t.match(
        listing,
        new RegExp(`^-rw-r--r-- root/root .* \\./usr/share/man/man1/${page}\\.1\\.gz$`, 'm'),
        `${page}(1)`,
      );
    t.match(listing, /\.\/usr\/share\/bash-completion\/completions\/os-config-agent$/m, 'the completion');
    t.match(
      listing,
      /\.\/usr\/share\/bash-completion\/completions\/os-collect-config -> os-config-agent$/m,
      'found by every command name',
    );
    for (const doc of [
      'README.md.gz',
      'changelog.gz',
      'status.md.gz',
      'troubleshooting.md.gz',
      'logging.md.gz',
      'copyright',
      'THIRD-PARTY-LICENSES',
    ])
      t.match(listing, new RegExp(`\\./usr/share/doc/os-config-agent/${doc.replace(/\./g, '\\.')}$`, 'm'), doc);
    t.match(listing, /\.\/usr\/lib\/os-config-agent\/node\/bin\/node$/m, 'a Node.js runtime');

    const tree = path.join(out, 'tree');
    mkdirSync(tree, { recursive: true });
    spawnSync('dpkg-deb', ['-x', deb, tree]);
    const copyright = readFileSync(path.join(tree, 'usr/share/doc/os-config-agent/copyright'), 'utf8');
    t.match(
      copyright,
      /^Files: usr\/lib\/os-config-agent\/lib\/\* .*\nCopyright: [^]*?\nLicense: Apache-2\.0 and .*\bMIT\b/m,
      'the copyright file names the licences of the bundled npm packages',
    );
    t.match(
      readFileSync(path.join(tree, 'usr/share/doc/os-config-agent/THIRD-PARTY-LICENSES'), 'utf8'),
      /^Package: commander \S+\nLicense: MIT\n/m,
      'with their notices beside it',
    );
    const unit = readFileSync(path.join(tree, 'lib/systemd/system/os-config-agent.service'), 'utf8');
    t.match(
      unit,
      /^ExecStart=\/usr\/lib\/os-config-agent\/bin\/node --lite-mode --v8-pool-size=0 \/usr\/lib\/os-config-agent\/lib\/os-config-agent\.mjs run$/m,
    );
    t.notMatch(unit, /\/opt\//, 'no /opt path left');
    const node = spawnSync(
      path.join(tree, 'usr/lib/os-config-agent/node/bin/node'),
      [path.join(tree, 'usr/lib/os-config-agent/lib/os-config-agent.mjs'), '--version'],
      { encoding: 'utf8' },
    );
    t.equal(node.stdout.trim(), `os-config-agent ${version}`, 'the bundled runtime runs the bundle');
    for (const group of BUILTIN_HOOK_GROUPS)
      t.equal(
        readFileSync(path.join(tree, 'usr/libexec/heat-config/hooks', group), 'utf8').split('\n', 1)[0],
        '#!/usr/lib/os-config-agent/bin/node',
        `hook ${group}: started by the package's Node.js`,
      );
    const conf = readFileSync(path.join(tree, 'etc/os-collect-config.conf'), 'utf8');
    t.match(
      conf,
      /^config_target = \/etc\/os-collect-config\.conf\.d\/00-heat\.conf$/m,
      "Heat's settings go elsewhere",
    );
    t.notMatch(conf, /add local settings below/);
    const man = spawnSync(
      'man',
      ['--warnings', '-l', path.join(tree, 'usr/share/man/man1/os-config-agent-status.1.gz')],
      {
        encoding: 'utf8',
        env: { ...process.env, MANWIDTH: '80' },
      },
    );
    t.equal(man.stderr, '', 'the installed page reads without a warning');
    t.match(man.stdout, /--wait/);
    t.equal(
      spawnSync('dpkg-deb', ['-I', deb, 'conffiles'], { encoding: 'utf8' }).stdout,
      '/etc/os-collect-config.conf\n',
      'a conffile',
    );
  },
);

// In a scratch root (overlay over /): apt install of the .deb, then remove, then purge. Each step's facts go to $OUT.
const SCRATCH = `
set -eu
S=$1; DEB=$2; OUT=$3
${SCRATCH_ROOT_MOUNTS}
mount -t tmpfs scratch "$S/m/run"
cp "$DEB" "$S/m/tmp/os-config-agent.deb"
${SCRATCH_ROOT_RUN}
apt() { run env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }
state() { s=$(run dpkg-query -W -f '\${db:Status-Abbrev}' "$1" 2>/dev/null) || s=absent; echo $s; }
echo "before python3-os-collect-config=$(state python3-os-collect-config)" > "$OUT/facts"
apt install -y --no-install-recommends -o Debug::NoLocking=1 /tmp/os-config-agent.deb > "$OUT/install.log" 2>&1
echo "installed=$(state os-config-agent)" >> "$OUT/facts"
echo "python3-os-collect-config=$(state python3-os-collect-config)" >> "$OUT/facts"
echo "version=$(run os-collect-config --version)" >> "$OUT/facts"
echo "enabled=$(readlink "$S/m/etc/systemd/system/multi-user.target.wants/os-config-agent.service" || echo no)" >> "$OUT/facts"
echo "statedir=$(stat -c %a "$S/m/var/lib/os-config-agent")" >> "$OUT/facts"
echo "confd=$(stat -c %a "$S/m/etc/os-collect-config.conf.d")" >> "$OUT/facts"
# A hook run by hand, with no node on PATH (a stock image has none): its interpreter line names the package's.
printf '%s' '{"id":"h1","name":"by-hand","group":"script","config":"#!/bin/sh\\necho by hand\\n","inputs":[],"outputs":[],"options":{}}' > "$S/m/tmp/dep.json"
echo "hook=$(chroot "$S/m" /usr/bin/env -i PATH=/nonexistent HOME=/root /usr/libexec/heat-config/hooks/script < "$S/m/tmp/dep.json" | tr -d '\n ')" >> "$OUT/facts"
echo "man=$(run man -w os-config-agent-status 2>&1)" >> "$OUT/facts"
echo "heat-cfntools=$(state heat-cfntools)" >> "$OUT/facts"
run cfn-create-aws-symlinks > "$OUT/symlinks.log" 2>&1 || echo "symlinks-exit=$?" >> "$OUT/facts"
echo "aws-cfn-init=$(readlink "$S/m/opt/aws/bin/cfn-init" || echo none)" >> "$OUT/facts"
touch "$S/m/var/lib/os-config-agent/marker"
apt remove -y -o Debug::NoLocking=1 os-config-agent > "$OUT/remove.log" 2>&1
echo "removed=$(state os-config-agent)" >> "$OUT/facts"
echo "state-after-remove=$([ -e "$S/m/var/lib/os-config-agent/marker" ] && echo kept || echo gone)" >> "$OUT/facts"
echo "conf-after-remove=$([ -e "$S/m/etc/os-collect-config.conf" ] && echo kept || echo gone)" >> "$OUT/facts"
echo "command-after-remove=$([ -e "$S/m/usr/bin/os-config-agent" ] && echo kept || echo gone)" >> "$OUT/facts"
apt purge -y -o Debug::NoLocking=1 os-config-agent > "$OUT/purge.log" 2>&1
echo "purged=$(state os-config-agent)" >> "$OUT/facts"
echo "state-after-purge=$([ -e "$S/m/var/lib/os-config-agent" ] && echo kept || echo gone)" >> "$OUT/facts"
echo "conf-after-purge=$([ -e "$S/m/etc/os-collect-config.conf" ] && echo kept || echo gone)" >> "$OUT/facts"
`;

t.test(
  'apt install into a scratch root: takes the commands over, enabled, not started while not booted; remove keeps state; purge removes it',
  { skip, timeout: 300_000 },
  async (t) => {
    const scratch = path.join(out, 'scratch');
    const facts = path.join(out, 'facts-dir');
    mkdirSync(scratch);
    mkdirSync(facts);
    const res = spawnSync('unshare', ['--mount', '--fork', 'bash', '-c', SCRATCH, 'scratch', scratch, deb, facts], {
      encoding: 'utf8',
      timeout: 280_000,
    });
    const read = (f: string) => (existsSync(path.join(facts, f)) ? readFileSync(path.join(facts, f), 'utf8') : '');
    t.equal(res.status, 0, 'the scratch install ran', {
      stderr: res.stderr,
      install: read('install.log').slice(-2000),
    });
    const got = Object.fromEntries(
      read('facts')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    t.equal(got.installed, 'ii');
    if (got.before?.startsWith('ii'))
      t.not(got['python3-os-collect-config'], 'ii', "Debian's python3-os-collect-config made way");
    t.equal(got.version, `os-collect-config (os-config-agent) ${version}`, 'os-collect-config is ours, and says so');
    t.equal(got.enabled, '/lib/systemd/system/os-config-agent.service', 'the unit is enabled');
    t.equal(got.statedir, '700', 'state directory 0700');
    t.equal(got.confd, '755', '/etc/os-collect-config.conf.d is there');
    t.match(got.hook, /"deploy_stdout":"byhand/, 'a hook runs by hand with no node on PATH');
    t.match(got.hook, /"deploy_status_code":0/);
    t.equal(got.man, '/usr/share/man/man1/os-config-agent-status.1.gz', 'man finds the page');
    t.equal(got['symlinks-exit'], undefined, 'cfn-create-aws-symlinks ran from PATH', { log: read('symlinks.log') });
    // This machine has Debian's heat-cfntools (the conformance reference): installed beside it, ours links its commands.
    if (got['heat-cfntools'] === 'ii')
      t.equal(got['aws-cfn-init'], '/usr/bin/cfn-init', "beside heat-cfntools, /opt/aws/bin links heat-cfntools' own");
    else t.equal(got['aws-cfn-init'], '/usr/lib/os-config-agent/bin/cfn-init', 'without it, ours');
    t.equal(got.removed, 'rc', 'removed, configuration kept');
    t.equal(got['state-after-remove'], 'kept', 'remove leaves /var/lib state');
    t.equal(got['conf-after-remove'], 'kept', 'and the conffile');
    t.equal(got['command-after-remove'], 'gone');
    t.equal(got.purged, 'absent', 'purged');
    t.equal(got['state-after-purge'], 'gone', "purge removes the agent's state");
    t.equal(got['conf-after-purge'], 'gone', 'and the conffile');
  },
);

// The postinst's restart decision on a "running" system, as the package ships it: run in a scratch root (overlay over
// /, private mount namespace) with /run/systemd/system present, no policy-rc.d, and recording fakes of systemctl,
// deb-systemd-helper and ischroot first on PATH (this machine runs no systemd, and the calls are what is checked).
// $4 is the version upgraded from ('' for a fresh install); the rest are environment assignments.
const POSTINST = `
set -eu
S=$1; CTRL=$2; OUT=$3; OLD=$4; shift 4
${SCRATCH_ROOT_MOUNTS}
mount -t tmpfs scratch "$S/m/run"
mkdir -p "$S/m/run/systemd/system" "$S/m/usr/local/sbin"
rm -f "$S/m/usr/sbin/policy-rc.d"
for tool in systemctl deb-systemd-helper ischroot; do
    status=0; [ "$tool" = ischroot ] && status=1
    printf '#!/bin/sh\\necho "%s $*" >> /tmp/calls\\nexit %s\\n' "$tool" "$status" > "$S/m/usr/local/sbin/$tool"
    chmod 755 "$S/m/usr/local/sbin/$tool"
done
cp "$CTRL/postinst" "$S/m/tmp/postinst"
: > "$S/m/tmp/calls"
chroot "$S/m" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" /bin/sh /tmp/postinst configure "$OLD" > "$OUT/stdout" 2> "$OUT/stderr"
cp "$S/m/tmp/calls" "$OUT/calls"
`;

t.test(
  "postinst on a running system: an upgrade from inside the agent's own deployment leaves the agent to restart itself",
  { skip, timeout: 120_000 },
  async (t) => {
    const ctrl = path.join(out, 'control');
    mkdirSync(ctrl, { recursive: true });
    t.equal(spawnSync('dpkg-deb', ['-e', deb, ctrl]).status, 0, 'control scripts extracted');
    // A pid no process can have (pids are below pid_max): a variable left over from an agent that is gone.
    const deadPid = readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim();
    let n = 0;
    const postinst = (old: string, env: Record<string, string> = {}) => {
      const dir = path.join(out, `postinst-${++n}`);
      mkdirSync(path.join(dir, 'scratch'), { recursive: true });
      const assignments = Object.entries(env).map(([k, v]) => `${k}=${v}`);
      const res = spawnSync(
        'unshare',
        [
          '--mount',
          '--fork',
          'bash',
          '-c',
          POSTINST,
          'postinst',
          path.join(dir, 'scratch'),
          ctrl,
          dir,
          old,
          ...assignments,
        ],
        { encoding: 'utf8', timeout: 60_000 },
      );
      const read = (f: string) => (existsSync(path.join(dir, f)) ? readFileSync(path.join(dir, f), 'utf8') : '');
      t.equal(res.status, 0, `postinst configure '${old}' ${assignments.join(' ')} exits 0`, {
        stderr: res.stderr + read('stderr'),
      });
      return { stdout: read('stdout'), calls: read('calls').trim().split('\n') };
    };
    const RESTART = 'systemctl --system --no-block try-restart os-config-agent.service';
    const START = 'systemctl --system --no-block start os-config-agent.service';
    const SELF =
      /^os-config-agent: upgraded by one of the agent's own deployments; the agent \(process (\d+)\) will restart itself once its current cycle is over$/;

    // This test's own process stands for the agent: alive, in the same pid namespace.
    const inside = postinst('0.0.9-1', { OS_CONFIG_AGENT_PID: String(process.pid) });
    t.notOk(
      inside.calls.some((c) => / (try-restart|restart|stop|start) /.test(c)),
      'the unit is neither restarted nor stopped',
      { calls: inside.calls },
    );
    t.ok(inside.calls.includes('systemctl --system daemon-reload'), 'systemd still reloads the new unit file');
    t.equal(inside.stdout.trim().split('\n').length, 1, 'one line', { stdout: inside.stdout });
    t.equal(SELF.exec(inside.stdout.trim())?.[1], String(process.pid), 'saying the agent restarts itself');

    const fromShell = postinst('0.0.9-1');
    t.ok(fromShell.calls.includes(RESTART), 'an upgrade from a shell restarts the unit, as before', {
      calls: fromShell.calls,
    });
    t.equal(fromShell.stdout, '');
    for (const stale of [deadPid, '0', '-1', '1x', ' ']) {
      const r = postinst('0.0.9-1', { OS_CONFIG_AGENT_PID: stale });
      t.ok(r.calls.includes(RESTART), `OS_CONFIG_AGENT_PID='${stale}' names no live agent: restarted`, {
        calls: r.calls,
      });
      t.notMatch(r.stdout, /restart itself/);
    }
    const fresh = postinst('', { OS_CONFIG_AGENT_PID: String(process.pid) });
    t.ok(fresh.calls.includes(START), 'a fresh install starts the unit whatever the environment', {
      calls: fresh.calls,
    });
  },
);

t.test('lintian: no errors', { skip, timeout: 300_000 }, async (t) => {
  const res = await lintian!;
  const errors = res.stdout.split('\n').filter((l) => l.startsWith('E:'));
  t.same(errors, [], 'no E: tags');
  t.comment(`lintian warnings: ${res.stdout.split('\n').filter((l) => l.startsWith('W:')).length}`);
});
