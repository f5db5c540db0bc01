// The summary's pure builders for the newer report sections (DataLoader workers, graphs without backward,
// kernel workspaces) and for predicted vs measured side by side.
import * as assert from 'node:assert/strict';
import { comparisonView, figure, stepKey } from '../../../src/extension/webview/comparison';
import { kernelsView, noGradRows } from '../../../src/extension/webview/findingsView';
import { buildViewModel } from '../../../src/extension/webview/viewModel';
import { loaderViews } from '../../../src/extension/webview/workersView';
import { FILE, measuredOfPredicted, predictedReport, report, sectionsReport } from './reportFixture';

const MiB = 1024 ** 2;
const roots = ['/work/project'];

describe('extension/webview report sections', () => {
  it('gives each DataLoader its workers\' own USS/PSS, from their series, in worker order', () => {
    const [loader, ...rest] = loaderViews(sectionsReport(), roots);
    assert.deepEqual(rest, [], 'one loader in the report');
    assert.deepEqual({ ...loader, workers: [] }, {
      file: FILE,
      displayFile: 'train.py',
      line: 5,
      code: 'loader = DataLoader(ds, num_workers=2)',
      datasetType: 'PathsDataset',
      numWorkers: 2,
      ussByStep: [10 * MiB, 14 * MiB, 18 * MiB],
      pssByStep: [20 * MiB, 24 * MiB, 28 * MiB],
      ussGrowthPerStep: 4 * MiB,
      grows: true,
      workers: [],
    });
    // pid 103 left no samples; pid 201 belongs to a loader the report does not list.
    assert.deepEqual(loader.workers, [
      { pid: 101, worker: 0, samples: 2, ussFirst: 2 * MiB, ussLast: 2 * MiB, ussMax: 2 * MiB, pssLast: 5 * MiB, ussGrowth: 0 },
      { pid: 102, worker: 1, samples: 3, ussFirst: MiB, ussLast: 6 * MiB, ussMax: 6 * MiB, pssLast: 7 * MiB, ussGrowth: 5 * MiB },
    ]);
    assert.deepEqual(loaderViews(report(), roots), [], 'no loader section without report.dataLoaders');
  });

  it('lists graphs no backward() used and kernel-workspace lines with the tracked figure they are missing from', () => {
    assert.deepEqual(noGradRows(sectionsReport(), roots), [
      { file: FILE, displayFile: 'train.py', line: 40, code: 'out = model(x_val)', nodesPerStep: 12, bytesKeptPerStep: 8 * MiB, steps: 3 },
      { file: FILE, displayFile: 'train.py', line: 9, code: 'score = head(out)', nodesPerStep: 30, bytesKeptPerStep: MiB, steps: 3 },
    ]);
    assert.deepEqual(kernelsView(sectionsReport(), roots), {
      backend: 'cpu',
      lines: [
        // 6 calls and 9 MiB over the 3 profiled steps.
        { file: FILE, displayFile: 'train.py', line: 30, code: 'y = self.conv(x)', ops: ['aten.convolution.default'], callsPerStep: 2, trackedPerStep: 3 * MiB, cudaMaxRise: null },
        { file: FILE, displayFile: 'train.py', line: 31, code: 'h, _ = self.lstm(y)', ops: ['aten.lstm.input', 'aten.mkldnn_rnn_layer.default'], callsPerStep: 1, trackedPerStep: null, cudaMaxRise: null },
      ],
    });
    assert.equal(kernelsView(report(), roots), null);
    const m = buildViewModel(sectionsReport(), { roots });
    assert.equal(m.loaders.length, 1);
    assert.equal(m.noGrad.length, 2);
    assert.equal(m.kernels?.lines.length, 2);
    assert.equal(m.comparison, null, 'no counterpart given');
  });

  it('puts a prediction beside the measured profile of the same step: lines, modules and the step peak', () => {
    const c = comparisonView(predictedReport(), measuredOfPredicted(), roots);
    assert.ok(c !== null);
    assert.equal(c.step, 'train.py::train_step');
    assert.equal(c.shown, 'predicted');
    assert.equal(c.measuredOn, 'cpu backend, cpu, torch 1.13.1');
    assert.equal(c.whatIf, 'AMP bf16, batch=64');
    assert.deepEqual(c.peaks, [
      { label: 'peak live tensors', predicted: 3 * MiB, measured: 2.5 * MiB, difference: 0.5 * MiB },
      { label: 'parameter at the peak', predicted: null, measured: MiB, difference: null },
      { label: 'activation at the peak', predicted: null, measured: 1.5 * MiB, difference: null },
      { label: 'CUDA max allocated', predicted: 3 * MiB, measured: null, difference: null },
      { label: 'CUDA max reserved', predicted: 20 * MiB, measured: null, difference: null },
    ]);
    assert.deepEqual(
      c.lines.map((l) => [l.line, l.figures.allocated, l.figures.backward]),
      [
        // 7.5 MiB over three measured steps against 2 MiB in the one predicted step.
        [20, { predicted: 2 * MiB, measured: 2.5 * MiB, difference: -0.5 * MiB }, { predicted: 0, measured: 0, difference: 0 }],
        // Only in the measured report: no predicted figure, no difference.
        [21, { predicted: null, measured: 0, difference: null }, { predicted: null, measured: MiB, difference: null }],
      ],
    );
    assert.deepEqual(c.modules.map((m) => m.id), ['MLP', 'MLP/net', 'MLP/net.0', 'MLP/net.2']);
    assert.deepEqual(c.modules[0].figures.liveAtPeak, { predicted: 3000, measured: 2500, difference: 500 });
    assert.deepEqual(c.modules[0].figures.saved, { predicted: 1024, measured: 2048, difference: -1024 });
    assert.deepEqual(c.modules[1].figures.params, { predicted: 4096, measured: null, difference: null });
    // Either report may be the one shown; the figures stay predicted and measured.
    const reversed = comparisonView(measuredOfPredicted(), predictedReport(), roots);
    assert.equal(reversed?.shown, 'measured');
    assert.deepEqual(reversed?.peaks, c.peaks);
    assert.deepEqual(buildViewModel(measuredOfPredicted(), { roots, counterpart: predictedReport() }).comparison, reversed);
  });

  it('compares only one prediction and one measurement of the same script and step', () => {
    const other = report({ target: { ...report().target, function: 'eval_step' } });
    assert.equal(comparisonView(predictedReport(), other, roots), null, 'another function');
    assert.equal(comparisonView(measuredOfPredicted(), report(), roots), null, 'two measured reports');
    assert.equal(comparisonView(predictedReport(), predictedReport(), roots), null, 'two predictions');
    const loop = (line: number): string => stepKey(report({ target: { ...report().target, kind: 'loop', function: null, loopLine: line } }));
    assert.equal(loop(12), loop(12));
    assert.notEqual(loop(12), loop(30), 'loops on different header lines are different steps');
    assert.notEqual(loop(12), stepKey(report()));
    assert.deepEqual(figure(5, 7), { predicted: 5, measured: 7, difference: -2 });
    assert.deepEqual(figure(null, 7), { predicted: null, measured: 7, difference: null });
  });
});
