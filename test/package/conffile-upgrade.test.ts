import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { REPO } from '../helpers/bundle.js';
import { SCRATCH_ROOT_MOUNTS, SCRATCH_ROOT_RUN } from '../helpers/scratch-root.js';

// Before 0.2.0 the agent wrote Heat's settings into /etc/os-collect-config.conf, the package's conffile; the next
// package that changed the conffile made dpkg ask about it, in `apt-get -y upgrade` run by a deployment too (a
// question nobody answers: dpkg fails on the closed stdin). Here dpkg itself upgrades, in a scratch root, from a
// package holding 0.1.0's conffile, rewritten as 0.1.0's agent rewrote it, to one with this release's conffile and
// preinst (scripts/deb/): the packages hold nothing else, so the test takes seconds, and what it checks is dpkg's own
// conffile handling with the package's own script. deb.test.ts checks the whole package.

const skip =
  process.getuid?.() !== 0
    ? 'needs root (mount namespaces, dpkg in a scratch root)'
    : spawnSync('sh', ['-c', 'command -v dpkg-deb && command -v unshare']).status !== 0
      ? 'needs dpkg-deb and unshare'
      : false;

const REWRITTEN = [
  '# Written by os-config-agent from the os-collect-config metadata Heat provides.',
  '# [DEFAULT] lines Heat does not set and sections other than cfn/heat/zaqar/request are kept on rewrite.',
  '[DEFAULT]',
  'command = os-refresh-config',
  'collectors = heat_local',
  'collectors = cfn',
  '',
  '[cfn]',
  'metadata_url = http://192.0.2.1:8000/v1/',
  'secret_access_key = k3y',
  'access_key_id = AK',
  '',
].join('\n');

const SCRATCH = `
set -eu
S=$1; OLD=$2; NEW=$3; OUT=$4; REWRITTEN=$5
${SCRATCH_ROOT_MOUNTS}
cp "$OLD" "$S/m/tmp/old.deb"; cp "$NEW" "$S/m/tmp/new.deb"
${SCRATCH_ROOT_RUN}
run dpkg --force-not-root -i /tmp/old.deb > "$OUT/old.log" 2>&1
cp "$REWRITTEN" "$S/m/etc/os-collect-config.conf"
status=0
run dpkg -i /tmp/new.deb < /dev/null > "$OUT/upgrade.log" 2>&1 || status=$?
echo "$status" > "$OUT/status"
cp "$S/m/etc/os-collect-config.conf" "$OUT/conffile"
cp "$S/m/etc/os-collect-config.conf.d/00-heat.conf" "$OUT/heat.conf" 2>/dev/null || true
stat -c %a "$S/m/etc/os-collect-config.conf.d/00-heat.conf" > "$OUT/heat-mode" 2>/dev/null || true
`;

