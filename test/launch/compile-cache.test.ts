import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import pkg from '../../package.json' with { type: 'json' };
import { compileCacheDirectory, enableCompileCache, usableCacheDirectory } from '../../src/launch/compile-cache.js';
import { REPO, requireBundle } from '../helpers/bundle.js';
import { startWaitConditionServer } from '../helpers/wait-condition-server.js';

// Node's compile cache for the bundle (src/launch/compile-cache.ts): where it goes, which directories it refuses, and,
// with a Node.js that has the cache (>= 22.1), that the built commands fill and reuse it and behave the same without it.

t.test('the directory: OS_CONFIG_AGENT_COMPILE_CACHE, else $XDG_CACHE_HOME/os-config-agent, else none', async (t) => {
  t.equal(
    compileCacheDirectory({
      OS_CONFIG_AGENT_COMPILE_CACHE: '/var/cache/os-config-agent',
      XDG_CACHE_HOME: '/home/u/.cache',
    }),
    '/var/cache/os-config-agent',
  );
  t.equal(
    compileCacheDirectory({ OS_CONFIG_AGENT_COMPILE_CACHE: '', XDG_CACHE_HOME: '/home/u/.cache' }),
    undefined,
    'empty: off, whatever else is set',
  );
  t.equal(compileCacheDirectory({ OS_CONFIG_AGENT_COMPILE_CACHE: 'relative/dir' }), undefined, 'a relative path: off');
  t.equal(compileCacheDirectory({ XDG_CACHE_HOME: '/home/u/.cache' }), '/home/u/.cache/os-config-agent');
  t.equal(compileCacheDirectory({ XDG_CACHE_HOME: 'cache' }), undefined);
  t.equal(compileCacheDirectory({ HOME: '/root' }), undefined, 'nothing set: no cache');
});

t.test(
  "a usable directory is made if only its last level is missing, and is this user's (or root's) alone",
  async (t) => {
    const dir = t.testdir({ file: 'x', open: {}, group: {} });
    const made = path.join(dir, 'cache');
    t.ok(usableCacheDirectory(made));
    t.equal(statSync(made).mode & 0o777, 0o755);
    t.notOk(usableCacheDirectory(path.join(dir, 'missing/cache')), 'a missing parent is not made');
    t.notOk(existsSync(path.join(dir, 'missing')));
    t.notOk(usableCacheDirectory(path.join(dir, 'file')), 'a file');
    chmodSync(path.join(dir, 'open'), 0o777);
    t.notOk(usableCacheDirectory(path.join(dir, 'open')), 'world-writable: others could put code in it');
    chmodSync(path.join(dir, 'group'), 0o775);
    t.notOk(usableCacheDirectory(path.join(dir, 'group')), 'group-writable');
    // Node's own recursive mkdir never returns for a path under /proc; this must answer at once.
    t.notOk(usableCacheDirectory('/proc/os-config-agent-compile-cache-test'), 'under /proc');
  },
);

t.test(
  "another user's directory is refused",
  { skip: process.getuid?.() !== 0 ? 'needs root (chown)' : false },
  async (t) => {
    const dir = t.testdir({ theirs: {} });
    chownSync(path.join(dir, 'theirs'), 65534, 65534);
    t.notOk(usableCacheDirectory(path.join(dir, 'theirs')));
  },
);

t.test('without the Node.js feature, or with no directory, nothing is enabled or made', async (t) => {
  const dir = t.testdir();
  const hasCache = typeof (module as unknown as { enableCompileCache?: unknown }).enableCompileCache === 'function';
  if (!hasCache) {
    t.equal(
      enableCompileCache({ OS_CONFIG_AGENT_COMPILE_CACHE: path.join(dir, 'cache') }),
      undefined,
      `Node.js ${process.version} has no compile cache`,
    );
    t.notOk(existsSync(path.join(dir, 'cache')), 'and no directory is made for it');
  }
  t.equal(enableCompileCache({ OS_CONFIG_AGENT_COMPILE_CACHE: '' }), undefined);
});

/**
 * A Node.js with the compile cache: this one if it has it, else a release that `npm run package` keeps in
 * ~/.cache/os-config-agent (the Debian package's runtime), unpacked. Undefined when there is none.
 */
