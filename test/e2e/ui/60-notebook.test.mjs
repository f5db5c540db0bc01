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
 * The inline decorations rendered anywhere in the window (the notebook is the only editor open): per
 * decorated line, its code and texts (CSS pseudo-elements, as in Workbench.inlineDecorations).
 */
async function decoratedLines() {
  return session.page.evaluate(() => {
    const out = [];
    for (const line of document.querySelectorAll('.monaco-editor .view-lines .view-line')) {
      const texts = [];
      for (const span of line.querySelectorAll('span')) {
        for (const pseudo of ['::before', '::after']) {
          const content = getComputedStyle(span, pseudo).content;
          if (content && content !== 'none' && content !== 'normal' && content !== '""') texts.push(JSON.parse(content.replace(/^'(.*)'$/, '"$1"')));
        }
      }
      if (texts.length > 0) out.push({ code: (line.textContent ?? '').replace(/\u00a0/g, ' ').trim(), texts });
    }
    return out;
  });
}

/**
 * The CodeLens links rendered in the notebook, each with the first line of the cell editor it sits in
 * (the editor that holds it, else the one whose box holds it: widgets may render outside their editor).
 */
async function cellLenses() {
  return session.page.evaluate(() => {
    const firstLine = (editor) => [...editor.querySelectorAll('.view-lines .view-line')]
      .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
      .map((l) => (l.textContent ?? '').replace(/\u00a0/g, ' ').trim())[0] ?? '';
    const editors = [...document.querySelectorAll('.monaco-editor')].filter((e) => e.querySelector('.view-lines') && e.getBoundingClientRect().height > 0);
    return [...document.querySelectorAll('.codelens-decoration a')].filter((a) => a.getBoundingClientRect().height > 0).map((a) => {
      const box = a.getBoundingClientRect();
      const middle = box.top + box.height / 2;
      const editor = a.closest('.monaco-editor') ?? editors.find((e) => middle >= e.getBoundingClientRect().top && middle <= e.getBoundingClientRect().bottom);
      return { cell: editor === undefined ? '' : firstLine(editor), title: (a.textContent ?? '').trim() };
    });
  });
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
    await wb.openFile(file, { timeoutMs: 60_000 });
    await page.locator('.notebook-editor .codelens-decoration a', { hasText: 'Predict memory on CUDA' }).filter({ visible: true }).first().waitFor({ timeout: 60_000 });
    const lenses = await cellLenses();
    // Only above the step's cell, whose first line is its def.
    const byTitle = (t) => lenses.filter((l) => l.title.includes(t)).map((l) => l.cell);
    assert.deepEqual(byTitle('Profile this step'), ['def train_step(x, y):'], JSON.stringify(lenses));
    assert.deepEqual(byTitle('Predict memory on CUDA'), ['def train_step(x, y):'], JSON.stringify(lenses));
    await wb.screenshot('notebook-codelens-dark');
  });

  it('Predict memory on CUDA in the cell: setup from another cell, predicted hints on the step cell', async () => {
    const { wb, page } = session;
    assert.ok(fs.existsSync(torch2), `no torch 2 interpreter at ${torch2}: run bash scripts/setup-torch2.sh or set MEMHINT_TEST_TORCH2_PYTHON`);
    await setPython(torch2);
    await wb.runCommand('View: Close All Editors');
    await wb.openFile(file, { timeoutMs: 60_000 });
    const lens = page.locator('.notebook-editor .codelens-decoration a', { hasText: 'Predict memory on CUDA' }).filter({ visible: true }).first();
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
      decorated = await decoratedLines();
      if (decorated.some((d) => d.code.startsWith('out = model(x)'))) break;
    }
    assert.ok(decorated.some((d) => d.code.startsWith('out = model(x)')), JSON.stringify(decorated));
    // Only the step cell's lines carry hints (the loop cell was left out of the prediction), all marked predicted.
    const stepLines = ['def train_step(x, y):', 'opt.zero_grad(set_to_none=True)', 'out = model(x)', 'loss = nn.functional.mse_loss(out, y)', 'loss.backward()', 'opt.step()', 'return loss'];
    assert.ok(decorated.every((d) => stepLines.some((l) => d.code.startsWith(l)) && d.texts.join(' ').startsWith('predicted ')), JSON.stringify(decorated));
    await wb.screenshot('notebook-predict-dark');
    await wb.setColorTheme('Light Modern');
    await wb.screenshot('notebook-predict-light');
  });
});
