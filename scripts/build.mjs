// Bundles the agent into ESM files that run with nothing but `node` (no node_modules on the instance): the entry
// dist/os-config-agent.mjs and the chunks it loads on demand (dist/chunks/), plus tiny launchers for the
// compatibility command names. Splitting keeps the code of commands and stages that a process does not use out of
// its memory: the idle daemon never reads the apply, refresh, deploy, HTTP or YAML code unless it needs it.
import { build } from 'esbuild';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';

const out = 'dist/os-config-agent.mjs';

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
  minify: true,
  keepNames: true,
  sourcemap: false,
  legalComments: 'none',
  banner: {
    // Some bundled CommonJS dependencies call require(); give them one.
    js: "import { createRequire as __ocaCreateRequire } from 'node:module';\nconst require = __ocaCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
  plugins: [lazyBuiltins],
});
// The entry is run directly (`./os-config-agent.mjs`): it alone gets the #! line.
await writeFile(out, `#!/usr/bin/env node\n${await readFile(out, 'utf8')}`);
await chmod(out, 0o755);
await mkdir('dist/bin', { recursive: true });
for (const name of ['os-collect-config', 'os-apply-config', 'os-refresh-config']) {
  const file = `dist/bin/${name}`;
  // A launcher that names itself, so one bundle serves every command.
  await writeFile(file, `#!/usr/bin/env node\nprocess.argv[1] = '${name}';\nawait import('../os-config-agent.mjs');\n`);
  await chmod(file, 0o755);
}
console.log(`built ${out}`);
