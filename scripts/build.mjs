// Bundles the agent into one ESM file that runs with nothing but `node` (no node_modules on the instance), plus
// tiny launchers for the compatibility command names.
import { build } from 'esbuild';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';

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
  entryPoints: ['src/bin.ts'],
  outfile: out,
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
    js: "#!/usr/bin/env node\nimport { createRequire as __ocaCreateRequire } from 'node:module';\nconst require = __ocaCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
  plugins: [lazyBuiltins],
});
await chmod(out, 0o755);
await mkdir('dist/bin', { recursive: true });
for (const name of ['os-collect-config', 'os-apply-config', 'os-refresh-config']) {
  const file = `dist/bin/${name}`;
  // A launcher that names itself, so one bundle serves every command.
  await writeFile(file, `#!/usr/bin/env node\nprocess.argv[1] = '${name}';\nawait import('../os-config-agent.mjs');\n`);
  await chmod(file, 0o755);
}
console.log(`built ${out}`);
