// Type-aware lint: floating promises and unsafe any are real bugs in an extension host.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['out/**', 'dist/**', 'node_modules/**', 'native/build/**', '.vscode-test/**', '.venv-torch2/**', 'test/fixtures/**', 'examples/**', '**/*.d.ts'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // `import X = require()` is how web-tree-sitter's CJS build is reached (see scripts/build.mjs).
      '@typescript-eslint/no-require-imports': ['error', { allowAsImport: true }],
    },
  },
  { files: ['src/**/*.ts'], ignores: ['src/cli/**'], rules: { 'no-console': 'error' } },
  // Layering: the editor reaches the linter only through src/lint/index.ts, and the sampler is a lower
  // layer than the profiler (no import cycle). Two depths because src/extension has its own lint/ folder.
  {
    files: ['src/extension/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./lint/', message: 'import from ../lint (src/lint/index.ts)' }] }] },
  },
  {
    files: ['src/extension/*/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./\\.\\./lint/', message: 'import from ../../lint (src/lint/index.ts)' }] }] },
  },
  {
    files: ['src/sampler/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./profiler', message: 'src/sampler sits below src/profiler' }] }] },
  },
  { files: ['**/*.mjs', '**/*.js', '**/*.cjs'], languageOptions: { globals: { ...globals.node, ...globals.browser } } },
);
