/* global describe, it */
// Profiling as a person does it: cursor in the step, "memhint: Profile This Step" from the palette, a
// progress notification, then inline hints at the ends of the lines, a hover and the peak in the status bar.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { session } from './session.mjs';

const sizeRe = /\d+(\.\d+)? (B|KiB|MiB|GiB)/;

describe('UI: Profile This Step, inline hints, hover, status bar', function () {
  this.timeout(180_000);

  it('runs from the palette with the cursor in train_step and shows the peak in the status bar', async () => {
    const { wb, page } = session;
    await wb.openFile('train.py');
    const text = fs.readFileSync(path.join(session.workspace, 'train.py'), 'utf8').split('\n');
    const inside = text.findIndex((l) => l.startsWith('def train_step(')) + 2;
    await wb.gotoLine(inside, 5);
    await wb.runCommand('memhint: Profile This Step');
    await wb.waitForNotification(/memhint: profiling train_step/, { timeoutMs: 30_000 });
    const status = page.locator('.part.statusbar .statusbar-item', { hasText: /peak \d/ }).first();
    await status.waitFor({ timeout: 150_000 });
    assert.match(await status.innerText(), new RegExp(`peak ${sizeRe.source}`));
  });

  it('draws the per-line hints at the ends of the step\'s lines', async () => {
    const { wb, page } = session;
    const deadline = Date.now() + 20_000;
    let decorated = [];
    while (Date.now() < deadline) {
      decorated = await wb.inlineDecorations();
      if (decorated.some((d) => d.code.includes('loss.backward()'))) break;
      await page.waitForTimeout(250);
    }
    const backward = decorated.find((d) => d.code.includes('loss.backward()'));
    assert.ok(backward, `a hint on loss.backward(): ${JSON.stringify(decorated)}`);
    assert.match(backward.texts.join(' '), sizeRe);
    const forward = decorated.find((d) => d.code.includes('logits = model(x)'));
    assert.ok(forward, `a hint on the forward line: ${JSON.stringify(decorated)}`);
    await wb.screenshot('hints-dark');
  });

  it('hovering the backward line shows the full figures', async () => {
    const { wb } = session;
    const text = fs.readFileSync(path.join(session.workspace, 'train.py'), 'utf8').split('\n');
    await wb.gotoLine(text.findIndex((l) => l.includes('loss.backward()')) + 1, 9);
    const hover = await wb.hoverAtCursor();
    for (const word of ['memhint', 'allocated', 'freed', 'net', 'peak', 'in backward']) assert.ok(hover.includes(word), `"${word}" in hover:\n${hover}`);
    await wb.screenshot('hover-dark');
    await wb.dismissHover();
  });
});
