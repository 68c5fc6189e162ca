// Lint: the recommended JS and TypeScript rules, plus a few that catch agent-specific hazards.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layerRule } from './eslint.layers.js';

const PROCESS_STARTER = 'src/util/process-group.ts';
const CHILD_PROCESS_MESSAGE = `start processes with runProcess (${PROCESS_STARTER}), the one place that starts them`;
const HTTP_BY_REQUIRE = ['node:http', 'node:https', 'http', 'https'].map((name) => ({
  name,
  allowTypeImports: true,
  message: 'require() it (createRequire): its ES module view loads undici on Node 22, which ends the lite-mode daemon',
}));
const CHILD_PROCESS = ['node:child_process', 'child_process'].map((name) => ({ name, message: CHILD_PROCESS_MESSAGE }));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tap/**', 'test/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  // On Node.js 22 the ES module view of node:http reads every export, and its WebSocket export loads undici:
  // megabytes more in the process, and in the daemon, whose V8 runs in lite mode without WebAssembly
  // (docs/build.md), an uncaught error that ends it. require() gives the same module without that view
  // (scripts/build.mjs does the same for dependencies). node:https's view does not load undici; it is kept here with
  // http for simplicity.
  // Processes start in one place, src/util/process-group.ts (runProcess): there each one is born at the neutral
  // oom_score_adj, in a process group a timeout or shutdown kills whole, with its output capped, and told to the
  // daemon's watchdog. Nothing else in src/ loads child_process, statically or with import().
  {
    files: ['src/**'],
    ignores: [PROCESS_STARTER],
    rules: {
      'no-restricted-imports': ['error', { paths: [...HTTP_BY_REQUIRE, ...CHILD_PROCESS] }],
      'no-restricted-syntax': [
        'error',
        { selector: 'ImportExpression[source.value=/^(node:)?child_process$/]', message: CHILD_PROCESS_MESSAGE },
      ],
    },
  },
  {
    files: [PROCESS_STARTER],
    rules: { 'no-restricted-imports': ['error', { paths: HTTP_BY_REQUIRE }] },
  },
  // Layers, as a graph (eslint.layers.js): each folder of src/ names the folders it may import. Type-only imports count
  // too (a type is still a dependency); import() is not checked. docs/architecture.md draws the same graph, and
  // test/lint/layers.test.ts probes every rule.
  {
    files: ['src/**/*.ts'],
    plugins: { layers: { rules: { imports: layerRule } } },
    rules: { 'layers/imports': 'error' },
  },
  // Size: a file of src/ does one job in about 300 lines and a function one thing in about 60 (blank lines and
  // comments not counted). Over the limit, split by job (a file or function per job, named for it), not by count.
  {
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 300, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['test/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
);
