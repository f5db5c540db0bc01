/* global describe, it, after */
// Hints as Error Lens / GitLens users expect them: a line run four times per step says `x4` (and a
// per-call peak), "current line" mode shows only the cursor's hint; the summary puts the code second.
// Screenshots in a dark and a light theme.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { session } from './session.mjs';

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
  const written = () => JSON.parse(fs.readFileSync(session.server.settingsFile, 'utf8'))[key];
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
    await wb.screenshot('hints-x4-dark');
    await wb.setColorTheme('Light Modern');
    await wb.screenshot('hints-x4-light');
  });

  it('current-line mode shows only the hint of the cursor line', async () => {
    const { wb } = session;
    await setSetting('memhint.hints.mode', 'Which profiled lines show an end-of-line memory hint', 'currentLine');
    try {
      const text = fs.readFileSync(path.join(session.workspace, file), 'utf8').split('\n');
      const backward = text.findIndex((l) => l.includes('loss.backward()')) + 1;
      await wb.gotoLine(backward, 9);
      const decorated = await decorationsUntil((d) => d.length === 1 && d[0].code.includes('loss.backward()'));
      assert.equal(decorated.length, 1);
      await wb.screenshot('hints-current-line-light');
    } finally {
      await setSetting('memhint.hints.mode', 'Which profiled lines show an end-of-line memory hint', 'all', { isDefault: true });
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
    await wb.screenshot('summary-code-second-light');
    await wb.setColorTheme('Dark Modern');
    await wb.screenshot('summary-code-second-dark');
  });
});
