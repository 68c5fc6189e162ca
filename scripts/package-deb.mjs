// `npm run package`: builds os-config-agent_<version>_<arch>.deb with Debian's own tools (dpkg-deb) from dist/ (run
// `npm run build` first). Layout (docs/debian-package.md):
//   /usr/lib/os-config-agent/{lib,bin,node}   the bundle, the launchers, and a Node.js runtime (see below)
//   /usr/bin/os-config-agent, os-collect-config, os-apply-config, os-refresh-config   links to the launchers
//   /usr/sbin/cfn-create-aws-symlinks          a link to its launcher (heat-cfntools' other commands: PREFIX/bin only)
//   /usr/libexec/heat-config/hooks/<group>    every built-in hook (55-heat-config's second hooks directory)
//   /lib/systemd/system/os-config-agent.service
//   /etc/os-collect-config.conf (the operator's conffile), /etc/os-collect-config.conf.d/ (00-heat.conf: the agent's)
//   /usr/share/man/man1, /usr/share/bash-completion/completions, /usr/share/doc/os-config-agent
// The package's own inputs (its conffile, maintainer scripts, metadata, operator files) are in scripts/deb/.
// Node.js: Debian 12 and Ubuntu 24.04 ship Node 18, older than the agent needs, so by default the package carries the
// official binary of a maintained LTS line for its architecture (the npm registry's node-linux-<arch> package, whose
// integrity npm checks; cached in ~/.cache/os-config-agent). `--node system` makes a package that depends on the
// distribution's nodejs (>= 20) instead, for distributions that have it.
// Usage: node scripts/package-deb.mjs [--node bundled|system] [--out DIR] [--compress xz|gzip|none]
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { maintainerScripts } from './deb/maintainer-scripts.mjs';
import { control, copyright, lintianOverrides, packageIdentity } from './deb/metadata.mjs';
import { licencesNamed } from './third-party-licenses.mjs';
import { addOperatorFiles, gzip } from './deb/operator-files.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * The Node.js LTS line bundled: the one the image element installs when an image's own Node.js is too old. Both read
 * it from this one file, so the package and the image run the same line.
 */
export const BUNDLED_NODE = readFileSync(
  path.join(REPO, 'elements/os-config-agent/os-config-agent-data/node-lts-line'),
  'utf8',
)
  .split('\n')
  .map((line) => line.trim())
  .find((line) => /^\d+$/.test(line));
if (!BUNDLED_NODE)
  throw new Error(
    'elements/os-config-agent/os-config-agent-data/node-lts-line names no Node.js LTS line (a major version on its own line)',
  );
const PREFIX = '/usr/lib/os-config-agent';
/**
 * heat-cfntools' command names stay in PREFIX/bin, off /usr/bin, which heat-cfntools' package owns: the two install
 * side by side and its files are never touched. Only cfn-create-aws-symlinks, which Heat's boot script runs from PATH,
 * is linked, from /usr/sbin (ahead of /usr/bin on root's PATH); it links a real heat-cfntools' commands into
 * /opt/aws/bin when one is installed, else ours (docs/cfntools.md).
 */
const isCfnCommand = (name) => name.startsWith('cfn-');
const SBIN = ['cfn-create-aws-symlinks'];
const DEB_ARCH = { x64: 'amd64', arm64: 'arm64' };

function fail(message) {
  console.error(`package-deb: ${message}`);
  process.exit(1);
}

function run(file, args, options = {}) {
  const res = spawnSync(file, args, { encoding: 'utf8', ...options });
  if (res.error)
    fail(`${file} could not be run (${res.error.code}): install it (Debian: ${file === 'dpkg-deb' ? 'dpkg' : file})`);
  if (res.status !== 0)
    fail(`${file} ${args.join(' ')} failed with status ${res.status}: ${(res.stderr || res.stdout).trim()}`);
  return res.stdout;
}

