import * as assert from 'node:assert/strict';
import { partialSummary } from '../../../src/extension/profile/partial';
import { FILE, kinds, report } from './reportFixture';

describe('partial profile notification text', () => {
  it('is null for a complete run', () => {
    assert.equal(partialSummary(report()), null);
  });

  it('says how many steps of how many were measured, the peak, and the OOM site', () => {
    const r = report({
      partial: true,
      steps: report().steps.slice(0, 1),
      oom: { message: 'OutOfMemoryError', location: { file: FILE, line: 41, function: 'train_step' }, code: 'x = big()', requestedBytes: 1, step: 1, liveAtOom: { atMs: 0, bytes: 0, byKind: kinds(), byLine: [], phase: 'forward', step: 1 } as never, advice: [] },
    });
    assert.equal(partialSummary(r, (f) => f.replace('/work/project/', '')), 'measured 1 of 3 steps (peak 1000 B); out of memory at train.py:41 in step 2');
  });

  it('names the stop reason from the notes, and has no step count for a whole script', () => {
    const r = report({ partial: true, steps: [], target: { ...report().target, kind: 'script', steps: 1 }, notes: ['capability x', 'stopped after the 30 s time limit.'] });
    assert.equal(partialSummary(r), 'no step completed: the figures cover the code that ran before it stopped; stopped after the 30 s time limit');
  });
});
