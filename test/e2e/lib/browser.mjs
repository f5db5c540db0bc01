// Debian's chromium driven by playwright-core, headless, with a fresh profile (Playwright makes one per launch).
import * as fs from 'node:fs';
import { chromium } from 'playwright-core';
import { chromiumPath } from './paths.mjs';

export const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

export async function launchBrowser() {
  if (!fs.existsSync(chromiumPath)) {
    throw new Error(`chromium not found at ${chromiumPath}: run scripts/setup-system.sh (or set MEMHINT_CHROMIUM)`);
  }
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
}

/** A page with a desktop-sized viewport; console errors are kept for the failure report. */
export async function newPage(browser, { width = 1400, height = 900 } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  return { context, page };
}
