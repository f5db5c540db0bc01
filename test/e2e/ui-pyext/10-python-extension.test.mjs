/* global describe, it, before, after */
// memhint with the Python extension installed and memhint.python empty (#15): the Python extension's
// selected interpreter runs the profile and is named with its torch in the progress and the status bar
// tooltip; a new selection applies to the next run and to the lint target without a reload (the
// extension's change event); memhint.python, once set, wins; an extension that answers no environment or
// fails leaves memhint on python3, and the log says why. The Python extension is a test-only stand-in
// (test/e2e/fixtures/python-extension, id ms-python.python) serving the API @vscode/python-extension
// reads; the selection is made from the palette ("Python: Select Interpreter"), as a person does.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../lib/paths.mjs';
import { session } from '../ui/session.mjs';
import { setPython } from '../ui/settings.mjs';

/** Two real interpreters with different torch majors: the torch-2 venv and Debian's python3 (torch 1.13). */
const torch2 = process.env.MEMHINT_TEST_TORCH2_PYTHON ?? path.join(repoRoot, '.venv-torch2/bin/python');
const torch1 = '/usr/bin/python3';

/** What the fake Python extension was asked, one call a line (run.mjs sets the file). */
function fakeCalls() {
  const file = path.join(path.dirname(session.workspace), 'fake-python-calls.log');
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

async function waitFor(what, predicate, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await session.page.waitForTimeout(200);
  }
}

/** "Python: Select Interpreter" from the palette, the path typed into its input box. */
async function selectInterpreter(python) {
  const { wb, page } = session;
  const before = fakeCalls().length;
  await wb.runCommand('Python: Select Interpreter', { keepOpen: true });
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.fill(python);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 15_000 });
  await waitFor(`the selection of ${python}`, () => fakeCalls().slice(before).includes(`updateActiveEnvironmentPath ${python}`));
}

/** What the fake's environments API answers: 'selected', 'no environment' or 'throws'. */
async function setAnswer(answer) {
  const { wb, page } = session;
  const before = fakeCalls().length;
  await wb.runCommand('Fake Python: Set the Answer of the Environments API', { keepOpen: true });
  await page.locator('.quick-input-widget .quick-input-box input').fill(answer);
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: answer }).first().waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
  await waitFor(`the answer "${answer}"`, () => fakeCalls().slice(before).includes(`answer ${answer}`));
}

/**
 * Opens train.py with quick open once its row is the first one: right after another file was open, the
 * list still shows that recent file on top for a moment, and Enter would reopen it.
 */
async function openTrainPy() {
  const { wb, page } = session;
  await wb.focusWorkbench();
  await page.keyboard.press('Control+P');
  await page.locator('.quick-input-widget .quick-input-box input').fill('train.py');
  const first = page.locator('.quick-input-widget .quick-input-list .monaco-list-row').first();
  await waitFor('train.py on top of quick open', async () => ((await first.locator('.label-name').innerText().catch(() => '')).trim() === 'train.py'), 15_000);
  await page.keyboard.press('Enter');
  await page.locator('.tabs-container .tab.active', { hasText: /^train\.py/ }).waitFor({ timeout: 15_000 });
  await page.locator('.editor-instance .monaco-editor .view-lines').filter({ visible: true }).first().waitFor({ timeout: 15_000 });
}

async function profileTrainStep() {
  const { wb } = session;
  await openTrainPy();
  const text = fs.readFileSync(path.join(session.workspace, 'train.py'), 'utf8').split('\n');
  await wb.gotoLine(text.findIndex((l) => l.startsWith('def train_step(')) + 2, 5);
  await wb.runCommand('memhint: Profile This Step');
}

/**
 * The status bar item's tooltip, once the run in progress ended (its progress gone from the toasts and the
 * status bar: the tooltip before that is the previous run's), and once it matches `pattern`.
 */
