// Bundles the agent into ES modules that run with nothing but `node` (no node_modules on the instance): the entry
// dist/os-config-agent.mjs and the chunks it loads on demand (dist/chunks/), one launcher per compatibility command
// name (dist/bin/), the list of command names (dist/command-names, dist/command-names.json) and the built-in hooks
// (dist/hooks/). Splitting keeps the code of commands and stages that a process does not use out of its memory: the
// idle daemon never reads the apply, refresh, deploy, HTTP or YAML code unless it needs it, and os-apply-config reads
// the renderer and not the collectors. docs/build.md.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { thirdPartyLicences } from './third-party-licenses.mjs';

const out = 'dist/os-config-agent.mjs';
// The #! line of the entry and the launchers: V8's background threads sized to the machine's CPUs (--v8-pool-size=0);
// Node's default is 4 whatever the count, which oversubscribes a small machine while a one-shot command compiles
// (docs/performance.md). The image's and the Debian package's launchers pass the same flag.
const SHEBANG = '#!/usr/bin/env -S node --v8-pool-size=0';
// OCA_BUILD_MINIFY=0 keeps names readable (CPU profiles); every shipped build is minified.
const minify = process.env.OCA_BUILD_MINIFY !== '0';

// On Node.js 22 the ES module view of node:http reads every export, and its WebSocket export loads undici: megabytes
// more in every process that makes a request, and in the daemon, whose V8 runs in lite mode without WebAssembly, an
// uncaught error that ends the process. Our own code requires node:http (eslint.config.js says so); a dependency
// that imports it is given Node's module through require() instead: the same object, without the ES module view
// (today's dependencies all require it; this keeps a new one from bringing the view back).
const httpThroughRequire = {
  name: 'http-through-require',
  setup(b) {
    b.onResolve({ filter: /^(node:)?http$/ }, (args) =>
      args.importer.includes('node_modules') && args.kind === 'import-statement'
        ? { path: 'http', namespace: 'http-through-require' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'http-through-require' }, () => ({
      contents: "module.exports = require('node:http');",
      loader: 'js',
    }));
  },
};
// A package stand-in, which buys correctness: the proxy agents trace through `debug`, whose output (to stderr when
// DEBUG is set, outside the agent's log scrubbing) includes proxy credentials (scripts/debug-off.cjs).
const PACKAGE_STAND_INS = { debug: './scripts/debug-off.cjs' };
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  keepNames: true,
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  alias: PACKAGE_STAND_INS,
};

// heat-cfntools' commands but cfn-signal run from files of their own, CommonJS (src/cfn-bin.ts says why): the entry
// dist/cfn-commands.cjs that their launchers and links start, and the commands' code in one file it requires,
// dist/chunks/cfn-main.cjs (src/cli/cfn-main.ts and all it loads). The agent's entry and its chunk of src/cli/main.ts
// import that same file for `os-config-agent cfn-init ...` and a link to the agent's entry named after a command.
const CFN_ENTRY = 'cfn-commands.cjs';
const CFN_BUNDLE = 'chunks/cfn-main.cjs';
const cfnCommandsApart = {
  name: 'cfn-commands-apart',
  setup(b) {
    b.onResolve({ filter: /^\.\/(cli\/)?cfn-main\.js$|^\.\/bin\.js$/ }, (args) => {
      const from = path.relative(process.cwd(), args.importer);
      if (from === 'src/bin.ts' && args.path === './cli/cfn-main.js')
        return { path: `./${CFN_BUNDLE}`, external: true };
      if (from === 'src/cli/main.ts') return { path: `./${path.basename(CFN_BUNDLE)}`, external: true };
      if (from === 'src/cfn-bin.ts' && args.path === './bin.js')
        return { path: `./${AGENT_COMMAND}.mjs`, external: true };
      throw new Error(`${from}: ${args.path} is imported only by the entries and src/cli/main.ts (scripts/build.mjs)`);
    });
  },
};
// What every CommonJS build shares (heat-cfntools' commands, the hooks). CommonJS has no import.meta: the file URL that
// src/http/ builds its require() from, and src/cfn-bin.ts its own. The banner comes before esbuild's "use strict", so
// it says it first: the code was written as (strict) ES modules.
const CJS = {
  format: 'cjs',
  define: { 'import.meta.url': '__ocaFileUrl' },
  banner: { js: "'use strict';\nconst __ocaFileUrl = require('node:url').pathToFileURL(__filename).href;" },
};

