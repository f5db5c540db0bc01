// Drives the VS Code workbench in the browser the way a person does: keyboard shortcuts, the command
// palette, quick open, the Problems panel, hovers, code actions, webviews; reads what is rendered.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { screenshotsDir } from './paths.mjs';

const isMac = process.platform === 'darwin';
const mod = isMac ? 'Meta' : 'Control';

export class Workbench {
  /** @param {import('playwright-core').Page} page */
  constructor(page) {
    this.page = page;
  }

  /** Opens the workbench at url and waits until the window is usable and the extension host is up. */
  async open(url, { timeoutMs = 120_000 } = {}) {
    await this.page.goto(url, { waitUntil: 'domcontentloaded', timeout: timeoutMs });
    await this.page.locator('.monaco-workbench .part.statusbar').waitFor({ timeout: timeoutMs });
    await this.page.locator('.monaco-workbench .part.editor').waitFor({ timeout: timeoutMs });
    // The explorer's tree appears once the remote file system is connected.
    await this.page.locator('.explorer-folders-view').first().waitFor({ timeout: timeoutMs });
    // A theme class from an extension (the user settings pick one) means the extension registry is ready.
    await this.page.locator('.monaco-workbench[class*="vscode-theme-"]').waitFor({ timeout: timeoutMs });
  }

