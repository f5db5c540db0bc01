// Helpers the UI tests share for settings and quick inputs: a setting typed into the Settings editor as a
// person does (and waited for in settings.json), the quick input's title and rows.
import * as fs from 'node:fs';
import { session } from './session.mjs';

/** Not yet readable: VS Code rewrites settings.json in place, so a read can catch it empty or half written. */
const unreadable = Symbol('unreadable');

/** The value of `key` in the User settings.json, or `unreadable` while VS Code is writing the file. */
export function userSetting(key) {
  try {
    return JSON.parse(fs.readFileSync(session.server.settingsFile, 'utf8'))[key];
  } catch {
    return unreadable;
  }
}

/** Sets a text setting in the Settings editor (User tab), as a person does, and waits until it is written. */
export async function setTextSetting(key, label, value) {
  const { wb, page } = session;
  await wb.runCommand('Preferences: Open User Settings');
  await page.keyboard.type(key);
  const item = page.locator('.settings-editor .setting-item-contents', { hasText: label }).first();
  await item.waitFor({ timeout: 20_000 });
  await item.locator('input').first().fill(value);
  const deadline = Date.now() + 20_000;
  const written = () => userSetting(key) ?? '';
  while (written() !== value) {
    if (Date.now() > deadline) throw new Error(`${key} was not written to the User settings (${written()})`);
    await page.waitForTimeout(200);
  }
  for (let i = 0; i < 3 && (await page.locator('.monaco-modal-editor-block').isVisible().catch(() => false)); i++) {
    await page.keyboard.press('Escape');
    await page.waitForTimeout(300);
  }
}

/**
 * Sets a number setting in the Settings editor (User tab) as a person types it, and waits until VS Code
 * wrote it (`isDefault`: the default value, which VS Code removes from settings.json instead).
 */
export async function setNumberSetting(key, label, value, { isDefault = false } = {}) {
  const { wb, page } = session;
  await wb.runCommand('Preferences: Open User Settings');
  await page.keyboard.type(key);
  const item = page.locator('.settings-editor .setting-item-contents', { hasText: label }).first();
  await item.waitFor({ timeout: 20_000 });
  await item.locator('input').first().fill(String(value));
  const deadline = Date.now() + 20_000;
  const written = () => userSetting(key);
  while (isDefault ? written() !== undefined && written() !== value : written() !== value) {
    if (Date.now() > deadline) throw new Error(`${key} was not written to the User settings (${written()})`);
    await page.waitForTimeout(200);
  }
  // The Settings editor opens as a modal editor in VS Code 1.139: Escape closes it.
  for (let i = 0; i < 3 && (await page.locator('.monaco-modal-editor-block').isVisible().catch(() => false)); i++) {
    await page.keyboard.press('Escape');
    await page.waitForTimeout(300);
  }
}

export const setPython = (value) => setTextSetting('memhint.python', 'Python interpreter that runs the profiled step', value);

/** The quick input's title once it shows `pattern`. */
export async function quickInputTitled(pattern) {
  const { page } = session;
  const title = page.locator('.quick-input-widget .quick-input-title', { hasText: pattern }).first();
  await title.waitFor({ timeout: 30_000 });
  return (await title.innerText()).trim();
}

export async function quickPickLabels() {
  const { page } = session;
  return (await page.locator('.quick-input-widget .quick-input-list .monaco-list-row .label-name').allInnerTexts()).map((t) => t.trim());
}
