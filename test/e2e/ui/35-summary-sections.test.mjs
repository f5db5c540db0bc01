/* global describe, it, after */
// The summary's newer sections as a person reads them: a measured report and a `memhint predict` report of
// the same step opened from disk ("memhint: Open Profile Report…", the file dialog typed into), then
// predicted vs measured side by side, DataLoader workers, graphs without backward and kernel workspaces,
// readable in a dark and a light theme, and still there after a window reload. The reports are the unit
// tests' fixtures (out/test/unit/extension/reportFixture.js), so no torch run is needed.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { repoRoot } from '../lib/paths.mjs';
import { session } from './session.mjs';

const title = 'memhint: Memory Summary';
const require = createRequire(import.meta.url);
const fixtures = require(path.join(repoRoot, 'out/test/unit/extension/reportFixture.js'));

/** "memhint: Open Profile Report…" with the path typed into VS Code's file dialog. */
async function openReport(file) {
  const { wb, page } = session;
  await wb.runCommand('memhint: Open Profile Report…', { keepOpen: true });
  const input = page.locator('.quick-input-widget .quick-input-box input');
  // The dialog replaces the palette in the same widget and then writes its starting folder into the box:
  // typing before that is overwritten. Wait for the folder path.
  await page.locator('.quick-input-widget .quick-input-title', { hasText: 'Open a memhint profile report' }).waitFor({ timeout: 20_000 });
  await page.waitForFunction(() => {
    const box = document.querySelector('.quick-input-widget .quick-input-box input');
    return box instanceof HTMLInputElement && box.value.startsWith('/');
  }, null, { timeout: 20_000 });
  // The dialog may still rewrite the box (it resolves the folder asynchronously, later on a second
  // opening): type until the path stays, and again if Enter met a box rewritten in between.
  for (let attempt = 0; attempt < 6; attempt++) {
    await input.fill(file);
    await page.waitForTimeout(500);
    if ((await input.inputValue()) !== file) continue;
    await page.keyboard.press('Enter');
    if (await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 5000 }).then(() => true, () => false)) return;
  }
  throw new Error(`the file dialog did not take ${file} (box: ${await input.inputValue()})`);
}

describe('UI: summary sections and predicted vs measured', function () {
  this.timeout(240_000);

  after(async () => {
    await session.wb.setColorTheme('Dark Modern');
  });

  it('opens a measured and a predicted report of one step and shows them side by side', async () => {
    const { wb } = session;
    const measured = { ...fixtures.measuredOfPredicted(), ...pick(fixtures.sectionsReport(), ['dataLoaders', 'noBackwardGraphs', 'kernelWorkspaces', 'timeline']) };
    measured.lines = [...measured.lines, ...fixtures.sectionsReport().lines];
    const files = { measured: path.join(session.workspace, 'measured.memhint.json'), predicted: path.join(session.workspace, 'predicted.memhint.json') };
    fs.writeFileSync(files.measured, JSON.stringify(measured));
    fs.writeFileSync(files.predicted, JSON.stringify(fixtures.predictedReport()));
    await wb.closePanel();
    await wb.runCommand('View: Close All Editors');
    // The prediction first: the panel shows the latest report (the measured one, with its sections) and
    // the prediction of the same step beside it.
    await openReport(files.predicted);
    await openReport(files.measured);
    await wb.runCommand('memhint: Show Memory Summary');
    const frame = await wb.webview(title);
    await frame.locator('#section-compare').waitFor({ timeout: 20_000 });
    assert.match(await frame.locator('#section-compare').innerText(), /Predicted vs measured: train\.py::train_step[\s\S]*peak live tensors\s+3 MiB\s+2\.5 MiB\s+\+512 KiB\s+\+20%/);
    for (const id of ['workers', 'nograd', 'kernels']) assert.equal(await frame.locator(`#section-${id}`).count(), 1, `section ${id}`);
    await frame.locator('#section-kernels summary').click();
    await frame.locator('#table-kernels').waitFor({ timeout: 10_000 });
  });

  for (const [theme, kind] of [['Dark Modern', 'dark'], ['Light Modern', 'light']]) {
    it(`reads in ${theme}: figures, flagged differences, the figure picker`, async () => {
      const { wb } = session;
      await wb.setColorTheme(theme);
      const frame = await wb.webview(title);
      await frame.locator('#section-compare').waitFor({ timeout: 20_000 });
      const samples = await wb.contrast(frame, ['#section-compare h2', '#table-compare-lines tbody td.num', '#table-compare-lines tbody td.bad', 'label.picker select', '#section-workers .bad-text', '#table-workers-0 td.bad', '#table-nograd td.loc', '#section-kernels p.muted']);
      for (const s of samples) assert.ok(s.ratio >= 4.5, `${s.selector} contrast ${s.ratio.toFixed(2)} (${s.color} on ${s.background}) in ${theme}`);
      await frame.locator('#section-compare').evaluate((el) => el.scrollIntoView({ block: 'start' }));
      await wb.screenshot(`summary-compare-${kind}`);
      await frame.locator('#section-workers').scrollIntoViewIfNeeded();
      await wb.screenshot(`summary-sections-${kind}`);
    });
  }

  it('keeps the comparison and the opened sections after a window reload', async function () {
    // As in 30-summary: the browser persists the layout a moment after a change; a reload racing it can
    // come back with no editor at all (not the extension's doing).
    this.retries(2);
    const { wb } = session;
    await session.page.waitForTimeout(3000);
    await wb.reload();
    const frame = await wb.webview(title, { timeoutMs: 60_000 });
    await frame.locator('#section-compare').waitFor({ timeout: 30_000 });
    assert.equal(await frame.locator('#section-kernels > details').evaluate((d) => d.open), true, 'the kernels section stays open');
  });
});

function pick(object, keys) {
  return Object.fromEntries(keys.map((k) => [k, object[k]]));
}
