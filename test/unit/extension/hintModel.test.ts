import * as assert from 'node:assert/strict';
import { alignMargin, clip, hintsForFile, hintText, hoverMarkdown, kindBreakdown, sizeClass, stepPeak, defaultThresholds, visibleHints } from '../../../src/extension/hints/model';
import { counters, FILE, kinds, line, report } from './reportFixture';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

describe('extension/hintModel', () => {
  it('shows the per-step net delta and the peak, inclusive of callees', () => {
    // Totals over 3 steps: 3.6 GiB allocated, nothing freed -> +1.2 GiB per step; peak 3.4 GiB.
    const stats = line(12, 'out = model(x)', { inclusive: counters(3.6 * GiB, 0, 3.4 * GiB, 30) });
    assert.equal(hintText(stats, 3, null), '+1.2 GiB, peak 3.4 GiB');
  });

  it('omits a zero net and a peak equal to the net', () => {
    assert.equal(hintText(line(3, 'y = x * 2', { inclusive: counters(30 * MiB, 30 * MiB, 10 * MiB) }), 3, null), 'peak 10 MiB');
    assert.equal(hintText(line(3, 'w = torch.zeros(n)', { inclusive: counters(30 * MiB, 0, 10 * MiB) }), 3, null), '+10 MiB');
  });

  it('adds backward memory and leaks', () => {
    const stats = line(5, 'h = relu(x)', { inclusive: counters(3 * MiB, 0, MiB), backward: counters(6 * MiB, 6 * MiB, 2 * MiB) });
    const leak = { file: FILE, line: 5, code: 'h = relu(x)', bytesPerStep: MiB, bytesByStep: [MiB, MiB], graphNodesPerStep: 0, reason: 'storage' as const, heldBy: null };
    assert.equal(hintText(stats, 3, leak), '+1 MiB, backward 2 MiB, leaks 1 MiB/step');
  });

  it('builds hints only for the file and drops lines below the hide threshold', () => {
    const r = report({
      lines: [
        line(2, 'a = torch.randn(1024, 1024)', { inclusive: counters(12 * MiB, 0, 4 * MiB) }),
        line(3, 'b = 1', { inclusive: counters(300, 0, 100) }),
        { ...line(4, 'c = torch.ones(10)', { inclusive: counters(3 * GiB, 0, GiB) }), file: '/elsewhere/other.py' },
        line(7, 'big = torch.empty(n)', { inclusive: counters(3 * 300 * MiB, 0, 300 * MiB) }),
      ],
    });
    const hints = hintsForFile(r, [FILE], defaultThresholds);
    assert.deepEqual(
      hints.map((h) => [h.line, h.text, h.size]),
      [
        [1, '+4 MiB', 'small'],
        [6, '+300 MiB', 'large'],
      ],
    );
    assert.equal(hintsForFile(r, ['/nowhere.py']).length, 0);
  });

  it('says how often a line runs per step, and that its peak is per call', () => {
    // A line run 4 times in each of 3 steps: +48 MiB per step is four calls' worth; the peak is one call's.
    const stats = line(20, 'h = block(h)', { calls: 12, inclusive: counters(3 * 48 * MiB, 0, 24 * MiB, 12) });
    assert.equal(hintText(stats, 3, null), 'x4 +48 MiB, peak 24 MiB/call');
    assert.equal(hintsForFile(report({ lines: [stats] }), [FILE])[0].callsPerStep, 4);
  });

  it('colours by the peak (or live at the peak), never by the cumulative net', () => {
    // 300 MiB net per step from many small calls, each peaking at 1 MiB: small by peak.
    const many = line(4, 'buf.append(torch.zeros(n))', { calls: 300, inclusive: counters(900 * MiB, 0, MiB, 300) });
    const [byPeak] = hintsForFile(report({ lines: [many] }), [FILE], defaultThresholds, 'peak');
    assert.equal(byPeak.size, 'small');
    assert.equal(byPeak.colorBytes, MiB);
    const live = report({ lines: [many], peak: { bytes: 400 * MiB, atMs: 1, step: 0, location: null, phase: 'forward', byKind: kinds({ activation: 400 * MiB }), byLine: [{ file: FILE, line: 4, bytes: 300 * MiB, byKind: kinds({ activation: 300 * MiB }) }] } });
    const [byLive] = hintsForFile(live, [FILE], defaultThresholds, 'liveAtPeak');
    assert.equal(byLive.size, 'large');
  });

  it('modes: all, the cursor lines, or medium and large only', () => {
    const hs = [{ line: 1, size: 'small' as const }, { line: 5, size: 'medium' as const }, { line: 9, size: 'large' as const }];
    assert.deepEqual(visibleHints(hs, 'all', new Set()).map((h) => h.line), [1, 5, 9]);
    assert.deepEqual(visibleHints(hs, 'currentLine', new Set([5])).map((h) => h.line), [5]);
    assert.deepEqual(visibleHints(hs, 'aboveThreshold', new Set([1])).map((h) => h.line), [5, 9]);
  });

  it('clips long hints with an ellipsis and aligns them to a column', () => {
    assert.equal(clip('+1.2 GiB, peak 3.4 GiB, backward 2 GiB', 16), '+1.2 GiB, peak…');
    assert.equal(clip('short', 16), 'short');
    assert.equal(clip('anything at all', 0), 'anything at all');
    assert.equal(alignMargin(20, 61), 40); // starts at column 61
    assert.equal(alignMargin(70, 61), 2); // a longer line: right after the code, never on it
    assert.equal(alignMargin(20, 0), 2);
  });

  it('classifies sizes by thresholds', () => {
    const t = { hide: 0, medium: 100, large: 1000 };
    assert.equal(sizeClass(99, t), 'small');
    assert.equal(sizeClass(100, t), 'medium');
    assert.equal(sizeClass(1000, t), 'large');
  });

  it('hover lists self, inclusive and backward figures per step, saved activations and the kind breakdown', () => {
    const stats = line(9, 'loss = criterion(model(x), y)', {
      self: counters(3 * MiB, 3 * MiB, MiB, 6),
      inclusive: counters(30 * MiB, 15 * MiB, 8 * MiB, 60),
      savedForBackward: 6 * MiB,
      backward: counters(9 * MiB, 9 * MiB, 4 * MiB, 9),
    });
    const r = report({
      lines: [stats],
      peak: {
        bytes: 20 * MiB,
        step: 1,
        atMs: 250,
        location: { file: FILE, line: 9 },
        phase: 'forward',
        byKind: kinds({ activation: 12 * MiB, parameter: 8 * MiB }),
        byLine: [{ file: FILE, line: 9, bytes: 5 * MiB, byKind: kinds({ activation: 4 * MiB, temporary: MiB }) }],
      },
    });
    const [hint] = hintsForFile(r, [FILE]);
    const md = hoverMarkdown(hint, r);
    assert.match(md, /line 9 in `train_step`/);
    assert.match(md, /per step, mean of 3 steps/);
    assert.match(md, /\| allocated \| 1 MiB \| 10 MiB \| 3 MiB \|/);
    assert.match(md, /\| net \| 0 B \| \+5 MiB \| 0 B \|/);
    assert.match(md, /\| peak \| 1 MiB \| 8 MiB \| 4 MiB \|/);
    assert.match(md, /\| allocations \| 2 \| 20 \| 3 \|/);
    assert.match(md, /Saved activations for backward: 2 MiB per step/);
    assert.match(md, /Live at the step's peak: 5 MiB \(activation 4 MiB, temporary 1 MiB\)/);
    assert.match(md, /Runs 1× per step/);
  });

  it('kind breakdown lists non-zero kinds, largest first', () => {
    assert.equal(kindBreakdown(kinds({ gradient: 2048, optimizer_state: 4096 })), 'optimizer state 4 KiB, gradient 2 KiB');
  });

  it('step peak comes from the peak snapshot, else the steps', () => {
    assert.equal(stepPeak(report()), 1002);
    assert.equal(stepPeak(report({ steps: [] })), null);
  });
});