  /** Waits until the palette offers `label` (contributed commands appear once the extension is scanned). */
  async waitForCommand(label, { timeoutMs = 60_000 } = {}) {
    await this.focusWorkbench();
    await this.page.keyboard.press('F1');
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ timeout: timeoutMs });
    const row = this.paletteRow(label);
    const deadline = Date.now() + timeoutMs;
    for (let i = 0; ; i++) {
      // The list is computed when the filter changes: alternate the text to make it look again.
      await input.fill(i % 2 ? `>${label} ` : `>${label}`);
      if (await row.isVisible()) break;
      if (Date.now() > deadline) throw new Error(`the palette never offered "${label}"`);
      await this.page.waitForTimeout(250);
    }
    await this.closeQuickInput();
  }

  /** The palette row whose label is exactly `label`. */
  paletteRow(label) {
    return this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', {
      has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(label)}$`) }),
    }).first();
  }

  async quickInputVisible() {
    return this.page.locator('.quick-input-widget').isVisible();
  }

  async closeQuickInput() {
    if (await this.quickInputVisible()) await this.page.keyboard.press('Escape');
    await this.page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
  }

  /**
   * Runs a command from the F1 palette by its label as shown ("memhint: Show Logs"). Picks the row whose
   * label matches exactly, so a prefix of another command's label cannot run the wrong one.
   */
  async runCommand(label, { timeoutMs = 15_000, keepOpen = false } = {}) {
    await this.openPalette({ timeoutMs });
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    await input.fill(`>${label}`);
    const row = this.paletteRow(label);
    await row.waitFor({ timeout: timeoutMs });
    await row.click();
    // A command that opens its own picker (keepOpen) reuses the widget: it does not hide in between.
    if (!keepOpen) await this.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: timeoutMs });
  }

  /**
   * F1. When the key reaches no one (focus in a webview, or nowhere after all editors closed), the
   * active tab (or the empty editor area) is clicked first, as a person would click into the window.
   */
  async openPalette({ timeoutMs = 15_000 } = {}) {
    await this.focusWorkbench();
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    await this.page.keyboard.press('F1');
    if (await input.waitFor({ timeout: 3000 }).then(() => true, () => false)) return;
    const activeTab = this.page.locator('.tabs-container .tab.active').first();
    if (await activeTab.isVisible()) await activeTab.click();
    else await this.page.locator('.part.editor').first().click({ position: { x: 20, y: 20 } });
    await this.page.keyboard.press('F1');
    await input.waitFor({ timeout: timeoutMs });
  }

  /** Lists the command labels the palette offers for a filter text. */
  async paletteLabels(filter) {
    await this.focusWorkbench();
    await this.page.keyboard.press('F1');
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    await input.fill(`>${filter}`);
    await this.page.waitForTimeout(300);
    const labels = await this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row .label-name').allInnerTexts();
    await this.closeQuickInput();
    return labels.map((l) => l.trim());
  }

  /** Opens a workspace file (or notebook) with quick open (Ctrl+P) and waits for its editor tab to be active. */
  async openFile(relativePath, { timeoutMs = 15_000 } = {}) {
    await this.focusWorkbench();
    await this.page.keyboard.press(`${mod}+P`);
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ timeout: timeoutMs });
    await input.fill(relativePath);
    const base = path.basename(relativePath);
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', {
      has: this.page.locator('.label-name', { hasText: base }),
    }).first();
    await row.waitFor({ timeout: timeoutMs });
    await this.page.keyboard.press('Enter');
    await this.page.locator('.tabs-container .tab.active', { hasText: base }).waitFor({ timeout: timeoutMs });
    // A text editor, or a notebook's cell editors (a notebook has no single editor instance).
    // A notebook keeps hidden editors (its markdown cells', a closed notebook's pooled widget): a visible one.
    await this.page.locator('.editor-instance .monaco-editor .view-lines, .notebook-editor .monaco-editor .view-lines').filter({ visible: true }).first().waitFor({ timeout: timeoutMs });
  }

  /** Moves the cursor with Go to Line (Ctrl+G), 1-based line and column as the status bar shows them. */
  async gotoLine(line, column = 1) {
    await this.focusEditor();
    await this.page.keyboard.press(`${mod}+G`);
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor();
    await input.fill(`:${line}:${column}`);
    await this.page.keyboard.press('Enter');
    await this.page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
    await this.page.locator('.statusbar-item', { hasText: `Ln ${line}, Col ${column}` }).first().waitFor({ timeout: 5000 });
  }

  async focusEditor() {
    const editor = this.page.locator('.editor-instance .monaco-editor textarea, .editor-instance .monaco-editor .native-edit-context').first();
    await editor.focus();
  }

  /** Closes what a previous step may have left open (quick input, code-action menu, hover). */
  async focusWorkbench() {
    if (await this.quickInputVisible()) await this.closeQuickInput();
    if (await this.page.locator('.action-widget:not(.action-list-submenu-panel)').first().isVisible()) await this.page.keyboard.press('Escape');
  }

  /** Saves the active editor (Ctrl+S) and waits until its tab is no longer dirty. */
  async save({ timeoutMs = 15_000 } = {}) {
    await this.focusEditor();
    await this.page.keyboard.press(`${mod}+S`);
    await this.page.locator('.tabs-container .tab.active.dirty').waitFor({ state: 'detached', timeout: timeoutMs });
  }

  /** Hides the bottom panel (Problems, Output...) if it is open: more room for editors and webviews. */
  async closePanel() {
    await this.focusWorkbench();
    if (await this.page.locator('.part.panel').isVisible()) {
      await this.page.keyboard.press(`${mod}+J`);
      await this.page.locator('.part.panel').waitFor({ state: 'hidden', timeout: 5000 });
    }
  }

  /** Text of the active editor's visible lines (what is rendered, without injected decorations). */
  async visibleLines() {
    return this.page.locator('.editor-instance .monaco-editor .view-lines').first().evaluate((root) =>
      [...root.querySelectorAll('.view-line')]
        .map((el) => ({ top: parseFloat(/** @type {HTMLElement} */ (el).style.top || '0'), text: el.textContent ?? '' }))
        .sort((a, b) => a.top - b.top)
        .map((l) => l.text.replace(/\u00a0/g, ' ')));
  }

  /**
   * Inline decorations' texts in the active editor, as rendered: VS Code renders `before`/`after`
   * decoration text as CSS pseudo-elements (`content:`) on spans inside the view lines. Returns one
   * entry per decorated line: its 1-based line number (from the gutter), the line's code, the texts, and
   * each text's rendered style (`color` as `rgb(...)`, `fontWeight`, `left`: where the text starts, px;
   * `codeRight`: where the line's code ends, px).
   */
  async inlineDecorations() {
    return this.page.locator('.editor-instance .monaco-editor').first().evaluate((editor) => {
      const lineHeightOf = (el) => parseFloat(/** @type {HTMLElement} */ (el).style.top || '0');
      const numbers = new Map();
      for (const n of editor.querySelectorAll('.margin-view-overlays .line-numbers')) {
        const top = lineHeightOf(n.parentElement);
        numbers.set(top, Number(n.textContent));
      }
      const out = [];
      for (const line of editor.querySelectorAll('.view-lines .view-line')) {
        const texts = [];
        const styles = [];
        for (const span of line.querySelectorAll('span')) {
          for (const pseudo of ['::before', '::after']) {
            const style = getComputedStyle(span, pseudo);
            const content = style.content;
            if (content && content !== 'none' && content !== 'normal' && content !== '""') {
              texts.push(JSON.parse(content.replace(/^'(.*)'$/, '"$1"')));
              // Where the text starts on screen: the (empty) span's left edge plus the pseudo-element's margin.
              const left = span.getBoundingClientRect().left + parseFloat(style.marginLeft || '0');
              const codeRight = Math.max(...[...line.querySelectorAll('span')].filter((x) => x.children.length === 0 && x.textContent).map((x) => x.getBoundingClientRect().right), 0);
              styles.push({ color: style.color, fontWeight: style.fontWeight, left, codeRight });
            }
          }
        }
        if (texts.length === 0) continue;
        const top = lineHeightOf(line);
        out.push({ line: numbers.get(top) ?? -1, code: (line.textContent ?? '').replace(/\u00a0/g, ' '), texts, styles });
      }
      return out.sort((a, b) => a.line - b.line);
    });
  }

  /** Opens the Problems panel (Ctrl+Shift+M) and returns its markers as rendered rows. */
  async problems({ minCount = 0, timeoutMs = 20_000 } = {}) {
    await this.focusWorkbench();
    const panel = this.page.locator('.markers-panel');
    if (!(await panel.isVisible())) await this.page.keyboard.press(`${mod}+Shift+M`);
    await panel.waitFor({ timeout: timeoutMs });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const items = await panel.locator('.monaco-list-row').evaluateAll((els) => els
        .filter((el) => el.querySelector('.marker-message'))
        .map((el) => ({
          message: el.querySelector('.marker-message')?.textContent?.trim() ?? '',
          source: el.querySelector('.marker-source, .details-container .source')?.textContent?.trim() ?? '',
          code: el.querySelector('.marker-code, .details-container .code')?.textContent?.trim() ?? '',
          position: el.querySelector('.marker-line, .details-container .marker-line')?.textContent?.trim() ?? '',
          severity: el.querySelector('.marker-icon')?.className.match(/codicon-(error|warning|info)/)?.[1] ?? '',
          aria: el.getAttribute('aria-label') ?? '',
        })));
      if (items.length >= minCount || Date.now() > deadline) return items;
      await this.page.waitForTimeout(200);
    }
  }

  /** Shows the hover at the cursor (editor.action.showHover) and returns its text. */
  async hoverAtCursor({ timeoutMs = 10_000 } = {}) {
    await this.runCommand('Show or Focus Hover');
    const hover = this.page.locator('.monaco-hover:not(.hidden) .monaco-hover-content, .monaco-resizable-hover .monaco-hover-content').first();
    await hover.waitFor({ timeout: timeoutMs });
    return (await hover.innerText()).trim();
  }

  async dismissHover() {
    await this.page.keyboard.press('Escape');
  }

  /**
   * Waits until VS Code shows the light bulb on the cursor's line: its automatic code-action request for
   * the cursor's position has been answered with actions, so the diagnostics and memhint's fixes for that
   * line are in. A light bulb left from an earlier cursor position is on another line and does not count.
   */
  async lightbulbAtCursor({ timeoutMs = 15_000 } = {}) {
    await this.page.waitForFunction(() => {
      const editor = document.querySelector('.editor-instance .monaco-editor.focused') ?? document.querySelector('.editor-instance .monaco-editor');
      const current = editor?.querySelector('.view-overlays .current-line, .margin-view-overlays .current-line');
      if (!current) return false;
      const line = current.getBoundingClientRect();
      return [...editor.querySelectorAll('[class*="codicon-lightbulb"]')].some((bulb) => {
        const box = bulb.getBoundingClientRect();
        const middle = box.top + box.height / 2;
        return box.height > 0 && middle >= line.top && middle <= line.bottom;
      });
    }, null, { timeout: timeoutMs });
  }

  /** Opens the quick-fix menu at the cursor (Ctrl+.) and returns the offered action titles. */
  async codeActions({ timeoutMs = 10_000 } = {}) {
    await this.focusEditor();
    await this.page.keyboard.press(`${mod}+.`);
    const widget = this.page.locator('.action-widget:not(.action-list-submenu-panel)').first();
    await widget.waitFor({ timeout: timeoutMs });
    await widget.locator('.monaco-list-row.action').first().waitFor({ timeout: timeoutMs });
    return (await widget.locator('.monaco-list-row.action').allInnerTexts()).map((t) => t.trim());
  }

  /** With the quick-fix menu open, applies the action whose title contains `title`. */
  async applyCodeAction(title, { timeoutMs = 10_000 } = {}) {
    const row = this.page.locator('.action-widget .monaco-list-row.action', { hasText: title }).first();
    await row.waitFor({ timeout: timeoutMs });
    await row.click();
    await this.page.locator('.action-widget:not(.action-list-submenu-panel)').first().waitFor({ state: 'hidden', timeout: timeoutMs });
  }

  /** Texts of the visible notification toasts. */
  async notifications() {
    return (await this.page.locator('.notifications-toasts .notification-list-item-message').allInnerTexts()).map((t) => t.trim());
  }

  async waitForNotification(pattern, { timeoutMs = 30_000 } = {}) {
    const toast = this.page.locator('.notifications-toasts .notification-list-item-message', { hasText: pattern }).first();
    await toast.waitFor({ timeout: timeoutMs });
    return (await toast.innerText()).trim();
  }

  /** Status bar items' texts. */
  async statusBarTexts() {
    return (await this.page.locator('.part.statusbar .statusbar-item').allInnerTexts()).map((t) => t.trim()).filter(Boolean);
  }

  /** The content frame of the webview panel whose tab title contains `title`. */
  async webview(title, { timeoutMs = 20_000 } = {}) {
    await this.page.locator('.tabs-container .tab', { hasText: title }).first().waitFor({ timeout: timeoutMs });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const outer of this.page.frames()) {
        if (!outer.url().includes('/webview/') && !outer.url().includes('webview')) continue;
        for (const inner of outer.childFrames()) {
          if (inner.name() === 'active-frame' || inner.url().includes('fake.html') || inner.url().includes('index.html')) {
            const body = await inner.locator('body').count().catch(() => 0);
            if (body && (await inner.evaluate(() => document.body.childElementCount > 0).catch(() => false))) return inner;
          }
        }
      }
      if (Date.now() > deadline) throw new Error(`no webview content frame for "${title}"`);
      await this.page.waitForTimeout(200);
    }
  }

  /**
   * WCAG contrast of text against its effective background, for the first element of each selector
   * in a frame (a webview): walks up to the first opaque background, blends translucent colours.
   */
  async contrast(frame, selectors) {
    return frame.evaluate((sels) => {
      const parse = (c) => {
        const m = c.match(/rgba?\(([^)]+)\)/);
        if (!m) return null;
        const [r, g, b, a = '1'] = m[1].split(/[ ,/]+/).filter(Boolean);
        return { r: Number(r), g: Number(g), b: Number(b), a: Number(a) };
      };
      const over = (top, bottom) => ({
        r: top.r * top.a + bottom.r * (1 - top.a),
        g: top.g * top.a + bottom.g * (1 - top.a),
        b: top.b * top.a + bottom.b * (1 - top.a),
        a: 1,
      });
      const background = (el) => {
        const layers = [];
        for (let e = el; e; e = e.parentElement) {
          const bg = parse(getComputedStyle(e).backgroundColor);
          if (bg && bg.a > 0) {
            layers.push(bg);
            if (bg.a >= 1) break;
          }
        }
        let color = { r: 255, g: 255, b: 255, a: 1 }; // an iframe with no background shows white
        for (const layer of layers.reverse()) color = over(layer, color);
        return color;
      };
      const luminance = ({ r, g, b }) => {
        const lin = (v) => {
          const c = v / 255;
          return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
      };
      const css = (c) => `rgb(${Math.round(c.r)}, ${Math.round(c.g)}, ${Math.round(c.b)})`;
      return sels.map((selector) => {
        const el = document.querySelector(selector);
        if (!el) throw new Error(`no element for ${selector}`);
        const bg = background(el);
        const fg = over(parse(getComputedStyle(el).color) ?? { r: 0, g: 0, b: 0, a: 1 }, bg);
        const [l1, l2] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
        return { selector, ratio: (l1 + 0.05) / (l2 + 0.05), color: css(fg), background: css(bg), backgroundLuminance: luminance(bg) };
      });
    }, selectors);
  }

  /** Reloads the window (as "Developer: Reload Window" does) and waits until it is usable again. */
  async reload({ timeoutMs = 120_000 } = {}) {
    await this.page.reload({ waitUntil: 'domcontentloaded', timeout: timeoutMs });
    await this.page.locator('.monaco-workbench .part.statusbar').waitFor({ timeout: timeoutMs });
    await this.page.locator('.monaco-workbench[class*="vscode-theme-"]').waitFor({ timeout: timeoutMs });
  }

  /**
   * Switches the color theme through the palette, as a person does, and waits until the workbench wears
   * it (the theme's id, e.g. "Light Modern" -> ...light_modern-json, becomes a class of the workbench).
   */
  async setColorTheme(themeLabel, { timeoutMs = 20_000 } = {}) {
    const themeClass = themeLabel.toLowerCase().replace(/\s+/g, '_');
    const workbench = this.page.locator('.monaco-workbench');
    if ((await workbench.getAttribute('class'))?.includes(themeClass)) return;
    await this.runCommand('Preferences: Color Theme', { keepOpen: true });
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ timeout: timeoutMs });
    // The theme picker replaces the palette in the same widget: wait until the palette's text is gone.
    await this.page.waitForFunction(() => {
      const box = document.querySelector('.quick-input-widget .quick-input-box input');
      return box instanceof HTMLInputElement && !box.value.startsWith('>');
    }, null, { timeout: timeoutMs });
    await input.fill(themeLabel);
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row.focused', {
      has: this.page.locator('.label-name', { hasText: new RegExp(`^${escapeRegExp(themeLabel)}$`) }),
    });
    await row.waitFor({ timeout: timeoutMs });
    await this.page.keyboard.press('Enter');
    await this.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: timeoutMs });
    await this.page.locator(`.monaco-workbench[class*="${themeClass}"]`).waitFor({ timeout: timeoutMs });
    // The colours follow the class: wait until the editor area's background is the new theme's.
    await this.page.waitForFunction(() => {
      const wb = document.querySelector('.monaco-workbench');
      const bg = getComputedStyle(document.querySelector('.part.editor') ?? document.body).backgroundColor;
      const [r, g, b] = (bg.match(/\d+(\.\d+)?/g) ?? ['0', '0', '0']).map(Number);
      const dark = (r + g + b) / 3 < 128;
      return wb?.classList.contains('vs-dark') || wb?.classList.contains('hc-black') ? dark : !dark;
    }, null, { timeout: timeoutMs });
  }

  /** Saves a screenshot under .e2e/screenshots/<name>.png and returns its path. */
  async screenshot(name) {
    fs.mkdirSync(screenshotsDir, { recursive: true });
    const file = path.join(screenshotsDir, `${name}.png`);
    // Two animation frames: what the DOM says is painted before the picture is taken.
    // Webviews are frames of their own (painted separately): each gets its two frames too.
    await Promise.all(this.page.frames().map((f) =>
      f.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))).catch(() => {})));
    await this.page.screenshot({ path: file });
    return file;
  }
}

export function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
