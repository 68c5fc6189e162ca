// Bundles the agent into one ESM file that runs with nothing but `node` (no node_modules on the instance), plus
// tiny launchers for the compatibility command names.
import { build } from 'esbuild';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';

const out = 'dist/os-config-agent.mjs';
await rm('dist', { recursive: true, force: true });
await build({
  entryPoints: ['src/bin.ts'],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  minify: false,
  sourcemap: false,
  legalComments: 'none',
  banner: {
    // Some bundled CommonJS dependencies call require(); give them one.
    js: "#!/usr/bin/env node\nimport { createRequire as __ocaCreateRequire } from 'node:module';\nconst require = __ocaCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
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