/** A package of `version` holding only the conffile (and the maintainer scripts given). */
function tinyPackage(dir: string, version: string, conffile: string, scripts: Record<string, string>): string {
  const tree = path.join(dir, `tree-${version}`);
  mkdirSync(path.join(tree, 'DEBIAN'), { recursive: true });
  mkdirSync(path.join(tree, 'etc/os-collect-config.conf.d'), { recursive: true });
  writeFileSync(path.join(tree, 'etc/os-collect-config.conf'), conffile, { mode: 0o600 });
  writeFileSync(
    path.join(tree, 'DEBIAN/control'),
    `Package: os-config-agent\nVersion: ${version}\nArchitecture: all\nMaintainer: test <test@localhost>\nDescription: conffile test\n`,
  );
  writeFileSync(path.join(tree, 'DEBIAN/conffiles'), '/etc/os-collect-config.conf\n');
  for (const [name, text] of Object.entries(scripts)) {
    writeFileSync(path.join(tree, 'DEBIAN', name), text);
    chmodSync(path.join(tree, 'DEBIAN', name), 0o755);
  }
  const deb = path.join(dir, `os-config-agent_${version}_all.deb`);
  const r = spawnSync('dpkg-deb', ['--root-owner-group', '-Znone', '-b', tree, deb], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return deb;
}

t.test(
  "upgrade from 0.1.0 with the conffile its agent rewrote: dpkg asks nothing, Heat's settings move to conf.d",
  { skip, timeout: 120_000 },
  async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'oca-conffile-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const scriptsModule = path.join(REPO, 'scripts/deb/maintainer-scripts.mjs');
    const { maintainerScripts } = (await import(scriptsModule)) as {
      maintainerScripts(): { preinst: string };
    };
    const conffile010 = readFileSync(path.join(REPO, 'scripts/deb/os-collect-config.conf-0.1.0'), 'utf8');
    const conffile = readFileSync(path.join(REPO, 'scripts/deb/os-collect-config.conf'), 'utf8');
    const old = tinyPackage(dir, '0.1.0-1', conffile010, {});
    const current = tinyPackage(dir, '0.2.0-1', conffile, { preinst: maintainerScripts().preinst });
    writeFileSync(path.join(dir, 'rewritten.conf'), REWRITTEN);
    mkdirSync(path.join(dir, 's'));
    const res = spawnSync(
      'unshare',
      [
        '--mount',
        '--fork',
        'bash',
        '-c',
        SCRATCH,
        'scratch',
        path.join(dir, 's'),
        old,
        current,
        dir,
        path.join(dir, 'rewritten.conf'),
      ],
      { encoding: 'utf8', timeout: 100_000 },
    );
    const read = (f: string) => (existsSync(path.join(dir, f)) ? readFileSync(path.join(dir, f), 'utf8') : '');
    t.equal(res.status, 0, 'the scratch upgrade ran', { stderr: res.stderr, old: read('old.log') });
    const log = read('upgrade.log');
    t.equal(read('status').trim(), '0', 'the upgrade succeeded with stdin closed', { log });
    t.notMatch(log, /Configuration file '\/etc\/os-collect-config\.conf'/, 'dpkg asked nothing');
    t.match(
      log,
      /Heat's settings moved from \/etc\/os-collect-config\.conf to \/etc\/os-collect-config\.conf\.d\/00-heat\.conf/,
    );
    t.equal(read('conffile'), conffile, "the new release's conffile: the operator's again");
    t.equal(read('heat.conf'), REWRITTEN, "Heat's settings, whole, in the agent's own file");
    t.equal(read('heat-mode').trim(), '600', 'still 0600: it holds credentials');
  },
);

t.test(
  'an operator who changed the conffile by hand is asked, as dpkg always asks',
  { skip, timeout: 120_000 },
  async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'oca-conffile-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const scriptsModule = path.join(REPO, 'scripts/deb/maintainer-scripts.mjs');
    const { maintainerScripts } = (await import(scriptsModule)) as { maintainerScripts(): { preinst: string } };
    const conffile010 = readFileSync(path.join(REPO, 'scripts/deb/os-collect-config.conf-0.1.0'), 'utf8');
    const old = tinyPackage(dir, '0.1.0-1', conffile010, {});
    const current = tinyPackage(
      dir,
      '0.2.0-1',
      readFileSync(path.join(REPO, 'scripts/deb/os-collect-config.conf'), 'utf8'),
      { preinst: maintainerScripts().preinst },
    );
    writeFileSync(path.join(dir, 'mine.conf'), `${conffile010}\n[agent]\nlog_level = debug\n`);
    mkdirSync(path.join(dir, 's'));
    spawnSync(
      'unshare',
      [
        '--mount',
        '--fork',
        'bash',
        '-c',
        SCRATCH,
        'scratch',
        path.join(dir, 's'),
        old,
        current,
        dir,
        path.join(dir, 'mine.conf'),
      ],
      { encoding: 'utf8', timeout: 100_000 },
    );
    t.not(readFileSync(path.join(dir, 'status'), 'utf8').trim(), '0', "the operator's own change is theirs to settle");
    t.match(readFileSync(path.join(dir, 'upgrade.log'), 'utf8'), /Configuration file '\/etc\/os-collect-config\.conf'/);
    t.notOk(existsSync(path.join(dir, 'heat.conf')), 'nothing moved');
  },
);
