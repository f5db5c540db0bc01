// `npm run lint`, Python half: ruff (its WebAssembly build, an npm devDependency: nothing to download)
// and pyright (npm, pure JavaScript) over the bundled harness, python/memhint_harness. Works on a fresh
// clone after `npm ci`. Pyright resolves torch from MEMHINT_PYTHON, else /usr/bin/python3, else python3.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const harness = path.join(root, 'python', 'memhint_harness');

// pyflakes (F), pycodestyle errors and warnings (E, W), bugbear (B), import order (I), pyupgrade-safe
// subset: what catches real mistakes without restyling the code base.
const RUFF_SETTINGS = {
  'line-length': 120,
  'target-version': 'py39',
  lint: { select: ['E', 'F', 'W', 'B', 'I'], ignore: ['B904', 'B905', 'E731'] },
};

function ruff() {
  const { Workspace, PositionEncoding } = require('@astral-sh/ruff-wasm-nodejs');
  const workspace = new Workspace(RUFF_SETTINGS, PositionEncoding.Utf16);
  let problems = 0;
  const files = fs.readdirSync(harness).filter((f) => f.endsWith('.py')).sort();
  for (const name of files) {
    const file = path.join(harness, name);
    for (const d of workspace.check(fs.readFileSync(file, 'utf-8'))) {
      problems++;
      process.stdout.write(`${path.relative(root, file)}:${d.start_location.row}:${d.start_location.column}: ${d.code ?? ''} ${d.message}\n`);
    }
  }
  process.stdout.write(`ruff ${Workspace.version()}: ${files.length} files, ${problems} problem(s)\n`);
  return problems === 0;
}

function pyright() {
  const python = process.env.MEMHINT_PYTHON || (fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
  const cli = require.resolve('pyright/index.js');
  const run = spawnSync(process.execPath, [cli, '-p', path.join(root, 'python', 'pyrightconfig.json'), '--pythonpath', python], {
    stdio: 'inherit',
  });
  return run.status === 0;
}

const ok = [ruff(), pyright()].every(Boolean);
process.exitCode = ok ? 0 : 1;