async function waitForTooltip(pattern, timeoutMs = 150_000) {
  const { page } = session;
  const progress = page.locator('.notifications-toasts .notification-list-item-message, .part.statusbar .statusbar-item', { hasText: /memhint: profiling (?!failed)/ });
  await waitFor('the end of the run', async () => (await progress.count()) === 0, timeoutMs);
  const deadline = Date.now() + timeoutMs;
  let text = '';
  for (;;) {
    const item = page.locator('.part.statusbar .statusbar-item', { hasText: /peak \d/ }).first();
    if (await item.isVisible().catch(() => false)) {
      await item.hover();
      const hover = page.locator('.monaco-hover:not(.hidden) .hover-contents, .workbench-hover .hover-contents, .monaco-hover-content').last();
      text = await hover.waitFor({ timeout: 5_000 }).then(() => hover.innerText(), () => '');
      if (pattern.test(text)) return text.trim();
      await page.mouse.move(0, 0);
    }
    if (Date.now() > deadline) throw new Error(`the status bar tooltip did not match ${pattern}: ${text}`);
    await page.waitForTimeout(1_000);
  }
}

/** memhint's log as written to disk (the channel "memhint: Show Logs" reveals). */
function memhintLog() {
  const found = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/memhint.*\.log$/.test(e.name)) found.push(p);
    }
  };
  walk(path.join(session.server.dirs.userData, 'logs'));
  return found.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
}

/** Rows of the Problems panel that are MH003 on 1-based `line`. */
async function mh003On(line) {
  const rows = await session.wb.problems();
  return rows.filter((r) => /MH003/.test(r.code + r.aria) && new RegExp(`\\bLn ${line}\\b|line ${line}\\b`).test(r.position + r.aria));
}

