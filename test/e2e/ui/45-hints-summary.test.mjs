/* global describe, it, after */
// Hints as Error Lens / GitLens users expect them: a line run four times per step says `x4` (and a
// per-call peak), "current line" mode shows only the cursor's hint; the summary puts the code second.
// Screenshots in a dark and a light theme.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { session } from './session.mjs';
import { setNumberSetting, userSetting } from './settings.mjs';

const file = 'e2e_inner_loop.py';

/** Sets a memhint setting in the Settings editor (User tab) and waits until VS Code wrote it. */
async function setSetting(key, label, value, { isDefault = false } = {}) {
  const { wb, page } = session;
  await wb.runCommand('Preferences: Open User Settings');
  await page.keyboard.type(key);
  const item = page.locator('.settings-editor .setting-item-contents', { hasText: label }).first();
  await item.waitFor({ timeout: 20_000 });
  await item.locator('select').first().selectOption(value);
  const deadline = Date.now() + 20_000;
  // Choosing the default value removes the key from settings.json.
  const written = () => userSetting(key);
  while (isDefault ? written() !== undefined : written() !== value) {
    if (Date.now() > deadline) throw new Error(`${key} was not written to the User settings`);
    await page.waitForTimeout(200);
  }
  for (let i = 0; i < 3 && (await page.locator('.monaco-modal-editor-block').isVisible().catch(() => false)); i++) {
    await page.keyboard.press('Escape');
    await page.waitForTimeout(300);
  }
}

async function decorationsUntil(predicate, timeoutMs = 20_000) {
  const { wb, page } = session;
  const deadline = Date.now() + timeoutMs;
  let decorated = [];
  while (Date.now() < deadline) {
    decorated = await wb.inlineDecorations();
    if (predicate(decorated)) return decorated;
    await page.waitForTimeout(250);
  }
  throw new Error(`decorations never matched: ${JSON.stringify(decorated)}`);
}

/**
 * The active editor's text area as rendered: its right edge (the minimap's left, or the scrollbar's), its
 * width in columns, and `past(decorated)`: by how many px each of a line's hints runs past that edge.
 */
async function editorEdge() {
  const measured = await session.page.locator('.editor-instance .monaco-editor').first().evaluate((editor) => {
    // A monospace font: every character of the code is one column wide.
    const span = [...editor.querySelectorAll('.view-line span span')].find((x) => (x.textContent ?? '').length > 8);
    const charWidth = span.getBoundingClientRect().width / span.textContent.length;
    const lines = editor.querySelector('.view-lines').getBoundingClientRect();
    const guard = editor.querySelector('.overflow-guard').getBoundingClientRect();
    const scrollbar = editor.querySelector('.scrollbar.vertical')?.getBoundingClientRect().width ?? 0;
    // The text ends where the minimap starts (on the right by default), else at the vertical scrollbar.
    const minimap = editor.querySelector('.minimap')?.getBoundingClientRect();
    const right = minimap && minimap.width > 0 ? Math.min(minimap.left, guard.right - scrollbar) : guard.right - scrollbar;
    return { charWidth, right, columns: Math.floor((right - lines.left) / charWidth) };
  });
  const past = (d) => d.styles.map((st, i) => st.left + d.texts[i].length * measured.charWidth - measured.right).filter((over) => over > 1);
  return { columns: measured.columns, past };
}