function nodeWithCompileCache(dir: string): string | undefined {
  if (typeof (module as unknown as { enableCompileCache?: unknown }).enableCompileCache === 'function')
    return process.execPath;
  const cache = path.join(os.homedir(), '.cache/os-config-agent');
  // Node.js 22 first: the release on which an ES module import of node:http ends a lite-mode process (below).
  const releases = existsSync(cache)
    ? readdirSync(cache)
        .filter((f) => /^node-linux-.*-2[2-9]\.\d+\.\d+\.tgz$/.test(f))
        .sort()
    : [];
  const tarball = releases.find((f) => /-22\./.test(f)) ?? releases.at(-1);
  if (!tarball) return undefined;
  const r = spawnSync(
    'tar',
    ['-xzf', path.join(cache, tarball), '-C', dir, '--strip-components=1', 'package/bin/node'],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return r.status === 0 && existsSync(path.join(dir, 'bin/node')) ? path.join(dir, 'bin/node') : undefined;
}

const runtimeDir = t.testdirName + '-node';
mkdirSync(runtimeDir, { recursive: true });
const node = nodeWithCompileCache(runtimeDir);
const noCache = node
  ? false
  : `needs Node.js >= 22.1 (this is ${process.version}; npm run package keeps one in ~/.cache/os-config-agent)`;

t.test(
  'the built commands fill the cache on their first run and behave the same with it, without it, or when it cannot be written',
  { skip: noCache },
  async (t) => {
    const dir = t.testdir({ 'not-a-dir': 'x' });
    const cache = path.join(dir, 'cache');
    // tap's loader hooks (NODE_OPTIONS) cannot load the extensionless launchers: started through env(1) without them.
    const oac = (cacheDir: string, args: string[]) =>
      spawnSync(
        '/usr/bin/env',
        [
          '-u',
          'NODE_OPTIONS',
          '-u',
          'NODE_COMPILE_CACHE',
          `OS_CONFIG_AGENT_COMPILE_CACHE=${cacheDir}`,
          node!,
          path.join(REPO, 'dist/bin/os-apply-config'),
          ...args,
        ],
        { encoding: 'utf8', timeout: 60_000 },
      );
    const first = oac(cache, ['--version']);
    t.equal(first.status, 0, first.stderr);
    t.equal(first.stdout, `os-apply-config (os-config-agent) ${pkg.version}\n`);
    t.equal(first.stderr, '');
    const [versionDir] = readdirSync(cache);
    t.ok(versionDir, 'Node keeps its entries in a directory of its version');
    const entries = readdirSync(path.join(cache, versionDir!));
    t.ok(entries.length > 0, `the chunks os-apply-config loaded are cached (${entries.length} entries)`);
    const again = oac(cache, ['--help']);
    t.equal(again.status, 0);
    t.match(again.stdout, /^Usage: os-apply-config /);
    for (const [label, where] of [
      ['a file in the way', path.join(dir, 'not-a-dir')],
      ['under /proc', '/proc/os-config-agent-test'],
      ['off', ''],
    ] as const) {
      const r = oac(where, ['--version']);
      t.equal(r.status, 0, `${label}: ${r.stderr}`);
      t.equal(r.stdout, `os-apply-config (os-config-agent) ${pkg.version}\n`, label);
      t.equal(r.stderr, '', `${label}: nothing said`);
    }
  },
);

// Lite mode without WebAssembly, as the unit runs the daemon: on Node.js 22 an ES module import of node:http by a
// bundled dependency would load undici and end the process at the first request (scripts/build.mjs); it must not.
t.test("with the daemon's V8 flags the bundle starts and makes HTTP requests", async (t) => {
  const server = await startWaitConditionServer();
  t.teardown(() => server.close());
  const root = t.testdir({
    etc: { 'os-collect-config.conf': '[deploy]\nsignal_max_backoff = 1\nsignal_timeout = 5\n' },
  });
  const flags = ['--lite-mode', '--v8-pool-size=0'];
  const runtime = node ?? process.execPath;
  const version = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', runtime, ...flags, requireBundle(), '--version'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  t.equal(version.status, 0);
  // V8 of Node.js 20 and 22 says that lite mode turns WebAssembly off (its flag to do so silently is refused by 24).
  t.equal(
    version.stderr.replace('Warning: disabling flag --expose_wasm due to conflicting flags\n', ''),
    '',
    "nothing but V8's note on WebAssembly",
  );
  const child = spawn(
    '/usr/bin/env',
    [
      '-u',
      'NODE_OPTIONS',
      runtime,
      ...flags,
      requireBundle(),
      'cfn-signal',
      '--root',
      root,
      '-i',
      'lite-1',
      server.cfnUrl('wc_lite'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  t.equal(code, 0, `Node.js ${spawnSync(runtime, ['--version'], { encoding: 'utf8' }).stdout.trim()}: ${stderr}`);
  t.same(
    Object.keys(Object.fromEntries(server.handles.get('wc_lite') ?? [])),
    ['lite-1'],
    'the signal reached the server',
  );
});
