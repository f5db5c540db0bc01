/* global describe, it, after */
// A step defined in a Jupyter notebook cell, as a person meets it: the "Profile this step" and "Predict
// memory on CUDA" CodeLens above `def train_step` in its cell, and Predict clicked there (setup function
// from another cell) puts predicted hints on that cell's lines, nowhere else. Screenshots in a dark and a
// light theme.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot, testPython } from '../lib/paths.mjs';
import { quickInputTitled, quickPickLabels, setPython } from './settings.mjs';
import { session } from './session.mjs';

const file = 'e2e_notebook.ipynb';
const torch2 = process.env.MEMHINT_TEST_TORCH2_PYTHON ?? path.join(repoRoot, '.venv-torch2', 'bin', 'python');

/**
 * The inline decorations of every cell editor of the notebook: per decorated line, its code and texts
 * (rendered as CSS pseudo-elements, as in Workbench.inlineDecorations) and the cell editor's index.
 */
async function cellDecorations() {
  return session.page.locator('.notebook-editor').first().evaluate((nb) => {
    const out = [];
    [...nb.querySelectorAll('.cell-editor-container .monaco-editor')].forEach((editor, cell) => {
      for (const line of editor.querySelectorAll('.view-lines .view-line')) {
        const texts = [];
        for (const span of line.querySelectorAll('span')) {
          for (const pseudo of ['::before', '::after']) {
            const content = getComputedStyle(span, pseudo).content;
            if (content && content !== 'none' && content !== 'normal' && content !== '""') texts.push(JSON.parse(content.replace(/^'(.*)'$/, '"$1"')));
          }
        }
        if (texts.length > 0) out.push({ cell, code: (line.textContent ?? '').replace(/\u00a0/g, ' ').trim(), texts });
      }
    });
    return out;
  });
}

/** The CodeLens links rendered in the notebook's cell editors, with the cell editor's index. */
async function cellLenses() {
  return session.page.locator('.notebook-editor').first().evaluate((nb) =>
    [...nb.querySelectorAll('.cell-editor-container .monaco-editor')].flatMap((editor, cell) =>
      [...editor.querySelectorAll('.codelens-decoration a')].map((a) => ({ cell, title: (a.textContent ?? '').trim() }))));
}

describe('UI: a notebook step (CodeLens, predict from a cell)', function () {
  this.timeout(300_000);

  after(async () => {
    await session.wb.setColorTheme('Dark Modern');
    await setPython(testPython);
  });

  it('shows Profile this step and Predict memory on CUDA above the step in its cell only', async () => {
    const { wb, page } = session;
    await wb.closePanel();
    await wb.runCommand('View: Close All Editors');
    await wb.openFile(file);
    await page.locator('.notebook-editor .codelens-decoration a', { hasText: 'Predict memory on CUDA' }).first().waitFor({ timeout: 60_000 });
    const lenses = await cellLenses();
    // Cell editors in document order: 0 model, 1 train_step, 2 make_inputs, 3 loop (markdown has none).
    const byTitle = (t) => lenses.filter((l) => l.title.includes(t)).map((l) => l.cell);
    assert.deepEqual(byTitle('Profile this step'), [1], JSON.stringify(lenses));
    assert.deepEqual(byTitle('Predict memory on CUDA'), [1], JSON.stringify(lenses));
    await wb.screenshot('notebook-codelens-dark');
  });

  it('Predict memory on CUDA in the cell: setup from another cell, predicted hints on the step cell', async () => {
    const { wb, page } = session;
    assert.ok(fs.existsSync(torch2), `no torch 2 interpreter at ${torch2}: run bash scripts/setup-torch2.sh or set MEMHINT_TEST_TORCH2_PYTHON`);
    await setPython(torch2);
    await wb.runCommand('View: Close All Editors');
    await wb.openFile(file);
    const lens = page.locator('.notebook-editor .codelens-decoration a', { hasText: 'Predict memory on CUDA' }).first();
    await lens.waitFor({ timeout: 60_000 });
    await lens.click();
    await quickInputTitled(/which function returns train_step\(\)'s arguments/);
    assert.match((await quickPickLabels())[0], /make_inputs\(batch\)/);
    await page.keyboard.press('Enter');
    await quickInputTitled(/what if/);
    await page.keyboard.press('Enter');
    const done = await wb.waitForNotification(/memhint: predicted max reserved/, { timeoutMs: 150_000 });
    assert.match(done, /not measured/);
    let decorated = [];
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await page.waitForTimeout(250)) {
      decorated = await cellDecorations();
      if (decorated.some((d) => d.code.startsWith('out = model(x)'))) break;
    }
    assert.ok(decorated.some((d) => d.code.startsWith('out = model(x)')), JSON.stringify(decorated));
    assert.ok(decorated.every((d) => d.cell === 1 && d.texts.join(' ').startsWith('predicted ')), JSON.stringify(decorated));
    await wb.screenshot('notebook-predict-dark');
    await wb.setColorTheme('Light Modern');
    await wb.screenshot('notebook-predict-light');
  });
});
