#!/usr/bin/env node
// Real-VS-Code tests: code-server 4.139 (VS Code 1.139) + Debian chromium via playwright-core.
//   node test/e2e/run.mjs [host] [untrusted] [ui] [pyext]      (default: all four)
// host:      mocha inside the extension host, trusted workspace (out/test/e2e/suite/index.js)
// untrusted: mocha inside the extension host, workspace trust on (out/test/e2e/suite/untrusted/index.js)
// ui:        Playwright drives the workbench like a person (test/e2e/ui/*.test.mjs), the extension
//            installed as a user has it; screenshots go to .e2e/screenshots/
// pyext:     UI tests with a test-only stand-in for the Python extension (test/e2e/fixtures/python-extension,
//            id ms-python.python) installed beside memhint and memhint.python unset (test/e2e/ui-pyext/*.test.mjs);
//            the other phases never see it
// Needs: bash scripts/setup-e2e.sh, npm run build, npm run compile. Env: MEMHINT_E2E_GREP (mocha grep),
// MEMHINT_E2E_VERBOSE=1 (workbench log), MEMHINT_E2E_KEEP=1 (keep .e2e/runs/* state), MEMHINT_TEST_PYTHON.
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';
import { launchBrowser, newPage } from './lib/browser.mjs';
import { runExtensionHostTests } from './lib/host.mjs';
import { repoRoot, screenshotsDir } from './lib/paths.mjs';
import { assertInstalled, startCodeServer, tail } from './lib/server.mjs';
import { session } from './ui/session.mjs';
import { Workbench } from './lib/workbench.mjs';
import { makeRunDir, makeWorkspace, removeDir } from './lib/workspace.mjs';

const allPhases = ['host', 'untrusted', 'ui', 'pyext'];
const uiPhases = { ui: 'test/e2e/ui', pyext: 'test/e2e/ui-pyext' };
const requested = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const phases = requested.length ? requested : allPhases;
for (const p of phases) if (!allPhases.includes(p)) fail(`unknown phase "${p}" (one of ${allPhases.join(', ')})`);

const compiledSuite = path.join(repoRoot, 'out/test/e2e/suite/index.js');
const compiledUntrusted = path.join(repoRoot, 'out/test/e2e/suite/untrusted/index.js');
const bundle = path.join(repoRoot, 'dist/extension.js');
const fakePythonExtension = path.join(repoRoot, 'test/e2e/fixtures/python-extension');

try {
  assertInstalled();
} catch (e) {
  fail(e.message);
}
for (const f of [bundle, compiledSuite, compiledUntrusted]) {
  if (!fs.existsSync(f)) fail(`${path.relative(repoRoot, f)} is missing: run npm run build && npm run compile`);
}

const keep = process.env.MEMHINT_E2E_KEEP === '1';
const timings = [];
const results = [];
const t0 = Date.now();
const browser = await launchBrowser();
try {
  for (const phase of phases) {
    const started = Date.now();
    const code = await runPhase(phase);
    const seconds = (Date.now() - started) / 1000;
    timings.push(`${phase} ${seconds.toFixed(1)} s`);
    results.push({ phase, code });
    console.log(`e2e ${phase}: ${code === 0 ? 'passed' : `FAILED (${code})`} in ${seconds.toFixed(1)} s`);
  }
} finally {
  await browser.close().catch(() => {});
}
console.log(`e2e total ${((Date.now() - t0) / 1000).toFixed(1)} s (${timings.join(', ')})`);
process.exit(results.every((r) => r.code === 0) ? 0 : 1);