describe('UI: the Python extension\'s selected interpreter (memhint.python empty)', function () {
  this.timeout(300_000);
  const pinFile = () => path.join(session.workspace, '.vscode', 'settings.json');
  let pin = '';

  before(function () {
    if (!fs.existsSync(torch2)) throw new Error(`no torch-2 interpreter at ${torch2} (set MEMHINT_TEST_TORCH2_PYTHON)`);
    pin = fs.readFileSync(pinFile(), 'utf8');
  });

  after(async () => {
    fs.writeFileSync(pinFile(), pin);
    await session.wb.setColorTheme('Dark Modern');
  });

  it('runs the interpreter selected in the Python extension and names it, with its torch, in the progress and the tooltip', async () => {
    const { wb } = session;
    await selectInterpreter(torch2);
    await wb.closePanel();
    await wb.runCommand('View: Close All Editors');
    const asked = fakeCalls().length;
    await profileTrainStep();
    const progress = await wb.waitForNotification(/\(Python extension\).*torch 2\./, { timeoutMs: 120_000 });
    assert.ok(progress.includes(torch2), progress);
    await wb.screenshot('pyext-progress-dark');
    const tooltip = await waitForTooltip(/Interpreter: .*\(Python extension\) · Python \d+\.\d+\.\d+ · torch 2\./);
    assert.ok(tooltip.includes(torch2), tooltip);
    await wb.screenshot('pyext-tooltip-dark');
    await session.page.keyboard.press('Escape');
    // Asked for the profiled file (the resource that picks a folder's interpreter in a multi-root window).
    const train = `${path.join(session.workspace, 'train.py')}`;
    assert.ok(fakeCalls().slice(asked).some((c) => c.startsWith('getActiveEnvironmentPath ') && c.endsWith(train)), fakeCalls().slice(asked).join('\n'));
  });

  it('a new selection applies to the lint target and the next run without a reload', async () => {
    const { wb } = session;
    // The first lint resolution of this window meets an extension with no environment yet (as one still
    // discovering them): the target is python3's torch (1.13), and memhint must keep listening anyway.
    await setAnswer('no environment');
    // The e2e workspace pins the lint target; without the pin it is the torch of the running interpreter.
    fs.writeFileSync(pinFile(), '{}\n');
    await wb.runCommand('View: Close All Editors');
    await wb.openFile('e2e_loop.py');
    const bareLine = fs.readFileSync(path.join(session.workspace, 'e2e_loop.py'), 'utf8').split('\n').findIndex((l) => l.trim() === 'optimizer.zero_grad()') + 1;
    assert.ok(bareLine > 0, 'e2e_loop.py has a bare optimizer.zero_grad()');
    // Before torch 2.0 a bare zero_grad() zeroes in place (MH003); from 2.0 it sets grads to None.
    await waitFor(`MH003 on the bare zero_grad() (line ${bareLine}) with python3's torch 1.13`, async () => (await mh003On(bareLine)).length === 1, 90_000);
    // The extension finds environments, and the user selects the torch-2 one: no MH003 there any more.
    await setAnswer('selected');
    await selectInterpreter(torch2);
    await waitFor('no MH003 on the bare zero_grad() once torch 2 is selected (the set_to_none=False line keeps one)', async () => {
      const rows = await wb.problems();
      return rows.some((r) => /MH003/.test(r.code + r.aria)) && (await mh003On(bareLine)).length === 0;
    }, 90_000);
    await wb.screenshot('pyext-lint-torch2-dark');
    // And a selection of torch 1.13: the lint and the next profile follow it.
    await selectInterpreter(torch1);
    await waitFor(`MH003 on the bare zero_grad() once torch 1.13 is selected`, async () => (await mh003On(bareLine)).length === 1, 90_000);
    await wb.screenshot('pyext-lint-torch1-dark');
    await wb.closePanel();
    await profileTrainStep();
    const progress = await wb.waitForNotification(/\(Python extension\).*torch 1\.13/, { timeoutMs: 120_000 });
    assert.ok(progress.includes(torch1), progress);
    const tooltip = await waitForTooltip(/Interpreter: .*\(Python extension\) · Python \d+\.\d+\.\d+ · torch 1\.13/);
    assert.ok(tooltip.includes(torch1), tooltip);
    await session.page.keyboard.press('Escape');
  });

  it('memhint.python, once set, wins over the Python extension\'s selection', async () => {
    const { wb } = session;
    await setPython(torch2);
    try {
      await profileTrainStep();
      const progress = await wb.waitForNotification(/\(memhint\.python\).*torch 2\./, { timeoutMs: 120_000 });
      assert.ok(progress.includes(torch2), progress);
      await waitForTooltip(/Interpreter: .*\(memhint\.python\) · Python \d+\.\d+\.\d+ · torch 2\./);
      await session.page.keyboard.press('Escape');
    } finally {
      await setPython('');
    }
  });

  for (const [answer, logged] of [
    ['no environment', /the Python extension's active environment \(.*\) has no executable; using python3/],
    ['throws', /could not ask the Python extension for the interpreter: .*the fake Python extension was told to fail/],
  ]) {
    it(`an extension that ${answer === 'throws' ? 'fails' : 'answers no environment'} leaves memhint on python3, and the log says why`, async () => {
      const { wb } = session;
      await setAnswer(answer);
      try {
        await profileTrainStep();
        const progress = await wb.waitForNotification(/python3 \(default\).*torch 1\.13/, { timeoutMs: 120_000 });
        assert.doesNotMatch(progress, /Python extension/, progress);
        await waitForTooltip(/Interpreter: python3 \(default\) · Python \d+\.\d+\.\d+ · torch 1\.13/);
        await session.page.keyboard.press('Escape');
        if (answer === 'throws') {
          await wb.setColorTheme('Light Modern');
          await wb.screenshot('pyext-fallback-light');
          await wb.setColorTheme('Dark Modern');
        }
        await waitFor(`the log line ${logged}`, () => logged.test(memhintLog()), 10_000);
      } finally {
        await setAnswer('selected');
      }
    });
  }
});
