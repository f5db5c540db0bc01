/* global describe, it, after */
// The interpreter and failures as a person meets them in a remote window (code-server is one):
// memhint.python from User settings is the one that runs, named in the progress and the status bar
// tooltip; an error in the user's code offers "Go to Line"; a missing torch offers "Select Interpreter…";
// after a failed run the earlier figures say they are stale. Screenshots in a dark and a light theme.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { session } from './session.mjs';

/**
 * Sets memhint.python in the Settings editor (User tab), as a person does, and waits until VS Code wrote
 * it to the User settings file (its configuration service has the value by then).
 */
async function setPythonSetting(value) {
  const { wb, page } = session;
  await wb.runCommand('Preferences: Open User Settings');
  const item = page.locator('.settings-editor .setting-item-contents', { hasText: 'Python interpreter that runs the profiled step' }).first();
  await page.keyboard.type('memhint.python');
  await item.waitFor({ timeout: 20_000 });
  await item.locator('input').first().fill(value);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const written = JSON.parse(fs.readFileSync(session.server.settingsFile, 'utf8'))['memhint.python'];
    if (written === value) break;
    if (Date.now() > deadline) throw new Error(`memhint.python was not written to the User settings (${written})`);
    await page.waitForTimeout(200);
  }
  await closeSettings();
}

/** VS Code 1.139 opens the Settings editor as a modal over the workbench: Escape closes it. */
async function closeSettings() {
  const { page } = session;
  const modal = page.locator('.monaco-modal-editor-block');
  for (let i = 0; i < 3 && (await modal.count()) > 0 && (await modal.first().isVisible()); i++) {
    await page.keyboard.press('Escape');
    await page.waitForTimeout(300);
  }
  if ((await modal.count()) > 0 && (await modal.first().isVisible())) await session.wb.runCommand('View: Close Editor');
}

/** Clicks a button of the notification toast whose message matches `pattern`. */
async function clickNotificationButton(pattern, label) {
  const { page } = session;
  const toast = page.locator('.notifications-toasts .notification-list-item', { has: page.locator('.notification-list-item-message', { hasText: pattern }) }).first();
  await toast.waitFor({ timeout: 60_000 });
  const buttons = (await toast.locator('.monaco-button').allInnerTexts()).map((t) => t.trim());
  assert.ok(buttons.includes(label), `"${label}" among the notification's buttons: ${JSON.stringify(buttons)}`);
  await toast.locator('.monaco-button', { hasText: label }).first().click();
  return buttons;
}

async function profileAt(file, lineStartsWith) {
  const { wb } = session;
  await wb.openFile(file);
  const text = fs.readFileSync(path.join(session.workspace, file), 'utf8').split('\n');
  await wb.gotoLine(text.findIndex((l) => l.startsWith(lineStartsWith)) + 2, 5);
  await wb.runCommand('memhint: Profile This Step');
}

async function statusTooltip() {
  const { page } = session;
  const item = page.locator('.part.statusbar .statusbar-item', { hasText: /peak \d/ }).first();
  await item.hover();
  const hover = page.locator('.monaco-hover:not(.hidden) .hover-contents, .workbench-hover .hover-contents, .monaco-hover-content').last();
  await hover.waitFor({ timeout: 10_000 });
  const text = (await hover.innerText()).trim();
  return text;
}

describe('UI: interpreter and failures', function () {
  this.timeout(240_000);
  const python = process.env.MEMHINT_TEST_PYTHON || '/usr/bin/python3';

  after(async () => {
    await session.wb.setColorTheme('Dark Modern');
    await setPythonSetting(python);
  });

  it('runs memhint.python from User settings in this remote window and names it with its torch', async () => {
    const { wb, page } = session;
    await wb.closePanel();
    await wb.runCommand('View: Close All Editors');
    await profileAt('train.py', 'def train_step(');
    // The progress names the interpreter, where it came from, and its torch (probed before the run).
    const progress = await wb.waitForNotification(/\(memhint\.python\).*torch \d/, { timeoutMs: 90_000 });
    assert.ok(progress.includes(python) || progress.includes(path.basename(python)), progress);
    await wb.screenshot('interpreter-progress-dark');
    await page.locator('.part.statusbar .statusbar-item', { hasText: /peak \d/ }).first().waitFor({ timeout: 150_000 });
    const tooltip = await statusTooltip();
    assert.match(tooltip, /Interpreter: .*\(memhint\.python\) · Python \d+\.\d+\.\d+ · torch \d/, tooltip);
    await wb.screenshot('interpreter-tooltip-dark');
    await page.keyboard.press('Escape');
  });

  it('an error in the user\'s code offers Go to Line, and the earlier figures turn stale', async () => {
    const { wb, page } = session;
    await profileAt('e2e_broken_step.py', 'def train_step(');
    const failure = /memhint: profiling failed: .*e2e_broken_step\.py:8/;
    await wb.waitForNotification(failure, { timeoutMs: 120_000 });
    await wb.screenshot('failure-go-to-line-dark');
    await clickNotificationButton(failure, 'Go to Line');
    await page.locator('.part.statusbar .statusbar-item', { hasText: 'Ln 8,' }).first().waitFor({ timeout: 15_000 });
    // The previous report (train.py) is now marked stale: status bar and hints say so.
    await page.locator('.part.statusbar .statusbar-item', { hasText: /peak \d.*\(stale\)/ }).first().waitFor({ timeout: 15_000 });
    await page.locator('.tabs-container .tab', { hasText: 'train.py' }).first().click();
    await page.locator('.tabs-container .tab.active', { hasText: 'train.py' }).waitFor({ timeout: 15_000 });
    const deadline = Date.now() + 15_000;
    let decorated = [];
    while (Date.now() < deadline) {
      decorated = await wb.inlineDecorations();
      if (decorated.length > 0 && decorated.every((d) => d.texts.join(' ').includes('(stale)'))) break;
      await page.waitForTimeout(250);
    }
    assert.ok(decorated.length > 0 && decorated.every((d) => d.texts.join(' ').includes('(stale)')), JSON.stringify(decorated));
    const tooltip = await statusTooltip();
    assert.match(tooltip, /Stale: the run of .* failed/, tooltip);
    await wb.screenshot('stale-hints-dark');
    await page.keyboard.press('Escape');
    await wb.setColorTheme('Light Modern');
    await wb.screenshot('stale-hints-light');
    await wb.setColorTheme('Dark Modern');
  });

  it('a missing torch offers Select Interpreter…, which opens the interpreter setting', async () => {
    const { wb, page } = session;
    // A venv without system site-packages: a real interpreter that cannot import torch.
    const venv = path.join(path.dirname(session.workspace), 'venv-no-torch');
    if (!fs.existsSync(venv)) execFileSync(python, ['-m', 'venv', '--without-pip', venv]);
    const bare = path.join(venv, 'bin', 'python');
    await setPythonSetting(bare);
    await profileAt('train.py', 'def train_step(');
    const missing = /memhint: profiling failed: torch is not installed for .*venv-no-torch/;
    await wb.waitForNotification(missing, { timeoutMs: 60_000 });
    await wb.setColorTheme('Light Modern');
    await wb.screenshot('torch-missing-light');
    await clickNotificationButton(missing, 'Select Interpreter…');
    // No Python extension here: the Settings editor opens on memhint.python.
    await page.locator('.settings-editor .setting-item-contents', { hasText: 'Python interpreter that runs the profiled step' }).first().waitFor({ timeout: 20_000 });
    await wb.screenshot('select-interpreter-light');
    await closeSettings();
    await wb.setColorTheme('Dark Modern');
  });
});