describe('UI: hints modes and call counts, summary layout', function () {
  this.timeout(240_000);

  after(async () => {
    await session.wb.setColorTheme('Dark Modern');
  });

  it('a line run four times per step says x4 with a per-call peak', async () => {
    const { wb, page } = session;
    await wb.closePanel();
    await wb.runCommand('View: Close All Editors');
    await wb.openFile(file);
    const text = fs.readFileSync(path.join(session.workspace, file), 'utf8').split('\n');
    await wb.gotoLine(text.findIndex((l) => l.startsWith('def train_step(')) + 2, 5);
    await wb.runCommand('memhint: Profile This Step');
    await page.locator('.part.statusbar .statusbar-item', { hasText: /peak \d[^(]*$/ }).first().waitFor({ timeout: 150_000 });
    const decorated = await decorationsUntil((d) => d.some((x) => x.code.includes('h = torch.relu(layer(h))')));
    const loop = decorated.find((d) => d.code.includes('h = torch.relu(layer(h))'));
    assert.match(loop.texts.join(' '), /^x4 .*peak \d+(\.\d+)? (B|KiB|MiB)\/call/, JSON.stringify(loop));
    // Measured hints wear the size colours (Dark Modern defaults of memhint.hint.*), never the predicted one.
    const sizeColours = ['rgb(139, 148, 158)', 'rgb(210, 153, 34)', 'rgb(248, 81, 73)'];
    for (const d of decorated) for (const st of d.styles) assert.ok(sizeColours.includes(st.color), `${d.code}: ${st.color}`);
    await wb.screenshot('hints-x4-dark');
    await wb.setColorTheme('Light Modern');
    await wb.screenshot('hints-x4-light');
  });

  it('current-line mode shows only the hint of the cursor line, above-threshold mode only medium and large ones', async () => {
    const { wb } = session;
    await setSetting('memhint.hints.mode', 'Which profiled lines show an end-of-line memory hint', 'currentLine');
    try {
      const text = fs.readFileSync(path.join(session.workspace, file), 'utf8').split('\n');
      const backward = text.findIndex((l) => l.includes('loss.backward()')) + 1;
      await wb.gotoLine(backward, 9);
      const decorated = await decorationsUntil((d) => d.length === 1 && d[0].code.includes('loss.backward()'));
      assert.equal(decorated.length, 1);
      await wb.screenshot('hints-current-line-light');
      // Above-threshold mode: this small step's lines are all under the medium threshold (16 MiB), so
      // none keeps a hint, the cursor's included.
      await setSetting('memhint.hints.mode', 'Which profiled lines show an end-of-line memory hint', 'aboveThreshold');
      await wb.gotoLine(backward, 9);
      await decorationsUntil((d) => d.length === 0);
    } finally {
      await setSetting('memhint.hints.mode', 'Which profiled lines show an end-of-line memory hint', 'all', { isDefault: true });
    }
  });

  it('alignColumn starts every hint at one column and maxLength ends long ones with an ellipsis', async () => {
    const { wb } = session;
    const align = ['memhint.hints.alignColumn', 'Start hints at this column'];
    const maxLength = ['memhint.hints.maxLength', 'Longer hints end with an ellipsis'];
    await setNumberSetting(...align, 70);
    await setNumberSetting(...maxLength, 14);
    await wb.openFile(file);
    try {
      const decorated = await decorationsUntil((d) => d.length > 1 && d.every((x) => x.texts.every((t) => t.length <= 14)) && d.some((x) => x.texts.some((t) => t.endsWith('…'))), 30_000);
      const lefts = decorated.filter((d) => d.code.length < 68).map((d) => d.styles[0].left);
      assert.ok(lefts.length > 1, JSON.stringify(decorated));
      for (const left of lefts) assert.ok(Math.abs(left - lefts[0]) <= 1, `hints start at one column: ${JSON.stringify(lefts)}`);
      // Column 70 of a monospace editor: well right of the longest short line's end.
      const longest = Math.max(...decorated.filter((d) => d.code.length < 68).map((d) => d.styles[0].codeRight));
      assert.ok(lefts[0] > longest + 10, `aligned right of the code (${lefts[0]} vs ${longest})`);
      await wb.screenshot('hints-aligned-light');
    } finally {
      await setNumberSetting(...align, 0, { isDefault: true });
      await setNumberSetting(...maxLength, 80, { isDefault: true });
      await wb.openFile(file);
    }
    await decorationsUntil((d) => d.some((x) => x.texts.some((t) => t.length > 14)), 30_000);
  });

  it('maxColumn keeps every hint inside a narrow editor, which VS Code cannot measure for the extension', async () => {
    const { wb, page } = session;
    const maxColumn = ['memhint.hints.maxColumn', 'End every hint by this column'];
    await page.setViewportSize({ width: 820, height: 900 });
    await wb.openFile(file);
    try {
      const { columns, past } = await editorEdge();
      // Without a column limit, a hint runs past the editor's edge in so narrow a window.
      await decorationsUntil((d) => d.some((x) => past(x).length > 0), 30_000);
      await setNumberSetting(...maxColumn, columns);
      await wb.openFile(file);
      const decorated = await decorationsUntil((d) => d.length > 1 && d.every((x) => past(x).length === 0), 30_000);
      assert.ok(decorated.some((d) => d.texts.some((t) => t.endsWith('…'))), `some hint was shortened: ${JSON.stringify(decorated)}`);
      await wb.screenshot('hints-max-column-narrow-light');
    } finally {
      await setNumberSetting(...maxColumn, 0, { isDefault: true });
      await page.setViewportSize({ width: 1400, height: 900 });
      await wb.openFile(file);
    }
  });

  it('with editor.wordWrap "bounded", hints end by editor.wordWrapColumn (maxColumn left at 0)', async () => {
    const { wb, page } = session;
    const wrap = ['editor.wordWrap', 'Controls how lines should wrap'];
    const wrapColumn = ['editor.wordWrapColumn', 'Controls the wrapping column'];
    await page.setViewportSize({ width: 820, height: 900 });
    await wb.openFile(file);
    try {
      const { columns, past } = await editorEdge();
      await decorationsUntil((d) => d.some((x) => past(x).length > 0), 30_000);
      await setNumberSetting(...wrapColumn, columns);
      await setSetting(...wrap, 'bounded');
      await wb.openFile(file);
      const decorated = await decorationsUntil((d) => d.length > 1 && d.every((x) => past(x).length === 0), 30_000);
      assert.ok(decorated.some((d) => d.texts.some((t) => t.endsWith('…'))), `some hint was shortened: ${JSON.stringify(decorated)}`);
    } finally {
      await setSetting(...wrap, 'off', { isDefault: true });
      await setNumberSetting(...wrapColumn, 80, { isDefault: true });
      await page.setViewportSize({ width: 1400, height: 900 });
      await wb.openFile(file);
    }
  });

  it('the summary shows the code second and hides rows without memory', async () => {
    const { wb } = session;
    await wb.runCommand('memhint: Show Memory Summary');
    const frame = await wb.webview('memhint: Memory Summary');
    await frame.locator('table.lines tbody tr').first().waitFor({ timeout: 20_000 });
    const headers = (await frame.locator('table.lines thead th').allInnerTexts()).map((t) => t.trim());
    assert.equal(headers[1], 'Code', headers.join(' | '));
    const code = frame.locator('table.lines tbody tr td.code').first();
    const box = await code.boundingBox();
    // boundingBox is in page coordinates: the code must start well inside the window, not off its edge.
    assert.ok(box && box.x + 40 < session.page.viewportSize().width, `the code column is on screen (${JSON.stringify(box)})`);
    // Rows with no calls or no memory stay behind the toggle; every row shown by default has memory.
    const shown = await frame.locator('table.lines tbody tr').count();
    await frame.locator('#show-all-rows').check();
    const all = await frame.locator('table.lines tbody tr').count();
    assert.ok(all >= shown && shown > 0, `${shown} rows shown of ${all}`);
    await frame.locator('#show-all-rows').uncheck();
    await wb.screenshot('summary-code-second-light');
    await wb.setColorTheme('Dark Modern');
    await wb.screenshot('summary-code-second-dark');
  });

  it('the summary folds the notes, keeps its place on sort and export, and exports to the home folder', async () => {
    const { wb, page } = session;
    await wb.runCommand('memhint: Show Memory Summary');
    const frame = await wb.webview('memhint: Memory Summary');
    await frame.locator('table.lines tbody tr').first().waitFor({ timeout: 20_000 });
    if ((await frame.locator('details.notes').count()) > 0) assert.equal(await frame.locator('details.notes').getAttribute('open'), null, 'the notes start folded');
    const scrollY = () => frame.evaluate(() => window.scrollY);
    await frame.evaluate(() => window.scrollTo(0, document.querySelector('table.lines').getBoundingClientRect().top + window.scrollY - 20));
    const before = await scrollY();
    assert.ok(before > 50, `the summary scrolls (${before})`);
    // Clicked from the page: Playwright's own click would first scroll the button into view.
    await frame.evaluate(() => document.querySelector('button.sort[data-key="location"]').click());
    await page.waitForTimeout(500);
    assert.ok(Math.abs((await scrollY()) - before) <= 1, `sorting keeps the place (${before} -> ${await scrollY()})`);
    await frame.evaluate(() => document.querySelector('#export-json').click());
    // code-server's save dialog is VS Code's own (a quick input holding the path it starts from).
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ timeout: 20_000 });
    const deadline = Date.now() + 10_000;
    let start = '';
    while (Date.now() < deadline && !/\.memhint\.json$/.test(start)) {
      start = await input.inputValue();
      await page.waitForTimeout(200);
    }
    const home = session.server.dirs.home;
    assert.ok(start.startsWith(home + '/') && !start.startsWith(session.workspace), `the export starts in the home folder: ${start}`);
    await wb.screenshot('summary-export-dialog-dark');
    await page.keyboard.press('Escape');
    await page.waitForTimeout(500);
    assert.ok(Math.abs((await scrollY()) - before) <= 1, `exporting keeps the place (${before} -> ${await scrollY()})`);
  });
});
