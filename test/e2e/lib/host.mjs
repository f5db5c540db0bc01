// Mode 1: mocha inside VS Code's extension host. The workbench is opened in dev mode with a payload naming
// the extension (repo root) and the compiled test index; with enable-smoke-test-driver VS Code reports the
// index's run() result by calling window.codeAutomationExit(code) and its log by codeAutomationLog.
import { newPage } from './browser.mjs';
import { repoRoot } from './paths.mjs';

/**
 * @param {object} opts
 * @param {Awaited<ReturnType<typeof import('./server.mjs').startCodeServer>>} opts.server
 * @param {import('playwright-core').Browser} opts.browser
 * @param {string} opts.folder  workspace folder to open
 * @param {string} opts.testsIndex  absolute path of the compiled mocha index (a .js exporting run())
 * @param {number} [opts.timeoutMs]
 * @returns {Promise<number>} the tests' exit code
 */
export async function runExtensionHostTests({ server, browser, folder, testsIndex, timeoutMs = 240_000 }) {
  const { context, page } = await newPage(browser);
  const verbose = process.env.MEMHINT_E2E_VERBOSE === '1';
  const started = Date.now();
  let resolveExit;
  const exited = new Promise((r) => { resolveExit = r; });
  let finished = false; // after the exit call the window shuts down and logs cancelled reads: noise
  await page.exposeFunction('codeAutomationExit', (code) => { finished = true; resolveExit(Number(code)); });
  await page.exposeFunction('codeAutomationLog', (type, args) => {
    if (finished) return;
    const text = (Array.isArray(args) ? args : [args]).map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
    // The extension host's console (mocha's reporter, see suite/runner.ts) arrives here as log records.
    const marked = text.indexOf(reportMarker);
    if (marked >= 0) console.log(text.slice(marked + reportMarker.length));
    else if (verbose) console.log(`  [vscode ${type} +${((Date.now() - started) / 1000).toFixed(1)}s] ${text.split('\n')[0]}`);
    else if ((type === 'error' && !harmless.some((re) => re.test(text)))) console.log(`  [vscode ${type}] ${text}`);
  });
  page.on('pageerror', (err) => console.log('  [page error]', err.message));

  const payload = [
    ['extensionDevelopmentPath', server.remoteUri(repoRoot)],
    ['extensionTestsPath', server.remoteUri(testsIndex)],
    ['skipWelcome', 'true'],
  ];
  await page.goto(server.workbenchUrl(folder, payload), { waitUntil: 'domcontentloaded', timeout: timeoutMs });
  let timer;
  const timeout = new Promise((r) => { timer = setTimeout(() => r('timeout'), timeoutMs); });
  const result = await Promise.race([exited, timeout]);
  clearTimeout(timer);
  await context.close().catch(() => {});
  if (result === 'timeout') {
    console.log(`  extension-host tests did not finish within ${timeoutMs / 1000} s; server log: ${server.logFile}`);
    return 124;
  }
  return result;
}

const reportMarker = '[memhint-e2e] ';

/** Errors every offline code-server logs; they say nothing about the extension. */
const harmless = [
  /ENOTFOUND|EAI_AGAIN|getaddrinfo/,
  /authentication provider 'github'/,
  /Long running operations during shutdown are unsupported in the web/,
  /Aborted onWillSaveTextDocument-event/, // a built-in extension's save participant on a slow machine
];
