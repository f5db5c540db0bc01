/* global describe, it */
// "Profile this loop" on an inline training loop (no step function): the CodeLens sits on the inner `for`
// (the loop that reaches backward() and .step(), not the epoch loop), each iteration is one step, and
// the summary shows the per-module tree. Screenshots in a dark theme.
import * as assert from 'node:assert/strict';
import { session } from './session.mjs';

const file = 'e2e_inline_loop.py';

describe('UI: profile an inline training loop', function () {
  this.timeout(240_000);

  it('offers "Profile this loop" on the training loop only and profiles its iterations as steps', async () => {
    const { wb, page } = session;
    await wb.closePanel();
    await wb.runCommand('View: Close All Editors');
    await wb.openFile(file);
    const lenses = page.locator('.contentWidgets .codelens-decoration a', { hasText: 'Profile this loop' });
    await lenses.first().waitFor({ timeout: 30_000 });
    assert.equal(await lenses.count(), 1, 'one training loop: the batch loop, not the epoch loop');
    // The lens is drawn above the inner `for` (line 11), not the epoch loop (line 10). VS Code redraws the
    // lenses when the first lint of the file lands (a node read in between is gone: no box), so both
    // boxes are read once both are on screen.
    let lens = null;
    let inner = null;
    for (const deadline = Date.now() + 20_000; (lens === null || inner === null) && Date.now() < deadline; await page.waitForTimeout(200)) {
      lens = await lenses.first().boundingBox({ timeout: 2_000 }).catch(() => null);
      inner = await page.locator('.editor-instance .view-line', { hasText: 'for it in range(8):' }).first().boundingBox({ timeout: 2_000 }).catch(() => null);
    }
    assert.ok(lens !== null && inner !== null, 'the lens and the loop are on screen');
    const lensTop = lens.y;
    assert.ok(lensTop < inner.y && inner.y - lensTop < 40, `lens at ${lensTop}, inner loop at ${inner.y}`);
    await lenses.first().click();
    await page.locator('.part.statusbar .statusbar-item', { hasText: /peak \d/ }).first().waitFor({ timeout: 150_000 });
    const deadline = Date.now() + 20_000;
    let decorated = [];
    while (Date.now() < deadline) {
      decorated = await wb.inlineDecorations();
      if (decorated.some((d) => d.code.includes('loss = model(x)'))) break;
      await page.waitForTimeout(250);
    }
    assert.ok(decorated.some((d) => d.code.includes('loss = model(x)')), JSON.stringify(decorated));
    await wb.screenshot('loop-hints-dark');
    await wb.runCommand('memhint: Show Memory Summary');
    const frame = await wb.webview('memhint: Memory Summary');
    await frame.locator('h1', { hasText: 'e2e_inline_loop.py' }).waitFor({ timeout: 20_000 });
    assert.equal(await frame.locator('#section-lines').count(), 1);
    const steps = await frame.locator('.stat', { hasText: 'profiled steps' }).locator('.stat-value').innerText();
    assert.equal(steps.trim(), '2', 'memhint.profile.steps is 2 in the UI tests: two iterations measured');
    // The summary re-renders once more when the stored report settles; a node caught mid-render is
    // replaced ("not attached to the DOM"), so the scroll is retried on the new one.
    for (let attempt = 0; ; attempt += 1) {
      try {
        await frame.locator('#section-modules').scrollIntoViewIfNeeded({ timeout: 5_000 });
        break;
      } catch (error) {
        if (attempt >= 4) throw error;
        await page.waitForTimeout(500);
      }
    }
    assert.deepEqual((await frame.locator('table.modules tbody td.module-name code').allInnerTexts()).slice(0, 1), ['Sequential']);
    await wb.screenshot('loop-modules-dark');
  });
});
