import * as assert from 'node:assert/strict';
import { identifiersIn, measuredRetention, retentionSentence } from '../../../src/extension/lint/confirm';
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
    assert.equal(retentionSentence(m, 15), 'Measured by memhint profile: keeps 4 B per step, 5 autograd graph nodes per step, 4 B live at the peak.');
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
});
