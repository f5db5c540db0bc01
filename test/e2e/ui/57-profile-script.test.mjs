/* global describe, it */
// "Profile this loop" on a loop in a module that is not run itself (#14, minGPT's mingpt/trainer.py): with
// memhint.profile.script set, the CodeLens runs that script, which imports the module and drives the loop,
// and each iteration of the loop is a step (as `memhint profile SCRIPT --loop FILE:LINE`).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { session } from './session.mjs';
import { setTextSetting } from './settings.mjs';

const module_ = 'e2e_trainer.py';
const script = 'e2e_run_trainer.py';
const setScript = (value) => setTextSetting('memhint.profile.script', 'The script that runs your training', value);

describe('UI: profile a loop in a module through memhint.profile.script', function () {
  this.timeout(240_000);

  it('runs the script from memhint.profile.script and measures the loop of the module it imports', async () => {
    const { wb, page } = session;
    const lines = fs.readFileSync(path.join(session.workspace, module_), 'utf8').split('\n');
    const loopLine = lines.findIndex((l) => l.includes('for x, y in batches:')) + 1;
    await setScript(script);
    try {
      await wb.closePanel();
      await wb.runCommand('View: Close All Editors');
      await wb.openFile(module_);
      const lenses = page.locator('.contentWidgets .codelens-decoration a', { hasText: 'Profile this loop' });
      await lenses.first().waitFor({ timeout: 30_000 });
      assert.equal(await lenses.count(), 1, 'one lens: the loop in fit()');
      await lenses.first().click();
      // The progress names the loop in the module, not the script that runs it.
      await wb.waitForNotification(new RegExp(`memhint: profiling the loop at ${module_.replace('.', '\\.')}:${loopLine}`), { timeoutMs: 30_000 });
      // Hints on the module's lines can only come from this run: the script imported it and ran its loop.
      const deadline = Date.now() + 150_000;
      let decorated = [];
      while (Date.now() < deadline) {
        decorated = await wb.inlineDecorations();
        if (decorated.some((d) => d.code.includes('loss = F.mse_loss(model(x), y)'))) break;
        await page.waitForTimeout(500);
      }
      const forward = decorated.find((d) => d.code.includes('loss = F.mse_loss(model(x), y)'));
      assert.ok(forward, `a hint on the loop's forward line: ${JSON.stringify(decorated)}`);
      assert.match(forward.texts.join(' '), /\d+(\.\d+)? (B|KiB|MiB)/);
      await wb.screenshot('profile-script-hints-dark');
      await wb.runCommand('memhint: Show Memory Summary');
      const frame = await wb.webview('memhint: Memory Summary');
      // The report is the script's run: its title names the script and the module's loop, and two
      // iterations were measured.
      const heading = frame.locator('h1', { hasText: script });
      await heading.waitFor({ timeout: 20_000 });
      assert.equal((await heading.innerText()).trim(), `${script} — loop at ${module_}:${loopLine}`);
      const steps = await frame.locator('.stat', { hasText: 'profiled steps' }).locator('.stat-value').innerText();
      assert.equal(steps.trim(), '2', 'memhint.profile.steps is 2 in the UI tests: two iterations of the loop');
    } finally {
      await setScript('');
    }
  });
});