// Some bundled CommonJS dependencies call require(); the ES module bundles give them one.
const ESM_REQUIRE = {
  js: "import { createRequire as __ocaCreateRequire } from 'node:module';\nconst require = __ocaCreateRequire(import.meta.url);",
};

/** A module of src/ bundled in memory and imported, to read the lists it exports. */
async function importSource(entry, plugins = []) {
  const bundled = await build({ ...common, entryPoints: [entry], format: 'esm', write: false, plugins });
  return import(`data:text/javascript;base64,${Buffer.from(bundled.outputFiles[0].text).toString('base64')}`);
}
// The hooks the registry loads stay out of its bundle: only its list of groups is read.
const hooksLeftOut = {
  name: 'hooks-left-out',
  setup(b) {
    b.onResolve({ filter: /^\.\/groups\// }, (args) => ({ path: args.path, external: true }));
  },
};

// The one list of command names, read from its module (src/cli/command-names.ts).
const { AGENT_COMMAND, COMPAT_COMMANDS, COMMAND_NAMES, isCfnTool } = await importSource('src/cli/command-names.ts');
/** The file of dist/ that command `name` starts: heat-cfntools' commands' entry, or the agent's. */
const entryOf = (name) => (isCfnTool(name) ? CFN_ENTRY : `${AGENT_COMMAND}.mjs`);

await rm('dist', { recursive: true, force: true });
// What each shipped bundle read, for the list of the npm packages it carries (dist/THIRD-PARTY-LICENSES).
const metafiles = [];
const entryBuild = await build({
  ...common,
  entryPoints: { [AGENT_COMMAND]: 'src/bin.ts' },
  outdir: 'dist',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  format: 'esm',
  minify,
  banner: ESM_REQUIRE,
  plugins: [httpThroughRequire, cfnCommandsApart],
  metafile: true,
});
metafiles.push(entryBuild.metafile);
const cfnBuild = await build({
  ...common,
  ...CJS,
  entryPoints: ['src/cli/cfn-main.ts'],
  outfile: `dist/${CFN_BUNDLE}`,
  minify,
  // Its lazy loads (`await import(...)` of the process starter and of what only some runs need, written so for the
  // agent's ES module bundle) become require() calls: an import() would start the ES module loader that this file is
  // built to do without.
  supported: { 'dynamic-import': false },
  metafile: true,
});
metafiles.push(cfnBuild.metafile);
const cfnEntryBuild = await build({
  ...common,
  ...CJS,
  entryPoints: ['src/cfn-bin.ts'],
  outfile: `dist/${CFN_ENTRY}`,
  minify,
  plugins: [cfnCommandsApart],
  metafile: true,
});
metafiles.push(cfnEntryBuild.metafile);
// The entries are run directly (`./os-config-agent.mjs`): they alone get the #! line.
for (const entry of [out, `dist/${CFN_ENTRY}`]) {
  await writeFile(entry, `${SHEBANG}\n${await readFile(entry, 'utf8')}`);
  await chmod(entry, 0o755);
}

// One launcher per compatibility name: it gives its own path as the one it runs as (the entries choose the command by
// its name, as they do for a link named after the command; cfn-create-aws-symlinks finds its siblings by its
// directory), then loads its entry. A file, not a link: npm leaves links out of a package. CommonJS, which every
// Node.js >= 20 loads from a file without an extension (dist/bin/package.json), and which requires the CommonJS entry
// of heat-cfntools' commands without starting the ES module loader.
await mkdir('dist/bin', { recursive: true });
await writeFile('dist/bin/package.json', '{ "type": "commonjs" }\n');
for (const name of COMPAT_COMMANDS) {
  const entry = entryOf(name);
  const load = entry.endsWith('.cjs') ? `require('../${entry}');` : `void import('../${entry}');`;
  await writeFile(
    `dist/bin/${name}`,
    `${SHEBANG}\n// ${name}: os-config-agent's ${name} command (scripts/build.mjs).\nprocess.argv[1] = __filename;\n${load}\n`,
  );
  await chmod(`dist/bin/${name}`, 0o755);
}
// The list for what installs the launchers: the image element (shell: one name per line, the agent's first, and the
// file each name starts, "NAME FILE" per line) and the Debian package.
await writeFile('dist/command-names', `${COMMAND_NAMES.join('\n')}\n`);
await writeFile('dist/command-entries', COMMAND_NAMES.map((name) => `${name} ${entryOf(name)}\n`).join(''));
const entries = Object.fromEntries(COMMAND_NAMES.map((name) => [name, entryOf(name)]));
await writeFile(
  'dist/command-names.json',
  `${JSON.stringify({ agent: AGENT_COMMAND, compat: COMPAT_COMMANDS, entries })}\n`,
);

// The built-in hooks: one self-contained executable per group of the registry (src/hooks/registry.ts; the module of
// each is src/hooks/groups/<group>.ts), dist/hooks/<group>,
// that any Node.js >= 20 runs with nothing beside it. CommonJS, because Node.js before 20.19 loads a file without an
// extension as CommonJS wherever it is installed; dist/hooks/package.json says so for this tree only (the repository's
// package.json says "module"). Not minified: operators read the hook that ran. The second line is the stamp by which
// the agent recognises its own build and runs the hook in-process (src/hooks/host/stamp.ts: same format).
const { version } = JSON.parse(await readFile('package.json', 'utf8'));
const { BUILTIN_HOOK_GROUPS } = await importSource('src/hooks/registry.ts', [hooksLeftOut]);
const groups = [...BUILTIN_HOOK_GROUPS].sort();
await mkdir('dist/hooks', { recursive: true });
await writeFile('dist/hooks/package.json', '{ "type": "commonjs" }\n');
for (const group of groups) {
  const built = await build({
    ...common,
    minify: false,
    stdin: {
      contents: `import { hook } from './groups/${group}.ts';\nimport { runStandaloneHook } from './host/standalone.ts';\nvoid runStandaloneHook(hook);\n`,
      resolveDir: 'src/hooks',
      sourcefile: `hooks/${group}`,
      loader: 'ts',
    },
    ...CJS,
    write: false,
    // A hook that downloads (cfn-init) carries the HTTP client, with the package stand-ins above and its file URL.
    metafile: true,
  });
  metafiles.push(built.metafile);
  const body = built.outputFiles[0].text;
  const digest = createHash('sha256').update(body, 'utf8').digest('hex');
  await writeFile(
    `dist/hooks/${group}`,
    `#!/usr/bin/env node\n// os-config-agent built-in hook group=${group} version=${version} sha256=${digest}\n${body}`,
    { mode: 0o755 },
  );
  await chmod(`dist/hooks/${group}`, 0o755);
}

const licences = thirdPartyLicences(metafiles);
await writeFile('dist/THIRD-PARTY-LICENSES', licences.text);

// The manual pages and the bash completion, written from the command definitions themselves (src/cli/reference.ts),
// so that they say what --help says. The release date of the pages is this version's in CHANGELOG.md.
const reference = 'dist/.reference.mjs';
await build({
  ...common,
  entryPoints: ['src/cli/reference.ts'],
  outfile: reference,
  format: 'esm',
  banner: ESM_REQUIRE,
  plugins: [httpThroughRequire],
});
const changelog = await readFile('CHANGELOG.md', 'utf8').catch(() => '');
const released = new RegExp(`^## \\[?${version.replace(/\./g, '\\.')}\\]? - (\\d{4}-\\d{2}-\\d{2})`, 'm').exec(
  changelog,
)?.[1];
const date = released ?? new Date().toISOString().slice(0, 10);
const pages = await (await import(`../${reference}`)).writeReference('dist', date);
await rm(reference);

console.log(
  `built ${out} and dist/chunks/, dist/bin/{${COMPAT_COMMANDS.join(',')}}, dist/hooks/{${groups.join(',')}}, dist/man/ (${pages.length} pages), dist/completion/, dist/THIRD-PARTY-LICENSES (${licences.packages.length} packages)`,
);
