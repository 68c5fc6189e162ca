import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { REPO } from '../helpers/bundle.js';
import { ALL_ELEMENTS, ELEMENTS_DIR, mergeHooks } from './dib-sim.js';

// Element lint, following diskimage-builder's conventions (what its dib-lint checks, plus what a build would
// trip over later): READMEs, sorted and resolvable element-deps, executable bash scripts with the standard
// preamble that parse, environment files that source cleanly under `set -eu`, valid package-installs.yaml and
// pkg-map files, and no variable a script reads without setting or defaulting it. When Debian's
// python3-diskimage-builder is installed, its own dib-lint, package-installs-squash, pkg-map and dependency
// resolver are run on the elements too.

const DIB_DIR = '/usr/lib/python3/dist-packages/diskimage_builder';
const DIB_PYTHON = '/usr/bin/python3';
const dibInstalled = existsSync(path.join(DIB_DIR, 'elements')) && existsSync(DIB_PYTHON);
const NO_DIB = 'Debian python3-diskimage-builder is not installed';

// The elements diskimage-builder 3.13 ships, for resolving element-deps when it is not installed.
const DIB_STANDARD_ELEMENTS =
  `apt-conf apt-preferences apt-sources baremetal base block-device-efi block-device-efi-lvm block-device-gpt
block-device-mbr bootloader cache-url centos centos-minimal centos7 cleanup-kernel-initrd cloud-init cloud-init-datasources
cloud-init-disable-resizefs cloud-init-nocloud containerfile debian debian-minimal debian-systemd debian-upstart debootstrap
deploy-baremetal deploy-kexec deploy-targetcli deploy-tgtadm devuser dhcp-all-interfaces dib-init-system dib-python
dib-run-parts disable-nouveau disable-selinux dkms docker dpkg dracut-network dracut-ramdisk dracut-regenerate
dynamic-login element-manifest enable-serial-console ensure-venv epel fedora fedora-container fedora-minimal gentoo
growroot growvols grub2 hpdsa hwburnin hwdiscovery ibft-interfaces ilo install-bin install-static install-types
iscsi-boot iso journal-to-console keylime-agent local-config lvm manifests mellanox modprobe modprobe-blacklist
no-final-image oat-client openssh-server openstack-ci-mirrors opensuse opensuse-minimal package-installs
pip-and-virtualenv pip-cache pkg-map posix proliant-tools pypi python-brickclient python-stow-versions ramdisk
ramdisk-base rax-nova-agent redhat-common rhel rhel-common rhel7 rpm-distro runtime-ssh-host-keys
select-boot-kernel-initrd selinux-permissive simple-init source-repositories stable-interface-names svc-map sysctl
sysprep tpm-emulator uboot ubuntu ubuntu-common ubuntu-minimal ubuntu-signed ubuntu-systemd-container vm yum
yum-minimal zipl zypper zypper-minimal`.split(/\s+/);

const PHASES = [
  'root.d',
  'extra-data.d',
  'pre-install.d',
  'install.d',
  'post-install.d',
  'post-root.d',
  'block-device.d',
  'pre-finalise.d',
  'finalise.d',
  'cleanup.d',
];
const PACKAGE_KEYS = [
  'phase',
  'uninstall',
  'installtype',
  'arch',
  'not-arch',
  'dib_python_version',
  'build-only',
  'when',
];
// Variables diskimage-builder itself provides to phase scripts.
const DIB_PROVIDED = new Set([
  'TMP_HOOKS_PATH',
  'TMP_MOUNT_PATH',
  'TARGET_ROOT',
  'DIB_INIT_SYSTEM',
  'DISTRO_NAME',
  'DIB_RELEASE',
  'ARCH',
  'IMAGE_ELEMENT',
]);

const elements = readdirSync(ELEMENTS_DIR)
  .filter((n) => statSync(path.join(ELEMENTS_DIR, n)).isDirectory())
  .sort();
const standard = new Set(dibInstalled ? readdirSync(path.join(DIB_DIR, 'elements')) : DIB_STANDARD_ELEMENTS);

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'));
const listFile = (element: string, name: string) => {
  const file = path.join(ELEMENTS_DIR, element, name);
  return existsSync(file) ? lines(file) : [];
};