function parseArgs(argv) {
  const opts = { node: 'bundled', out: path.join(REPO, 'dist'), compress: 'xz' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--node') opts.node = argv[++i];
    else if (a === '--out') opts.out = path.resolve(argv[++i] ?? '');
    else if (a === '--compress') opts.compress = argv[++i];
    else
      fail(
        `unknown argument ${a}; usage: node scripts/package-deb.mjs [--node bundled|system] [--out DIR] [--compress xz|gzip|none]`,
      );
  }
  if (opts.node !== 'bundled' && opts.node !== 'system') fail(`--node must be bundled or system, not ${opts.node}`);
  if (!['xz', 'gzip', 'none'].includes(opts.compress))
    fail(`--compress must be xz, gzip or none, not ${opts.compress}`);
  return opts;
}

/** The official Node.js binary and licence for this machine's architecture, from the npm registry (cached). */
function fetchNode(npmArch) {
  const cache = path.join(os.homedir(), '.cache/os-config-agent');
  mkdirSync(cache, { recursive: true });
  const spec = `node-linux-${npmArch}@${BUNDLED_NODE}`;
  const packed = readdirSync(cache)
    .filter((f) => f.startsWith(`node-linux-${npmArch}-${BUNDLED_NODE}.`) && f.endsWith('.tgz'))
    .sort()
    .at(-1);
  let tarball = packed ? path.join(cache, packed) : undefined;
  if (!tarball) {
    // npm checks the tarball against the registry's sha512 integrity before it writes it.
    const name = run('npm', ['pack', '--silent', spec], { cwd: cache }).trim().split('\n').at(-1);
    tarball = path.join(cache, name);
  }
  const work = mkdtempSync(path.join(os.tmpdir(), 'oca-node-'));
  run('tar', ['-xzf', tarball, '-C', work, '--strip-components=1', '--no-same-owner']);
  const node = path.join(work, 'bin/node');
  if (!existsSync(node)) fail(`${tarball} has no bin/node`);
  return { node, license: path.join(work, 'LICENSE'), from: path.basename(tarball), work };
}

/**
 * The launcher of one command: V8's flags on node's command line (lite mode for the daemon alone) and the compile
 * cache directory, as the image element's launchers give them (docs/build.md).
 */
function launcher(entry, daemon) {
  const liteMode = daemon
    ? `if [ "\${1:-}" = run ] && [ "\${OS_CONFIG_AGENT_FULL_JIT:-}" != 1 ]; then
    v8_flags="--lite-mode --v8-pool-size=0"
    for arg in "$@"; do
        if [ "\${arg}" = --one-time ]; then
            v8_flags=--v8-pool-size=0
        fi
    done
fi
`
    : '';
  return `#!/bin/sh
# os-config-agent launcher (Debian package).
: "\${OS_CONFIG_AGENT_COMPILE_CACHE=/var/cache/os-config-agent}"
export OS_CONFIG_AGENT_COMPILE_CACHE
v8_flags=--v8-pool-size=0
${liteMode}exec ${PREFIX}/bin/node \${v8_flags} ${PREFIX}/lib/${entry} "$@"
`;
}

function md5sums(root) {
  const lines = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (full !== path.join(root, 'DEBIAN')) walk(full);
      } else if (entry.isFile()) {
        lines.push(`${createHash('md5').update(readFileSync(full)).digest('hex')}  ${path.relative(root, full)}`);
      }
    }
  };
  walk(root);
  return lines.sort((a, b) => a.slice(34).localeCompare(b.slice(34))).join('\n') + '\n';
}

