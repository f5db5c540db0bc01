// Bundles the extension and the CLI with esbuild. web-tree-sitter is aliased to its CJS build:
// its ESM build uses import.meta, which a CJS bundle cannot provide.
import * as esbuild from 'esbuild';
import { createRequire } from 'node:module';
import * as fs from 'node:fs';

const require = createRequire(import.meta.url);
const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  alias: { 'web-tree-sitter': require.resolve('web-tree-sitter') }, // the "require" export: CJS build
};

const configs = [
  { ...common, entryPoints: ['src/extension/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'] },
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js' },
  // Worker threads of `memhint lint` over many files (src/cli/lint-pool.ts looks for it next to cli.js).
  { ...common, entryPoints: ['src/cli/lint-worker.ts'], outfile: 'dist/lint-worker.js' },
];

// The parser loads these at run time from next to the bundle.
fs.mkdirSync('dist', { recursive: true });
fs.copyFileSync(require.resolve('web-tree-sitter/web-tree-sitter.wasm'), 'dist/web-tree-sitter.wasm');
fs.copyFileSync(require.resolve('tree-sitter-python/tree-sitter-python.wasm'), 'dist/tree-sitter-python.wasm');

if (watch) {
  for (const c of configs) await (await esbuild.context(c)).watch();
} else {
  await Promise.all(configs.map((c) => esbuild.build(c)));
}
