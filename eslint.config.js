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
    // The ES module view of node:http or node:https reads every export, and on Node.js 22 their lazy WebSocket/fetch
    // exports compile WebAssembly: a fatal V8 error in the daemon once it has switched to lite mode (src/bin.ts).
    files: ['src/**'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['node:http', 'node:https', 'http', 'https'].map((name) => ({
          name,
          allowTypeImports: true,
          message: 'require() it (createRequire): importing it makes Node 22 compile WebAssembly, fatal in the lite-mode daemon',
        })),
      }],
    },
  },
  {
    files: ['test/**', 'scripts/**'],
    rules: { 'no-console': 'off' },
  },
);