async function runPhase(phase) {
  const runDir = makeRunDir(phase);
  const workspace = makeWorkspace(runDir);
  const ui = phase in uiPhases;
  const server = await startCodeServer({
    stateDir: path.join(runDir, 'server'),
    trust: phase !== 'untrusted',
    // UI runs use the extension as a user has it, installed (linked into the extensions dir): the
    // development-mode payload only works with the smoke-test driver, which hides notification toasts.
    smokeTestDriver: !ui,
    extensions: phase === 'pyext' ? [repoRoot, fakePythonExtension] : ui ? [repoRoot] : [],
    // The UI tests profile from the palette: the CPU backend everywhere (a GPU machine would pick CUDA).
    settings: { 'memhint.profile.backend': 'cpu', 'memhint.profile.steps': 2, ...(phase === 'pyext' ? pyextSettings() : {}) },
    env: phase === 'pyext' ? pyextEnv(runDir) : {},
  });
  let code = 1;
  try {
    code = await runInServer(phase, server, workspace);
  } catch (e) {
    console.log(`e2e ${phase}: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    code = 1;
  } finally {
    await server.stop();
    if (code !== 0) console.log(`--- code-server log (${server.logFile}) ---\n${tail(server.logFile, 30)}`);
    if (code === 0 && !keep) removeDir(runDir);
  }
  return code;
}

async function runInServer(phase, server, workspace) {
  console.log(`e2e ${phase}: VS Code ${server.url}, workspace ${workspace}`);
  if (phase in uiPhases) return runUiTests(server, workspace, path.join(repoRoot, uiPhases[phase]));
  return runExtensionHostTests({
    server, browser, folder: workspace,
    testsIndex: phase === 'host' ? compiledSuite : compiledUntrusted,
  });
}

async function runUiTests(server, workspace, dir) {
  // Pictures of an earlier run's failures would read as this run's.
  if (fs.existsSync(screenshotsDir)) {
    for (const f of fs.readdirSync(screenshotsDir)) if (f.startsWith('failed-')) fs.rmSync(path.join(screenshotsDir, f));
  }
  const { context, page } = await newPage(browser);
  const wb = new Workbench(page);
  Object.assign(session, { server, browser, page, wb, workspace });
  page.on('pageerror', (err) => console.log('  [page error]', err.message));
  try {
    await wb.open(server.workbenchUrl(workspace));
    await wb.waitForCommand('memhint: Show Logs').catch(async (e) => {
      await wb.screenshot('failed-open');
      throw e;
    });
    const mocha = new Mocha({ ui: 'bdd', reporter: 'spec', timeout: 90_000, color: false });
    if (process.env.MEMHINT_E2E_GREP) mocha.grep(new RegExp(process.env.MEMHINT_E2E_GREP)); // a regular expression: "lint|summary"
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.test.mjs')).sort()) {
      mocha.addFile(path.join(dir, f));
    }
    await mocha.loadFilesAsync();
    // A failing UI test leaves a picture of the window behind.
    mocha.suite.afterEach(async function () {
      const test = this.currentTest;
      if (test?.state === 'failed') {
        const name = test.fullTitle().replace(/[^A-Za-z0-9]+/g, '-').slice(0, 80);
        await wb.screenshot(`failed-${name}`).catch(() => {});
      }
    });
    const failures = await new Promise((resolve) => mocha.run(resolve));
    return failures > 0 ? 1 : 0;
  } finally {
    await context.close().catch(() => {});
  }
}

/**
 * The pyext phase: memhint.python unset (the interpreter comes from the Python extension), and no lint
 * target pin in the workspace's settings is touched here (the tests remove it themselves).
 */
function pyextSettings() {
  return { 'memhint.python': undefined };
}

/**
 * The pyext phase's environment: the fake Python extension records the calls it answers, and `python3`
 * on PATH (memhint's fallback) is Debian's, with torch 1.13, whatever else is on this machine's PATH.
 */
function pyextEnv(runDir) {
  return {
    MEMHINT_FAKE_PYTHON_CALLS: path.join(runDir, 'fake-python-calls.log'),
    PATH: `/usr/bin:${process.env.PATH ?? ''}`,
  };
}

function fail(message) {
  console.error(`e2e: ${message}`);
  process.exit(2);
}
