#!/usr/bin/env node
// Second pass of the suites that run the harness in a real Python, under torch 2.x: the first pass
// (`npm run test:unit`) uses Debian's torch 1.13 (/usr/bin/python3). The interpreter is
// MEMHINT_TEST_TORCH2_PYTHON, else .venv-torch2/bin/python (made by scripts/setup-torch2.sh).
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const python = path.resolve(process.env.MEMHINT_TEST_TORCH2_PYTHON || path.join(root, '.venv-torch2', 'bin', 'python'));
const SUITES = [
  'out/test/unit/profiler-harness.test.js',
  'out/test/unit/profiler-cli.test.js',
  'out/test/unit/profiler-hostile.test.js',
  'out/test/unit/profiler-allochook.test.js',
  'out/test/unit/profiler-events.test.js',
  'out/test/unit/sampler-profile.test.js',
  'out/test/unit/extension/runProfile.test.js',
];

if (!fs.existsSync(python)) {
  console.error(`test:torch2: no torch 2 interpreter at ${python}.\nRun: bash scripts/setup-torch2.sh (or set MEMHINT_TEST_TORCH2_PYTHON)`);
  process.exit(1);
}
let version;
try {
  version = execFileSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf-8' }).trim();
} catch (error) {
  console.error(`test:torch2: ${python} cannot import torch (${error.message.split('\n')[0]}).\nRun: bash scripts/setup-torch2.sh`);
  process.exit(1);
}
if (!/^[2-9]\d*\./.test(version)) {
  console.error(`test:torch2: ${python} has torch ${version}, not 2.x. Run: bash scripts/setup-torch2.sh`);
  process.exit(1);
}
const missing = SUITES.filter((s) => !fs.existsSync(path.join(root, s)));
if (missing.length) {
  console.error(`test:torch2: ${missing.join(', ')} missing; run npm run compile first`);
  process.exit(1);
}
console.log(`test:torch2: harness suites under torch ${version} (${python})`);
const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
const run = spawnSync(process.execPath, [mocha, '--no-config', '--timeout', '20000', '--reporter', 'spec', ...SUITES], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, MEMHINT_TEST_PYTHON: python },
});
process.exit(run.status ?? 1);