function sizeKiB(dir) {
  let bytes = 0;
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) bytes += statSync(full).size;
    }
  };
  walk(dir);
  return Math.ceil(bytes / 1024);
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const dist = path.join(REPO, 'dist');
  if (!existsSync(path.join(dist, 'command-names.json')) || !existsSync(path.join(dist, 'hooks/script')))
    fail(`${dist} is not built: run "npm run build" first`);
  const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8'));
  const version = `${pkg.version}-1`;
  let identity;
  try {
    identity = packageIdentity(pkg);
  } catch (err) {
    fail(err.message);
  }
  if (!existsSync(path.join(dist, 'man')) || !existsSync(path.join(dist, 'completion')))
    fail(`${dist} has no manual pages or completion: run "npm run build" again`);
  const npmArch = process.arch;
  const arch = opts.node === 'system' ? 'all' : DEB_ARCH[npmArch];
  if (!arch) fail(`no Debian architecture for ${npmArch}: build on amd64 or arm64, or use --node system`);

  const root = mkdtempSync(path.join(os.tmpdir(), 'oca-deb-'));
  // mkdtemp makes it 0700, and dpkg-deb archives the root as ./: `dpkg-deb -x` would make its target 0700.
  chmodSync(root, 0o755);
  let nodeWork;
  try {
    const at = (p) => path.join(root, p);
    const dir = (p, mode = 0o755) => {
      mkdirSync(at(p), { recursive: true });
      chmodSync(at(p), mode);
    };
    const file = (p, text, mode = 0o644) => {
      writeFileSync(at(p), text);
      chmodSync(at(p), mode);
    };

    // The bundle, as the image element lays it out under /opt/os-config-agent: the entries and their chunks, and one
    // link per compatibility name to the entry it starts (which takes its command from the name it was started by).
    // The names and their entries are the build's list (src/cli/command-names.ts, scripts/build.mjs).
    const { agent, compat, entries } = JSON.parse(readFileSync(path.join(dist, 'command-names.json'), 'utf8'));
    if (!entries)
      fail(`${dist}/command-names.json names no entries: it was made by an older build; build the agent again`);
    dir(`${PREFIX}/lib`);
    for (const entry of new Set(Object.values(entries))) cpSync(path.join(dist, entry), at(`${PREFIX}/lib/${entry}`));
    if (existsSync(path.join(dist, 'chunks')))
      cpSync(path.join(dist, 'chunks'), at(`${PREFIX}/lib/chunks`), { recursive: true });
    for (const name of compat) symlinkSync(entries[name], at(`${PREFIX}/lib/${name}`));
    dir(`${PREFIX}/bin`);
    file(`${PREFIX}/bin/${agent}`, launcher(`${agent}.mjs`, true), 0o755);
    for (const name of compat) file(`${PREFIX}/bin/${name}`, launcher(name, false), 0o755);
    if (opts.node === 'bundled') {
      const node = fetchNode(npmArch);
      nodeWork = node.work;
      dir(`${PREFIX}/node/bin`);
      cpSync(node.node, at(`${PREFIX}/node/bin/node`));
      // As Debian strips its binaries (debug symbols are a third of the official build).
      run('strip', [
        '--remove-section=.comment',
        '--remove-section=.note',
        '--strip-unneeded',
        at(`${PREFIX}/node/bin/node`),
      ]);
      chmodSync(at(`${PREFIX}/node/bin/node`), 0o755);
      if (existsSync(node.license)) file(`${PREFIX}/node/LICENSE`, readFileSync(node.license));
      symlinkSync('../node/bin/node', at(`${PREFIX}/bin/node`));
      console.log(
        `package-deb: bundling Node.js ${run(at(`${PREFIX}/node/bin/node`), ['--version']).trim()} (${node.from}, LTS line ${BUNDLED_NODE})`,
      );
    } else {
      symlinkSync('/usr/bin/node', at(`${PREFIX}/bin/node`));
    }
    dir('usr/bin');
    for (const name of [agent, ...compat].filter((n) => !isCfnCommand(n)))
      symlinkSync(`../lib/os-config-agent/bin/${name}`, at(`usr/bin/${name}`));
    dir('usr/sbin');
    for (const name of SBIN) symlinkSync(`../lib/os-config-agent/bin/${name}`, at(`usr/sbin/${name}`));

    // Every built-in hook, started by the package's Node.js (a stock image has no other): run by hand, or by upstream's
    // 55-heat-config, as well as by the agent. Only the interpreter line changes; the stamp on the second line, by
    // which the agent knows its own build, covers the rest.
    dir('usr/libexec/heat-config/hooks');
    for (const hook of readdirSync(path.join(dist, 'hooks')).filter((f) => f !== 'package.json')) {
      const text = readFileSync(path.join(dist, 'hooks', hook), 'utf8');
      if (!text.startsWith('#!/usr/bin/env node\n')) fail(`dist/hooks/${hook} does not start with #!/usr/bin/env node`);
      file(
        `usr/libexec/heat-config/hooks/${hook}`,
        `#!${PREFIX}/bin/node\n${text.slice(text.indexOf('\n') + 1)}`,
        0o755,
      );
    }

    // The unit the element installs, with this package's paths.
    dir('lib/systemd/system');
    const unit = readFileSync(path.join(REPO, 'systemd/os-config-agent.service'), 'utf8')
      .replaceAll('/opt/os-config-agent', PREFIX)
      .replace(
        'Installed and enabled by the os-config-agent diskimage-builder\n# element',
        'Installed and enabled by the os-config-agent diskimage-builder\n# element or the Debian package',
      );
    file('lib/systemd/system/os-config-agent.service', unit);
    // The operator's conffile, and the directory where the agent writes Heat's settings (a file dpkg does not own).
    dir('etc/os-collect-config.conf.d');
    file('etc/os-collect-config.conf', readFileSync(path.join(REPO, 'scripts/deb/os-collect-config.conf')), 0o600);
    const operator = addOperatorFiles({
      repo: REPO,
      dist,
      dir,
      file,
      link: (target, p) => symlinkSync(target, at(p)),
    });

    // Lintian's errors that do not apply, each with the reason (a bundled runtime, not a library copy to unbundle).
    dir('usr/share/lintian/overrides');
    file('usr/share/lintian/overrides/os-config-agent', lintianOverrides(opts.node));

    const licences = readFileSync(path.join(dist, 'THIRD-PARTY-LICENSES'), 'utf8');
    file('usr/share/doc/os-config-agent/THIRD-PARTY-LICENSES', licences);
    file('usr/share/doc/os-config-agent/copyright', copyright(identity, licencesNamed(licences)));
    const date = new Date().toUTCString().replace('GMT', '+0000');
    const changelog = `os-config-agent (${version}) unstable; urgency=medium\n\n  * Built from the os-config-agent source; its changes are in changelog.gz.\n\n -- ${identity.maintainer}  ${date}\n`;
    file('usr/share/doc/os-config-agent/changelog.Debian.gz', gzip(changelog));

    dir('DEBIAN');
    const scripts = maintainerScripts();
    for (const [name, text] of Object.entries(scripts)) file(`DEBIAN/${name}`, text, 0o755);
    file('DEBIAN/conffiles', '/etc/os-collect-config.conf\n');
    file('DEBIAN/md5sums', md5sums(root));
    file(
      'DEBIAN/control',
      control({ version, arch, node: opts.node, installedKiB: sizeKiB(root) - sizeKiB(at('DEBIAN')), identity }),
    );

    mkdirSync(opts.out, { recursive: true });
    const deb = path.join(opts.out, `os-config-agent_${version}_${arch}.deb`);
    run('dpkg-deb', ['--root-owner-group', `-Z${opts.compress}`, '--build', root, deb]);
    console.log(
      `package-deb: built ${path.relative(process.cwd(), deb) || deb} (${Math.round(statSync(deb).size / 1024)} KiB; ${operator.pages} manual pages, ${operator.docs} documents)`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
    if (nodeWork) rmSync(nodeWork, { recursive: true, force: true });
  }
}

main();
