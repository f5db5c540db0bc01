#!/usr/bin/env node
// The same extension-host suites in desktop VS Code (Electron) through @vscode/test-electron, for machines
// that have a VS Code binary: MEMHINT_VSCODE_PATH=/path/to/code node test/e2e/electron.mjs [host] [untrusted]
// test-electron would download VS Code when no path is given; these machines are offline, so without the
// variable this script only says it skipped. On a Linux machine without a display, run it under xvfb-run.
// runTests() always adds --disable-workspace-trust, so the untrusted suite launches VS Code itself with
// the same arguments minus that one.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runTests } from '@vscode/test-electron';
import { repoRoot } from './lib/paths.mjs';
import { quietSettings } from './lib/server.mjs';
import { makeRunDir, makeWorkspace, removeDir } from './lib/workspace.mjs';

const vscodePath = process.env.MEMHINT_VSCODE_PATH;
if (!vscodePath) {
  console.log('e2e electron: skipped (set MEMHINT_VSCODE_PATH to a VS Code executable to run the extension-host suites in desktop VS Code)');
  process.exit(0);
}
if (!fs.existsSync(vscodePath)) {
  console.error(`e2e electron: MEMHINT_VSCODE_PATH=${vscodePath} does not exist`);
  process.exit(2);
}

const suites = {
  host: { index: 'out/test/e2e/suite/index.js', trust: true },
  untrusted: { index: 'out/test/e2e/suite/untrusted/index.js', trust: false },
};
const requested = process.argv.slice(2);
const names = requested.length ? requested : Object.keys(suites);
let failed = false;
for (const name of names) {
  const suite = suites[name];
  if (!suite) {
    console.error(`e2e electron: unknown suite "${name}" (one of ${Object.keys(suites).join(', ')})`);
    process.exit(2);
  }
  const runDir = makeRunDir(`electron-${name}`);
  const workspace = makeWorkspace(runDir);
  const userData = path.join(runDir, 'user-data');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(quietSettings, null, 2));
  const started = Date.now();
  const launchArgs = [
    workspace,
    '--user-data-dir', userData,
    '--extensions-dir', path.join(runDir, 'extensions'),
    '--disable-telemetry',
  ];
  const extensionTestsPath = path.join(repoRoot, suite.index);
  try {
    if (suite.trust) {
      await runTests({ vscodeExecutablePath: vscodePath, extensionDevelopmentPath: repoRoot, extensionTestsPath, launchArgs });
    } else {
      await runUntrusted([
        ...launchArgs, '--no-sandbox', '--disable-gpu-sandbox', '--disable-updates', '--skip-welcome',
        '--skip-release-notes', `--extensionTestsPath=${extensionTestsPath}`, `--extensionDevelopmentPath=${repoRoot}`,
      ]);
    }
    console.log(`e2e electron ${name}: passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    removeDir(runDir);
  } catch (e) {
    failed = true;
    console.error(`e2e electron ${name}: FAILED (${e instanceof Error ? e.message : String(e)}); state kept in ${runDir}`);
  }
}
process.exit(failed ? 1 : 0);

function runUntrusted(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(vscodePath, args, { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`VS Code exited with ${code ?? signal}`))));
  });
}
