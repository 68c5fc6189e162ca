// Lint: the recommended JS and TypeScript rules, plus a few that catch agent-specific hazards.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tap/**', 'test/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly',
        clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // On Node.js 22 the ES module view of node:http reads every export, and its WebSocket export loads undici: 10 MB
    // more in the process, and in the daemon, whose V8 runs in lite mode without WebAssembly (docs/build.md), an
    // uncaught error that ends it. require() gives the same module without that view (scripts/build.mjs does the
    // same for dependencies). node:https's view does not load undici; it is kept here with http for simplicity.
    files: ['src/**'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['node:http', 'node:https', 'http', 'https'].map((name) => ({
          name,
          allowTypeImports: true,
          message: 'require() it (createRequire): its ES module view loads undici on Node 22, which ends the lite-mode daemon',
        })),
      }],
    },
  },
  // Layers. A module may import its own layer and those below it, never one above; bottom to top:
  //
  //   errors.ts, version.ts < util < log < http < config < keystone < collectors < cache < apply < refresh < deploy
  //     < self-config < daemon < doctor < cli < compat, launch, bin.ts
  //
  // An interface that an upper layer calls into (a collector, a signal transport, an after-collect hook, a pipeline
  // step) is declared at or below the lowest layer that implements it, so the implementation never reaches up.
  // Checked by @typescript-eslint/no-restricted-imports (type-only imports count too), a separate rule from the core
  // no-restricted-imports above so neither replaces the other's options. Dynamic import() is not checked.
  ...layerBlocks([
    ['errors.ts', 'version.ts'], ['util'], ['log'], ['http'], ['config'], ['keystone'], ['collectors'], ['cache'],
    ['apply'], ['refresh'], ['deploy'], ['self-config'], ['daemon'], ['doctor'], ['cli'], ['compat', 'launch', 'bin.ts'],
  ]),
  {
    files: ['test/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
);

/** One config block per layer: files of layers[i] may not import from layers[i + 1] and above. */
function layerBlocks(layers) {
  const fileGlob = (name) => (name.endsWith('.ts') ? `src/${name}` : `src/${name}/**`);
  // A relative import that lands in src/<name>: any number of ../ (or ./ from a file directly in src/).
  const target = (name) => `^(?:\\./|(?:\\.\\./)+)${name.replace(/\.ts$/, '').replace(/[.]/g, '\\.')}(?:\\.js$|/|$)`;
  return layers.slice(0, -1).map((layer, i) => {
    const above = layers.slice(i + 1).flat();
    return {
      files: layer.map(fileGlob),
      rules: {
        '@typescript-eslint/no-restricted-imports': ['error', {
          patterns: above.map((name) => ({
            regex: target(name),
            caseSensitive: true,
            message: `${layer.join('/')} is below ${name} in the layer order (eslint.config.js): move what is needed down, or declare an interface here`,
          })),
        }],
      },
    };
  });
}
