/* global describe, it, after */
// Lint and profile as one loop (#15): after a profile, what only the measurement saw appears in the Problems
// panel on the line that holds the memory (a list that keeps each step's graph, a forward pass whose graph
// no backward() uses) although no lint rule fired there, and the lint finding the measurement confirms
// (MH001 on an eval-mode forward) carries what was measured. Then the summary's chart, seen in the
// webview at 1536 px and in a narrow window: no axis or step label is cut at the chart's edge.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { session } from './session.mjs';

const file = 'e2e_measured.py';

/** 1-based line of the fixture's first statement that starts with `text` (the docstring quotes some). */
function lineOf(text) {
  const lines = fs.readFileSync(path.join(session.workspace, file), 'utf8').split('\n');
  const i = lines.findIndex((l) => l.trim().startsWith(text));
  assert.ok(i >= 0, `${text} in ${file}`);
  return i + 1;
}

/** The Problems panel's rows once `predicate` holds for them (the panel re-renders as markers change). */
async function problemsUntil(predicate, what, timeoutMs = 60_000) {
  const { wb, page } = session;
  const deadline = Date.now() + timeoutMs;
  let rows = [];
  while (Date.now() < deadline) {
    rows = await wb.problems();
    if (predicate(rows)) return rows;
    await page.waitForTimeout(300);
  }
  throw new Error(`the Problems panel never showed ${what}: ${JSON.stringify(rows, null, 1)}`);
}

/** The 1-based line of a Problems row ("[Ln 23, Col 5]", spaced with no-break spaces). */
const lineOfRow = (row) => Number(/Ln\s*(\d+)/.exec(row.position)?.[1] ?? -1);

/** The Problems row on `line` of the fixture whose message matches `pattern`. */
const at = (rows, line, pattern) => rows.find((r) => lineOfRow(r) === line && pattern.test(r.message));

describe('UI: measured findings as diagnostics, the summary chart', function () {
  this.timeout(240_000);

  after(async () => {
    await session.page.setViewportSize({ width: 1400, height: 900 });
  });

  it('after a profile, the Problems panel shows the measured leak and unused graph where no rule fired, and the confirmed MH001', async () => {
    const { wb } = session;
    await wb.closePanel();
    await wb.runCommand('View: Close All Editors');
    await wb.openFile(file);
    const append = lineOf('history.append(loss)');
    const probe = lineOf('probe_score = score(model, probe)');
    const evalForward = lineOf('val_out = model(val_x)');
    // Before the profile: the linter's one finding, nothing on the two lines only a measurement explains.
    let rows = await problemsUntil((r) => at(r, evalForward, /runs after `model\.eval\(\)`/) !== undefined, 'MH001 from the linter');
    assert.equal(at(rows, append, /./), undefined, 'no lint finding on the append');
    assert.equal(at(rows, probe, /./), undefined, 'no lint finding on the probe forward');
    assert.doesNotMatch(at(rows, evalForward, /MH001|eval/).message, /Measured by memhint/);

    await wb.closePanel();
    await wb.gotoLine(lineOf('def train_step(') + 1, 5);
    await wb.runCommand('memhint: Profile This Step');
    await wb.waitForNotification(/memhint: profiling train_step/, { timeoutMs: 30_000 });
    rows = await problemsUntil((r) => at(r, append, /Measured by memhint profile/) && at(r, probe, /Measured by memhint profile/) && at(r, evalForward, /Measured by memhint profile/), 'the measured findings', 150_000);
    const leak = at(rows, append, /Measured by memhint profile/);
    // The leak is held by `history`: the diagnostic sits on the line that stores it and names where the
    // memory was allocated, with the autograd graph it keeps first (not "4 B per step" of a scalar).
    assert.match(leak.message, /^What line \d+ allocates \(`loss = F\.mse_loss\(model\(x\), y\)`\) keeps \d+ autograd graph nodes? per step alive/, leak.message);
    assert.match(leak.message, /held by `history`/);
    assert.match(leak.code + leak.aria, /measured/);
    const graph = at(rows, probe, /Measured by memhint profile/);
    assert.match(graph.message, /^This forward pass builds an autograd graph that no backward\(\) uses: \d+ autograd nodes? and \d+(\.\d+)? (KiB|MiB) of saved activations per step/, graph.message);
    for (const r of [leak, graph]) assert.match(r.aria, /^Warning:/, `${r.position} is a warning`);
    // The lint finding the measurement confirms keeps its code and gains the figures; no second diagnostic.
    const confirmed = at(rows, evalForward, /Measured by memhint profile/);
    assert.match(confirmed.code + confirmed.aria, /MH001/);
    assert.match(confirmed.message, /runs after `model\.eval\(\)`.*Measured by memhint profile: its graph is never backpropagated and keeps \d+ autograd nodes? and \d+(\.\d+)? (KiB|MiB) of saved activations per step/s);
    assert.equal(rows.filter((r) => lineOfRow(r) === evalForward).length, 1, 'one diagnostic on the eval forward');
    await wb.screenshot('measured-problems-dark');
  });

  for (const [name, width] of [['1536 px', 1536], ['a narrow window', 760]]) {
    it(`the summary's chart labels are whole and apart at ${name}`, async () => {
      const { wb, page } = session;
      await wb.closePanel();
      await page.setViewportSize({ width, height: 900 });
      await wb.runCommand('View: Close All Editors');
      await wb.runCommand('memhint: Show Memory Summary');
      const frame = await wb.webview('memhint: Memory Summary');
      await frame.locator('#section-timeline svg text').first().waitFor({ timeout: 20_000 });
      // The chart is drawn for the panel's width (re-drawn on resize): wait until it matches the frame.
      await frame.waitForFunction(() => {
        const svg = document.querySelector('#section-timeline svg');
        const vb = svg?.viewBox.baseVal;
        return svg !== null && vb !== undefined && Math.abs(vb.width - Math.max(420, Math.min(1400, document.getElementById('app')?.clientWidth ?? 0))) < 40;
      }, null, { timeout: 20_000 }).catch(() => {});
      const { boxes, svg, viewport } = await frame.evaluate(() => {
        const el = document.querySelector('#section-timeline svg');
        const r = el.getBoundingClientRect();
        return {
          svg: { left: r.left, right: r.right, top: r.top, bottom: r.bottom },
          viewport: document.documentElement.clientWidth,
          boxes: [...el.querySelectorAll('text')].map((t) => {
            const b = t.getBoundingClientRect();
            return { text: t.textContent, left: b.left, right: b.right, top: b.top, bottom: b.bottom };
          }),
        };
      });
      assert.ok(boxes.length >= 10, `axis labels drawn: ${JSON.stringify(boxes)}`);
      assert.ok(svg.left >= -0.5 && svg.right <= viewport + 0.5, `the chart fits the panel (${svg.left}-${svg.right} of ${viewport})`);
      for (const b of boxes) {
        assert.ok(b.left >= svg.left - 0.5 && b.right <= svg.right + 0.5 && b.top >= svg.top - 0.5 && b.bottom <= svg.bottom + 0.5,
          `"${b.text}" inside the chart (${b.left.toFixed(1)}-${b.right.toFixed(1)} of ${svg.left.toFixed(1)}-${svg.right.toFixed(1)})`);
      }
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const [a, b] = [boxes[i], boxes[j]];
          const overlap = a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
          assert.ok(!overlap, `"${a.text}" and "${b.text}" overlap`);
        }
      }
      await frame.locator('#section-timeline').scrollIntoViewIfNeeded();
      await wb.screenshot(`summary-chart-${width}-dark`);
    });
  }
});
