// Bundles the agent into ESM files that run with nothing but `node` (no node_modules on the instance): the entry
// dist/os-config-agent.mjs and the chunks it loads on demand (dist/chunks/), plus tiny launchers for the
// compatibility command names. Splitting keeps the code of commands and stages that a process does not use out of
// its memory: the idle daemon never reads the apply, refresh, deploy, HTTP or YAML code unless it needs it.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const out = 'dist/os-config-agent.mjs';
// The #! line of every launcher: V8's background threads sized to the machine's CPUs (--v8-pool-size=0); Node's
// default is 4 whatever the count, which on a 2-CPU machine made a 200-template os-apply-config ~7 % slower. The image
// element's launchers pass the same flag.
const SHEBANG = '#!/usr/bin/env -S node --v8-pool-size=0';
// OCA_BUILD_MINIFY=0 keeps names readable (CPU profiles); every shipped build is minified.
const minify = process.env.OCA_BUILD_MINIFY !== '0';

// Network builtins are needed only by the HTTP client, which is loaded on first use. ESM imports of builtins are
// hoisted to the top of a bundle and would load at every start, so dependencies get them through a lazy require.
const LAZY_BUILTINS = /^(node:)?(http|https|http2|tls|net|dns|zlib|diagnostics_channel)$/;
const lazyBuiltins = {
  name: 'lazy-builtins',
  setup(b) {
    b.onResolve({ filter: LAZY_BUILTINS }, (args) =>
      args.importer.includes('node_modules') ? { path: args.path.replace(/^node:/, ''), namespace: 'lazy-builtin' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => ({
      contents: `module.exports = require('node:${args.path}');`,
      loader: 'js',
    }));
  },
};
// Builtins some dependencies require when they load but use only later, if ever: commander requires child_process
// (and with it net and dgram) for subcommands run as separate executables, which the agent never uses; sonic-boom and
// thread-stream (pino) require assert for checks on rare paths. Those importers get a stand-in that loads the module
// on first use (about 10 ms less start-up for every command). Only these importers and modules: an ES module that
// imports named bindings would see none on the stand-in, and a destructuring require would load it at once anyway.
const LAZY_BUILTIN_STANDINS = [
  { module: 'child_process', importers: /node_modules[\\/]commander[\\/]/ },
  { module: 'assert', importers: /node_modules[\\/](sonic-boom|thread-stream)[\\/]/ },
];
const lazyBuiltinStandIns = {
  name: 'lazy-builtin-stand-ins',
  setup(b) {
    b.onResolve({ filter: /^(node:)?(child_process|assert)$/ }, (args) => {
      const name = args.path.replace(/^node:/, '');
      const rule = LAZY_BUILTIN_STANDINS.find((r) => r.module === name && r.importers.test(args.importer));
      return rule ? { path: name, namespace: 'lazy-builtin-stand-in' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtin-stand-in' }, (args) => ({
      // A function target, so that a module that is itself a function (assert) can be called through it.
      contents: `let m; const load = () => (m ??= require('node:${args.path}'));
module.exports = new Proxy(function standIn() {}, { get: (_t, key) => load()[key], apply: (_t, self, argv) => load().apply(self, argv) });`,
      loader: 'js',
    }));
  },
};
await rm('dist', { recursive: true, force: true });
await build({
  entryPoints: { 'os-config-agent': 'src/bin.ts' },
  outdir: 'dist',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  minify,
  keepNames: true,
  sourcemap: false,
  legalComments: 'none',
  banner: {
    // Some bundled CommonJS dependencies call require(); give them one.
    js: "import { createRequire as __ocaCreateRequire } from 'node:module';\nconst require = __ocaCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
  // The proxy agents' `debug` traces would print proxy credentials to stderr when DEBUG is set (scripts/debug-off.cjs).
  // got's HTTP/2 support is never used, and loading it costs every process ~50 ms and several MB (scripts/http2-off.cjs).
  alias: { debug: './scripts/debug-off.cjs', 'http2-wrapper': './scripts/http2-off.cjs' },
  plugins: [lazyBuiltins, lazyBuiltinStandIns],
});
// The entry is run directly (`./os-config-agent.mjs`): it alone gets the #! line.
await writeFile(out, `${SHEBANG}\n${await readFile(out, 'utf8')}`);
await chmod(out, 0o755);

// The short-lived compatibility commands os-apply-config and os-refresh-config: one CommonJS bundle each (no
// splitting), holding that command's code only, run by dist/compat-launcher.cjs with a V8 code cache
// (src/launch/code-cache.ts). CommonJS because only vm.Script takes a code cache in Node 20; vm.Script has no import()
// without --experimental-vm-modules, so the lazy loads of builtins (`await import('node:child_process')`) become
// require() calls in these builds.
const builtinImportsToRequire = {
  name: 'builtin-imports-to-require',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, async (args) => ({
      contents: (await readFile(args.path, 'utf8')).replace(/\bimport\((['"])(node:[a-z_/]+)\1\)/g, 'Promise.resolve(require($1$2$1))'),
      loader: 'ts',
    }));
  },
};
const common = { bundle: true, platform: 'node', target: 'node20', minify, keepNames: true, sourcemap: false, legalComments: 'none', logLevel: 'warning' };
const COMPAT_COMMANDS = ['os-apply-config', 'os-refresh-config'];
for (const name of COMPAT_COMMANDS) {
  await build({ ...common, entryPoints: [`src/compat/${name}.ts`], outfile: `dist/${name}.cjs`, format: 'cjs', plugins: [lazyBuiltinStandIns, builtinImportsToRequire] });
}
await build({ ...common, entryPoints: ['src/launch/compat-launcher.ts'], outfile: 'dist/compat-launcher.cjs', format: 'cjs', banner: { js: SHEBANG } });
await chmod('dist/compat-launcher.cjs', 0o755);

await mkdir('dist/bin', { recursive: true });
// os-collect-config is a daemon: it runs the split ES module bundle, as os-config-agent does. A launcher that names
// itself, so one bundle serves every command.
// cfn-signal (heat-cfntools' command name) is started rarely and loads its command lazily from the same bundle.
for (const name of ['os-collect-config', 'cfn-signal']) {
  await writeFile(`dist/bin/${name}`, `${SHEBANG}\nprocess.argv[1] = '${name}';\nawait import('../os-config-agent.mjs');\n`);
  await chmod(`dist/bin/${name}`, 0o755);
}
// The others are links to the code-cache launcher: Node runs the real file (.cjs), which picks the bundle named by the
// link.
for (const name of COMPAT_COMMANDS) await symlink('../compat-launcher.cjs', `dist/bin/${name}`);

// The built-in hooks: one self-contained executable per group (src/deploy/hooks/groups/<group>.ts), dist/hooks/<group>,
// that any Node.js >= 20 runs with nothing beside it. CommonJS, because Node.js before 20.19 loads a file without an
// extension as CommonJS wherever it is installed; dist/hooks/package.json says so for this tree only (the repository's
// package.json says "module"). Not minified: operators read the hook that ran. The second line is the stamp by which
// the agent recognises its own build and runs the hook in-process (src/deploy/hooks/hook-stamp.ts: same format).
const { version } = JSON.parse(await readFile('package.json', 'utf8'));
const groups = (await readdir('src/deploy/hooks/groups')).filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3)).sort();
await mkdir('dist/hooks', { recursive: true });
await writeFile('dist/hooks/package.json', '{ "type": "commonjs" }\n');
for (const group of groups) {
  const built = await build({
    ...common,
    minify: false,
    stdin: {
      contents: `import { hook } from './groups/${group}.ts';\nimport { runStandaloneHook } from './standalone.ts';\nvoid runStandaloneHook(hook);\n`,
      resolveDir: 'src/deploy/hooks',
      sourcefile: `hooks/${group}`,
      loader: 'ts',
    },
    format: 'cjs',
    write: false,
    // A hook that downloads (cfn-init) carries the HTTP client: got without its debug traces and HTTP/2 (as above),
    // and the file URL that src/http/zoned-url.ts builds its require() from, which CommonJS has no import.meta for.
    alias: { debug: './scripts/debug-off.cjs', 'http2-wrapper': './scripts/http2-off.cjs' },
    define: { 'import.meta.url': '__ocaHookFileUrl' },
    banner: { js: "const __ocaHookFileUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
  const body = built.outputFiles[0].text;
  const digest = createHash('sha256').update(body, 'utf8').digest('hex');
  await writeFile(`dist/hooks/${group}`, `#!/usr/bin/env node\n// os-config-agent built-in hook group=${group} version=${version} sha256=${digest}\n${body}`, { mode: 0o755 });
  await chmod(`dist/hooks/${group}`, 0o755);
}

// The code caches, each made by one representative run of its command: a cache holds what that run compiled
// (start-up, configuration, then rendering and writing, or running a phase), so the work does not start by compiling.
const warm = await mkdtemp(path.join(os.tmpdir(), 'oca-build-warm-'));
try {
  await mkdir(path.join(warm, 'templates/etc'), { recursive: true });
  await writeFile(path.join(warm, 'templates/etc/sample.conf'), 'a = {{a}}\n{{#list}}- {{name}} {{.}}\n{{/list}}{{^none}}none{{/none}}\n');
  await writeFile(path.join(warm, 'templates/etc/sample.conf.oac'), 'mode: 0600\n');
  await writeFile(path.join(warm, 'metadata.json'), JSON.stringify({ a: 1, list: [{ name: 'x' }, 2] }));
  const phase = path.join(warm, 'refresh/configure.d');
  await mkdir(phase, { recursive: true });
  await writeFile(path.join(phase, '10-warm-up'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  const runs = {
    'os-apply-config': ['-t', path.join(warm, 'templates'), '-o', path.join(warm, 'out'), '-m', path.join(warm, 'metadata.json')],
    'os-refresh-config': ['--lockfile', path.join(warm, 'refresh.lock')],
  };
  const env = { ...process.env, OS_REFRESH_CONFIG_BASE_DIR: path.join(warm, 'refresh') };
  for (const name of COMPAT_COMMANDS) {
    const run = spawnSync(process.execPath, [`dist/bin/${name}`, '--root', warm, ...runs[name]], { encoding: 'utf8', env });
    if (run.status !== 0 || !existsSync(`dist/${name}.cjs.cache`)) throw new Error(`the code-cache warm-up run of ${name} failed (exit ${run.status}): ${run.stderr}`);
  }
} finally {
  await rm(warm, { recursive: true, force: true });
}
console.log(`built ${out}, ${COMPAT_COMMANDS.map((n) => `dist/${n}.cjs`).join(', ')} (+ code caches), dist/hooks/{${groups.join(',')}}`);