/** Every script an element ships: phase scripts and any other file starting with #!. */
function scriptsOf(element: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) {
        if (name !== 'environment.d') walk(p);
        continue;
      }
      const inPhase = PHASES.includes(path.basename(dir));
      if (inPhase || readFileSync(p, 'utf8').startsWith('#!')) out.push(p);
    }
  };
  walk(path.join(ELEMENTS_DIR, element));
  return out;
}

function envFilesOf(element: string): string[] {
  const dir = path.join(ELEMENTS_DIR, element, 'environment.d');
  return existsSync(dir)
    ? readdirSync(dir)
        .sort()
        .map((n) => path.join(dir, n))
    : [];
}

/** The element and its element-deps found in this repository, transitively. */
function closure(element: string, seen = new Set<string>()): Set<string> {
  if (seen.has(element) || !elements.includes(element)) return seen;
  seen.add(element);
  for (const dep of listFile(element, 'element-deps')) closure(dep, seen);
  return seen;
}

/** Source environment files under `set -eu` from an empty environment; returns the exported variables. */
function sourceEnv(
  files: readonly string[],
  env: Record<string, string> = {},
): { status: number | null; vars: Record<string, string>; stderr: string } {
  const r = spawnSync('bash', ['-c', 'set -eu; for f in "$@"; do . "$f"; done; env -0', 'env', ...files], {
    env: { PATH: '/usr/bin:/bin', ...env },
    encoding: 'utf8',
  });
  const vars: Record<string, string> = {};
  for (const entry of (r.stdout ?? '').split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) vars[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return { status: r.status, vars, stderr: r.stderr };
}

/**
 * Names a bash script reads without a default (${X:-}, ${X-}, ${X:?}, ${X?}) that it never sets. Skips comments,
 * single-quoted text and backslash-escaped dollars (text written into generated files).
 */
function unsetReads(text: string): string[] {
  const assigned = new Set<string>();
  for (const m of text.matchAll(
    /(?:^|[\s;(])(?:local\s+|export\s+|declare\s+(?:-\w+\s+)?)?([A-Za-z_][A-Za-z0-9_]*)=/gm,
  ))
    assigned.add(m[1]!);
  for (const m of text.matchAll(/\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b/g)) assigned.add(m[1]!);
  for (const m of text.matchAll(/\bread\s+(?:-\w+\s+)*([A-Za-z_][A-Za-z0-9_]*)/g)) assigned.add(m[1]!);
  const out = new Set<string>();
  for (const raw of text.split('\n')) {
    if (raw.trim().startsWith('#')) continue;
    const line = raw.replace(/'[^']*'/g, "''");
    for (const m of line.matchAll(
      /(\\?)\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(:?[-?=+]|[}[#%/^,])?|([A-Za-z_][A-Za-z0-9_]*))/g,
    )) {
      if (m[1]) continue;
      const name = m[2] ?? m[4]!;
      const op = m[3];
      if (op && /^:?[-?=+]$/.test(op)) continue;
      if (!assigned.has(name)) out.add(name);
    }
  }
  return [...out].sort();
}

t.test('the unset-variable check finds what it should', async (t) => {
  t.same(
    unsetReads(
      '#!/bin/bash\nx=1\necho "$x ${y} ${z:-} ${w:?set w} \\${escaped} \'$quoted\'"\n# $comment\nfor i in a; do echo $i; done\n',
    ),
    ['y'],
  );
});

for (const element of elements) {
  t.test(`element ${element}`, async (t) => {
    const dir = path.join(ELEMENTS_DIR, element);

    const readme = path.join(dir, 'README.rst');
    t.ok(existsSync(readme), 'has a README.rst');
    const text = readFileSync(readme, 'utf8');
    const [over, title, under] = text.split('\n');
    t.equal(title, element, 'README title is the element name');
    t.ok(over === under && over === '='.repeat(element.length), 'README title over- and underlined to its length');
    t.notMatch(text, /\t/, 'no tabs');
    t.ok(text.endsWith('\n'));

    const deps = listFile(element, 'element-deps');
    t.same(deps, [...deps].sort(), 'element-deps sorted (dib-lint)');
    t.equal(new Set(deps).size, deps.length, 'no duplicate deps');
    for (const dep of deps)
      t.ok(
        elements.includes(dep) || standard.has(dep),
        `element-deps: ${dep} is an element here or a diskimage-builder element`,
      );
    for (const provided of listFile(element, 'element-provides'))
      t.notOk(elements.includes(provided), `provides ${provided}, which is no element here`);

    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory() && name.endsWith('.d'))
        t.ok(PHASES.includes(name) || name === 'environment.d', `${name} is a diskimage-builder phase`);
    }

    const envExports = new Set<string>();
    for (const other of closure(element))
      for (const f of envFilesOf(other))
        for (const m of readFileSync(f, 'utf8').matchAll(/export\s+([A-Za-z_][A-Za-z0-9_]*)=/g)) envExports.add(m[1]!);

    for (const script of scriptsOf(element)) {
      const rel = path.relative(ELEMENTS_DIR, script);
      const body = readFileSync(script, 'utf8');
      const st = statSync(script);
      t.ok(st.mode & 0o100, `${rel} is executable`);
      if (body.startsWith('#!/usr/bin/env python3\n')) {
        // A helper in the Python DIB runs with (a phase script calls it with DIB_PYTHON_EXEC): it parses, and passes
        // flake8 where installed (diskimage-builder depends on it).
        t.notOk(
          PHASES.includes(path.basename(path.dirname(script))),
          `${rel}: phase scripts are bash; Python only as their helper`,
        );
        const parsed = spawnSync(DIB_PYTHON, ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', script], {
          encoding: 'utf8',
        });
        t.equal(parsed.status, 0, `${rel} parses: ${parsed.stderr}`);
        const flake8 = spawnSync(DIB_PYTHON, ['-m', 'flake8', '--max-line-length=120', script], { encoding: 'utf8' });
        if (!/No module named flake8/.test(flake8.stderr))
          t.equal(flake8.status, 0, `${rel} passes flake8: ${flake8.stdout}`);
        continue;
      }
      t.equal(body.split('\n')[0], '#!/bin/bash', `${rel} starts with #!/bin/bash`);
      t.match(body, /^set -[a-z]*e/m, `${rel}: set -e`);
      t.match(body, /^set -[a-z]*u/m, `${rel}: set -u`);
      t.match(body, /^set -o pipefail/m, `${rel}: set -o pipefail`);
      t.match(body, /DIB_DEBUG_TRACE/, `${rel} follows DIB_DEBUG_TRACE`);
      if (PHASES.includes(path.basename(path.dirname(script))))
        t.match(path.basename(script), /^\d\d-[a-z0-9][a-z0-9-]*$/, `${rel} is named NN-name`);
      const syntax = spawnSync('bash', ['-n', script], { encoding: 'utf8' });
      t.equal(syntax.status, 0, `${rel} parses: ${syntax.stderr}`);
      t.notOk(/^( {4})* {1,3}\S/m.test(body), `${rel} indents by 4 spaces`);
      t.notMatch(body, /\t/, `${rel} has no tabs`);
      t.notOk(
        body.split('\n').some((l) => !l.trim().startsWith('#') && /\bwhich /.test(l)),
        `${rel} does not use which`,
      );
      t.notMatch(body, /export [^\n]*\$\(/, `${rel}: no export X=$(...)`);
      const unset = unsetReads(body).filter((v) => !envExports.has(v) && !DIB_PROVIDED.has(v));
      t.same(unset, [], `${rel} reads no variable it does not set or default`);
    }

    for (const file of envFilesOf(element)) {
      const rel = path.relative(ELEMENTS_DIR, file);
      t.match(path.basename(file), /^\d\d-[a-z0-9-]+\.bash$/, `${rel} is named NN-name.bash`);
      t.notOk(statSync(file).mode & 0o111, `${rel} is not executable`);
      t.notMatch(readFileSync(file, 'utf8'), /set -x/, `${rel} does not trace`);
      const sourced = sourceEnv([file]);
      t.equal(sourced.status, 0, `${rel} sources under set -eu from an empty environment: ${sourced.stderr}`);
    }

    const pi = path.join(dir, 'package-installs.yaml');
    if (existsSync(pi)) {
      t.ok(deps.includes('package-installs'), 'depends on package-installs');
      const doc = parseYaml(readFileSync(pi, 'utf8')) as unknown;
      t.ok(doc && typeof doc === 'object' && !Array.isArray(doc), 'package-installs.yaml is a mapping');
      const envVars = sourceEnv([...closure(element)].flatMap(envFilesOf)).vars;
      for (const [pkgName, params] of Object.entries(doc as Record<string, unknown>)) {
        const list = params === null ? [] : Array.isArray(params) ? params : [params];
        for (const p of list) {
          t.ok(p && typeof p === 'object' && !Array.isArray(p), `${pkgName}: parameters are a mapping`);
          for (const key of Object.keys(p as object))
            t.ok(PACKAGE_KEYS.includes(key), `${pkgName}: ${key} is a package-installs key`);
          const { phase, when } = p as { phase?: unknown; when?: unknown };
          if (phase !== undefined) t.ok(phase === 'install.d' || phase === 'pre-install.d', `${pkgName}: phase`);
          for (const w of when === undefined ? [] : Array.isArray(when) ? when : [when]) {
            const m = /^(\w+)\s*(=|!=)\s*(.*)$/.exec(String(w));
            t.ok(m, `${pkgName}: when "${String(w)}" is VAR = value or VAR != value`);
            if (m)
              t.ok(
                m[1]! in envVars,
                `${pkgName}: ${m[1]} is set by an environment.d file (package-installs fails on unset ones)`,
              );
          }
        }
      }
      const pkgMap = path.join(dir, 'pkg-map');
      if (existsSync(pkgMap)) {
        t.ok(deps.includes('pkg-map'), 'depends on pkg-map');
        const map = JSON.parse(readFileSync(pkgMap, 'utf8')) as Record<string, Record<string, unknown>>;
        for (const section of Object.keys(map))
          t.ok(['release', 'distro', 'family', 'default'].includes(section), `pkg-map section ${section}`);
        for (const pkgName of Object.keys(doc as object))
          t.ok(map.default && pkgName in map.default, `pkg-map has a default for ${pkgName}`);
      }
    }
  });
}

t.test('the environment decides where Node.js comes from', async (t) => {
  const files = envFilesOf('os-config-agent');
  t.equal(
    sourceEnv(files).vars.DIB_OS_CONFIG_AGENT_NODE_FROM,
    'auto',
    "default: the distribution's when new enough, else the official binary",
  );
  t.equal(
    sourceEnv(files, { DIB_OS_CONFIG_AGENT_NODE_FROM: 'distribution' }).vars.DIB_OS_CONFIG_AGENT_NODE_FROM,
    'distribution',
    'an override is kept',
  );
  t.equal(sourceEnv(files).vars.DIB_OS_CONFIG_AGENT_NODE_REGISTRY, 'https://registry.npmjs.org');
  t.equal(sourceEnv(files).vars.DIB_HEAT_CONFIG_TOOL_PACKAGES, '1');
  t.equal(
    sourceEnv(files, { DIB_HEAT_CONFIG_TOOL_PACKAGES: '0' }).vars.DIB_HEAT_CONFIG_TOOL_PACKAGES,
    '0',
    'an override is kept',
  );
});

t.test('every element together merges without clashing script names', async (t) => {
  t.doesNotThrow(() => mergeHooks(ALL_ELEMENTS, path.join(t.testdir(), 'hooks')));
  t.same(new Set(ALL_ELEMENTS), new Set(elements), 'the tests cover every element here');
});

t.test("diskimage-builder's own checks", { skip: !dibInstalled && NO_DIB }, async (t) => {
  t.test('dib-lint passes', async (t) => {
    const dir = t.testdir();
    mkdirSync(path.join(dir, 'bin'));
    mkdirSync(path.join(dir, 'lib'));
    // dib-lint calls `python`; Debian's has no such name, and version-manager shims may not have PyYAML.
    symlinkSync(DIB_PYTHON, path.join(dir, 'bin/python'));
    const r = spawnSync('dib-lint', [], {
      cwd: REPO,
      env: { PATH: `${path.join(dir, 'bin')}:/usr/bin:/bin`, ELEMENTS_DIR: 'elements', LIB_DIR: path.join(dir, 'lib') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    t.equal(
      r.status,
      0,
      r.stdout
        .split('\n')
        .filter((l) => l.startsWith('ERROR') || l.startsWith(' --'))
        .join('\n'),
    );
    t.match(r.stdout, /^PASS$/m);
  });

  t.test('element dependencies resolve with a distribution element', async (t) => {
    const r = spawnSync(
      DIB_PYTHON,
      [
        '-c',
        'import sys; from diskimage_builder.element_dependencies import main; sys.argv[0] = "element-info"; sys.exit(main())',
        'debian-minimal',
        ...ALL_ELEMENTS,
      ],
      {
        env: { PATH: '/usr/bin:/bin', ELEMENTS_PATH: `${ELEMENTS_DIR}:${path.join(DIB_DIR, 'elements')}` },
        encoding: 'utf8',
      },
    );
    t.equal(r.status, 0, r.stderr);
    for (const e of [...ALL_ELEMENTS, 'package-installs', 'pkg-map'])
      t.match(r.stdout, new RegExp(`(^|\\s)${e}(\\s|$)`), `${e} in the expanded set`);
  });

  t.test('package-installs-squash: never nodejs (install.d installs it only when new enough)', async (t) => {
    const squash = (from: string) => {
      const out = path.join(t.testdir(), `pi-${from}.json`);
      const r = spawnSync(
        DIB_PYTHON,
        [
          path.join(DIB_DIR, 'elements/package-installs/bin/package-installs-squash'),
          `--elements=${ALL_ELEMENTS.join(' ')}`,
          `--path=${ELEMENTS_DIR}`,
          out,
        ],
        {
          env: { PATH: '/usr/bin:/bin', DIB_OS_CONFIG_AGENT_NODE_FROM: from, DIB_HEAT_CONFIG_TOOL_PACKAGES: '1' },
          encoding: 'utf8',
        },
      );
      t.equal(r.status, 0, r.stderr);
      const parsed = JSON.parse(readFileSync(out, 'utf8')) as { 'install.d': { install: Array<[string, string]> } };
      return parsed['install.d'].install.map(([p]) => p).sort();
    };
    for (const from of ['auto', 'distribution', 'official'])
      t.same(
        squash(from),
        ['ansible', 'ca-certificates', 'docker-compose', 'git', 'hiera', 'puppet', 'salt-minion'],
        from,
      );
  });

  t.test('pkg-map: tool packages per distribution', async (t) => {
    const map = (element: string, distro: string, name: string) =>
      spawnSync(
        DIB_PYTHON,
        [
          path.join(DIB_DIR, 'elements/pkg-map/bin/pkg-map'),
          '--pkg-map',
          path.join(ELEMENTS_DIR, element, 'pkg-map'),
          '--distro',
          distro,
          '--release',
          'any',
          '--missing-ok',
          name,
        ],
        { encoding: 'utf8' },
      ).stdout.trim();
    const table: Array<[string, string, string, string]> = [
      ['heat-config-puppet', 'debian', 'puppet', 'puppet'],
      ['heat-config-puppet', 'ubuntu', 'puppet', 'puppet'],
      ['heat-config-puppet', 'fedora', 'puppet', 'puppet'],
      ['heat-config-puppet', 'centos', 'puppet', ''],
      ['heat-config-hiera', 'debian', 'hiera', 'hiera'],
      ['heat-config-hiera', 'centos', 'hiera', ''],
      ['heat-config-salt', 'fedora', 'salt-minion', 'salt-minion'],
      ['heat-config-salt', 'debian', 'salt-minion', ''],
      ['heat-config-ansible', 'debian', 'ansible', 'ansible'],
      ['heat-config-ansible', 'centos', 'ansible', 'ansible-core'],
      ['heat-config-ansible', 'rhel', 'ansible', 'ansible-core'],
      ['heat-config-docker-compose', 'debian', 'docker-compose', 'docker-compose'],
      ['heat-config-docker-compose', 'fedora', 'docker-compose', 'docker-compose'],
      ['heat-config-docker-compose', 'centos', 'docker-compose', ''],
    ];
    for (const [element, distro, name, expected] of table)
      t.equal(map(element, distro, name), expected, `${element} on ${distro}: ${name} -> ${expected || '(skipped)'}`);
  });
});
