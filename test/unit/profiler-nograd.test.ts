// Forward passes outside torch.no_grad() whose graphs no backward() uses (report.noBackwardGraphs). The
// fixture's step trains a 16 -> 64 -> 4 MLP (Linear, GELU, Linear) on B = 32 rows, then evaluates it on a
// validation batch without no_grad, directly and through a helper, and once under no_grad. Each graph-
// building evaluation makes 5 autograd nodes (TBackward0 + AddmmBackward0 per Linear, GeluBackward0) and
// keeps what they saved that the step allocated: fc1's output (saved by GELU) and GELU's output (saved by
// the second addmm), 2 x 32 x 64 x 4 B = 16,384 B; the weights and the validation batch live anyway.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runProfile, type ProfileOptions } from '../../src/profiler/launcher';
import type { ProfileReport } from '../../src/profiler/report';
import { TORCH1_PYTHON, torch2Python } from './torch2';

const FIXTURE = path.resolve(__dirname, '../../../test/fixtures/profiler/eval_with_grad.py');
const lineOf = (text: string): number => fs.readFileSync(FIXTURE, 'utf-8').split('\n').findIndex((l) => l.trim() === text) + 1;
const KEPT = 2 * 32 * 64 * 4;

for (const [label, python] of [
  ['torch 1.13', (): string => TORCH1_PYTHON],
  ['torch 2.x', torch2Python],
] as const) {
  describe(`profiler: graphs never backpropagated (${label})`, function () {
    this.timeout(120_000);
    const profile = async (overrides: Partial<ProfileOptions>): Promise<ProfileReport> => {
      const outcome = await runProfile({
        script: FIXTURE, function: null, setup: null, warmup: 1, steps: 3, maxSeconds: null, backend: 'cpu',
        python: python(), budgetBytes: null, memoryLimitBytes: null, timeoutMs: 100_000, scriptArgs: [], ...overrides,
      });
      assert.equal(outcome.failure, null, outcome.failure?.message);
      assert.ok(outcome.report);
      return outcome.report;
    };
    const expected = (): Array<[number, string, number, number, number]> => [
      [lineOf('val_out = model(val_x)'), 'val_out = model(val_x)', 5, KEPT, 3],
      [lineOf('predicted = predict(val_x)'), 'predicted = predict(val_x)', 5, KEPT, 3],
    ];
    const figures = (report: ProfileReport): Array<[number, string, number, number, number]> =>
      (report.noBackwardGraphs ?? []).map((g) => [g.line, g.code, g.nodesPerStep, g.bytesKeptPerStep, g.steps]);

    it('step function: reports both evaluations, not the training forward, not the no_grad one, nor the helper\'s inner line', async () => {
      const report = await profile({ function: 'train_step' });
      assert.deepEqual(figures(report), expected());
      assert.ok(report.noBackwardGraphs?.every((g) => g.file === FIXTURE && g.function === 'train_step'));
      const notes = report.notes.filter((n) => n.includes('no backward() uses'));
      assert.equal(notes.length, 2);
      assert.match(notes[0], /^line \d+ \(val_out = model\(val_x\)\) builds .*: 5 node\(s\) and 16384 bytes/);
    });

    it('inline loop: the same statements, found from the loop\'s frame down', async () => {
      const report = await profile({});
      assert.equal(report.target.kind, 'loop');
      assert.deepEqual(figures(report), expected());
    });
  });
}

describe('profiler: graphs never backpropagated, none where every graph is used', function () {
  this.timeout(120_000);
  it('reports nothing for a training step whose forward is all backpropagated', async () => {
    const outcome = await runProfile({
      script: path.resolve(__dirname, '../../../test/fixtures/profiler/linear_adam.py'), function: 'train_step', setup: null,
      warmup: 1, steps: 2, maxSeconds: null, backend: 'cpu', python: TORCH1_PYTHON, budgetBytes: null, memoryLimitBytes: null,
      timeoutMs: 100_000, scriptArgs: [],
    });
    assert.ok(outcome.report, outcome.failure?.message);
    assert.deepEqual(outcome.report.noBackwardGraphs, []);
  });
});
