import * as assert from 'node:assert/strict';
import { identifiersIn, measuredFindings, measuredRetention, retentionSentence, storingLine } from '../../../src/extension/lint/confirm';
import { counters, FILE, kinds, line, report } from './reportFixture';

describe('extension/confirm (measured retention for MH002)', () => {
  const r = report({
    lines: [line(10, 'loss = criterion(out, y)', { inclusive: counters(300, 0, 100) }), line(14, 'losses.append(loss)'), line(15, 'total += loss', { inclusive: counters(12, 0, 4) })],
    leaks: [
      { file: FILE, line: 10, code: 'loss = criterion(out, y)', bytesPerStep: 4096, bytesByStep: [4096, 4096], graphNodesPerStep: 7, reason: 'autograd_graph', heldBy: null },
      { file: FILE, line: 15, code: 'total += loss', bytesPerStep: 4, bytesByStep: [4, 4], graphNodesPerStep: 5, reason: 'autograd_graph', heldBy: null },
    ],
    peak: { bytes: 9000, step: 1, atMs: 1, location: null, phase: 'forward', byKind: kinds(), byLine: [{ file: FILE, line: 15, bytes: 4, byKind: kinds({ temporary: 4 }) }] },
  });

  it('uses the leak of the finding line itself', () => {
    const m = measuredRetention(r, [FILE], 15, identifiersIn('total += loss'));
    assert.deepEqual(m, { line: 15, bytesPerStep: 4, graphNodesPerStep: 5, liveAtPeak: 4 });
    // The 4 B of a scalar loss say nothing of its cost: the graph it keeps does.
    assert.equal(retentionSentence(m, 15), 'Measured by memhint profile: keeps 5 autograd graph nodes per step alive (with the activations they saved for backward).');
  });

  it('does not pin another line\'s leak on a finding by a shared name', () => {
    // `loss` computed on line 10 leaks, but nothing says line 14's list is what holds it.
    assert.equal(measuredRetention(r, [FILE], 14, identifiersIn('losses.append(loss)')), null);
  });

  it('links an append to the leak the harness says the container holds', () => {
    const held = report({
      leaks: [{ file: FILE, line: 26, code: 'h = F.gelu(self.fc2(h))', bytesPerStep: 16 * 1024 ** 2, bytesByStep: [1, 1], graphNodesPerStep: 0, reason: 'storage', heldBy: '`grad_snapshots` in main() (list)' }],
    });
    const m = measuredRetention(held, [FILE], 75, identifiersIn('grad_snapshots.append(model.fc2.weight.grad)'));
    assert.deepEqual(m, { line: 26, bytesPerStep: 16 * 1024 ** 2, graphNodesPerStep: 0, liveAtPeak: 0 });
    assert.equal(measuredRetention(held, [FILE], 75, identifiersIn('other.append(x)')), null);
  });

  it('finds nothing for lines and files the profiler did not see keep memory', () => {
    assert.equal(measuredRetention(r, [FILE], 3, ['x']), null);
    assert.equal(measuredRetention(r, ['/other.py'], 15, ['total']), null);
  });

  it('finds the line that stores a held value', () => {
    const lines = ['history = []', 'def step():', '    loss = f()', '    history.append(loss)  # keep', '    other_history.append(1)', '    history[0] = loss'];
    assert.equal(storingLine(lines, 'history', 3), 4);
    assert.equal(storingLine(lines, 'history', 6), 6);
    assert.equal(storingLine(lines, 'missing', 1), null);
  });

  it('turns a leak no finding covers into a measured finding on the holding line', () => {
    const leakReport = report({
      leaks: [
        { file: FILE, line: 3, code: 'loss = f()', bytesPerStep: 128 * 1024, bytesByStep: [128 * 1024], graphNodesPerStep: 0, reason: 'storage', heldBy: '`history` in <module>() (list)' },
        { file: FILE, line: 9, code: 'total += loss', bytesPerStep: 0, bytesByStep: [], graphNodesPerStep: 7, reason: 'autograd_graph', heldBy: null },
        { file: '/elsewhere.py', line: 3, code: 'x = g()', bytesPerStep: 1 << 20, bytesByStep: [1 << 20], graphNodesPerStep: 0, reason: 'storage', heldBy: null },
      ],
    });
    const lines = ['history = []', 'def step():', '    loss = f()', '    history.append(loss)', '', '', '', '', '    total += loss'];
    const found = measuredFindings(leakReport, [FILE], lines, new Set([9]));
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.equal(found[0].line, 4);
    assert.equal(found[0].allocatedAt, 3);
    assert.match(found[0].message, /^What line 3 allocates \(`loss = f\(\)`\) outlives each step: 128 KiB more per step, held by `history` in <module>\(\) \(list\)\./);
    // Without the finding on line 9, its graph leak is reported in graph terms.
    const graph = measuredFindings(leakReport, [FILE], lines, new Set()).find((f) => f.line === 9);
    assert.match(graph?.message ?? '', /keeps 7 autograd graph nodes per step alive/);
  });
});
