// Kernel-internal workspaces (report.kernelWorkspaces): lines whose ops allocate scratch memory inside the
// kernel, invisible to the CPU accounting. The fixture runs a convolution, an LSTM and a linear layer per
// step (setup mode, 3 profiled steps). The convolution is aten.convolution on both torches; the LSTM is one
// oneDNN op (aten.mkldnn_rnn_layer) on torch 2.x and ordinary ops (addmm, sigmoid, ...) on torch 1.13.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runProfile } from '../../src/profiler/launcher';
import type { ProfileReport } from '../../src/profiler/report';
import { TORCH1_PYTHON, torch2Python } from './torch2';

const FIXTURE = path.resolve(__dirname, '../../../test/fixtures/profiler/conv_lstm.py');
const lineOf = (text: string): number => fs.readFileSync(FIXTURE, 'utf-8').split('\n').findIndex((l) => l.trim() === text) + 1;

for (const [label, python, lstmFused] of [
  ['torch 1.13', (): string => TORCH1_PYTHON, false],
  ['torch 2.x', torch2Python, true],
] as const) {
  describe(`profiler: kernel-internal workspaces (${label})`, function () {
    this.timeout(120_000);
    let report: ProfileReport;
    before(async () => {
      const outcome = await runProfile({
        script: FIXTURE, function: 'train_step', setup: 'make_inputs', warmup: 1, steps: 3, maxSeconds: null,
        backend: 'cpu', python: python(), budgetBytes: null, memoryLimitBytes: null, timeoutMs: 100_000, scriptArgs: [],
      });
      assert.equal(outcome.failure, null, outcome.failure?.message);
      assert.ok(outcome.report);
      report = outcome.report;
    });

    it('lists the convolution line (and the fused LSTM line), one forward call per step, not the linear layer', () => {
      const expected: Array<[number, string[], number]> = [[lineOf('features = conv(images)'), ['aten.convolution.default'], 3]];
      if (lstmFused) expected.push([lineOf('outputs, _ = lstm(sequence)'), ['aten.mkldnn_rnn_layer.default'], 3]);
      assert.deepEqual((report.kernelWorkspaces ?? []).map((k) => [k.line, k.ops, k.calls]), expected);
      assert.ok(report.kernelWorkspaces?.every((k) => k.function === 'train_step' && k.code.length > 0));
    });

    it('says in a note that these lines\' allocation volume is under-counted on CPU', () => {
      const notes = report.notes.filter((n) => n.includes('workspaces inside the kernel'));
      assert.equal(notes.length, 1);
      assert.match(notes[0], new RegExp(`^conv_lstm\\.py:${lineOf('features = conv(images)')}\\b`));
      assert.match(notes[0], /under-counted on CPU/);
    });
  });
}
