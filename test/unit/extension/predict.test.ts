// The editor side of "Predict memory on CUDA": device setting, setup-function discovery, what-if options,
// predicted reports marked as such in hints and summary, and one real prediction through the runner.
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { hintsForFile, hoverMarkdown, isPredicted } from '../../../src/extension/hints/model';
import { parseDeviceMemory } from '../../../src/extension/predict/device';
import { runPrediction } from '../../../src/extension/predict/run';
import { batchParameter, setupCandidates } from '../../../src/extension/predict/setup';
import { describeWhatIf, NO_WHAT_IF, parseBatchValue, predictOptions, reviveWhatIf, torchSupportsPrediction } from '../../../src/extension/predict/whatIf';
import { buildViewModel } from '../../../src/extension/webview/viewModel';
import type { PredictedReport } from '../../../src/predict/schema';
import { getLinter } from '../lint/harness';
import { TORCH1_PYTHON, torch2Python } from '../torch2';
import { counters, FILE, line, predictedReport as predicted, report } from './reportFixture';

const ROOT = path.resolve(__dirname, '../../../..');
const GiB = 1024 ** 3;

describe('predict in the editor: device memory setting', () => {
  it('reads sizes in binary and decimal units', () => {
    assert.deepEqual(parseDeviceMemory('80GiB'), { bytes: 80 * GiB, label: '80GiB' });
    assert.deepEqual(parseDeviceMemory(' 24 GB '), { bytes: 24e9, label: '24 GB' });
    assert.equal(parseDeviceMemory(''), null);
  });

  it('reads GPU names loosely, the longest name winning', () => {
    const a100 = parseDeviceMemory('NVIDIA A100 80GB');
    assert.ok(a100 !== null && !('error' in a100));
    assert.equal(a100.bytes, 81_920 * 1024 ** 2);
    const small = parseDeviceMemory('a100');
    assert.ok(small !== null && !('error' in small));
    assert.equal(small.bytes, 40_960 * 1024 ** 2);
    const rtx = parseDeviceMemory('GeForce RTX 4090');
    assert.ok(rtx !== null && !('error' in rtx) && rtx.label.startsWith('RTX 4090'));
  });

  it('refuses what it does not know with a reason naming the setting', () => {
    const bad = parseDeviceMemory('Quadro 9000');
    assert.ok(bad !== null && 'error' in bad);
    assert.match(bad.error, /memhint\.predict\.device "Quadro 9000" is neither a size/);
    assert.ok(bad !== null && 'error' in (parseDeviceMemory('0GB') ?? {}));
  });
});

describe('predict in the editor: setup function and what-ifs', () => {
  const SOURCE = `import torch

class Trainer:
    def setup(self):
        pass

def train_step(model, opt, x, y):
    loss = model(x).sum()
    loss.backward()
    opt.step()

def helper(a):
    return a

def make_inputs(batch_size: int = 64, seq=128):
    return None

def __getattr__(name):
    return None
`;

  it('offers module-level functions other than the step, input builders first, with their parameters', async () => {
    const linter = await getLinter();
    const doc = linter.open(SOURCE);
    try {
      const candidates = setupCandidates(doc.source, 'train_step');
      assert.deepEqual(candidates.map((c) => c.name), ['make_inputs', 'helper']);
      assert.deepEqual(candidates[0].parameters, [{ name: 'batch_size', defaultText: '64' }, { name: 'seq', defaultText: '128' }]);
      assert.deepEqual(batchParameter(candidates[0]), { name: 'batch_size', defaultText: '64' });
      assert.equal(batchParameter(candidates[1]), null);
    } finally {
      doc.dispose();
    }
  });

  it('turns the what-ifs into predict options and words', () => {
    const target = { python: 'py', script: '/p/train.py', function: 'train_step', setup: 'make_inputs', cwd: '/p', deviceMemoryBytes: 80 * GiB, timeoutSeconds: 60 };
    const base = predictOptions(target, NO_WHAT_IF);
    assert.deepEqual(base.setupArgs, {});
    assert.equal(base.amp, null);
    assert.equal(base.timeoutMs, 60_000);
    const whatIf = { amp: 'bf16' as const, checkpoint: 'Block', batch: { arg: 'batch_size', value: 32 } };
    const opts = predictOptions(target, whatIf);
    assert.deepEqual(opts.setupArgs, { batch_size: 32 });
    assert.equal(opts.amp, 'bf16');
    assert.equal(opts.checkpoint, 'Block');
    assert.equal(opts.deviceMemoryBytes, 80 * GiB);
    assert.equal(describeWhatIf(whatIf), 'AMP bf16, checkpoint Block, batch_size=32');
    assert.equal(describeWhatIf(NO_WHAT_IF), '');
  });

  it('revives only well-formed remembered what-ifs', () => {
    assert.deepEqual(reviveWhatIf({ amp: 'fp16', checkpoint: ' h.* ', batch: { arg: 'bs', value: 8 } }), { amp: 'fp16', checkpoint: 'h.*', batch: { arg: 'bs', value: 8 } });
    assert.deepEqual(reviveWhatIf({ amp: 'int8', checkpoint: '', batch: { arg: 'x; rm', value: 1.5 } }), NO_WHAT_IF);
    assert.deepEqual(reviveWhatIf('junk'), NO_WHAT_IF);
    assert.equal(parseBatchValue(' 64 '), 64);
    assert.equal(typeof parseBatchValue('0'), 'string');
    assert.equal(typeof parseBatchValue('6.5'), 'string');
  });

  it('knows which torch versions can predict', () => {
    assert.equal(torchSupportsPrediction('1.13.1'), false);
    assert.equal(torchSupportsPrediction('2.13.0+cpu'), true);
    assert.equal(torchSupportsPrediction('10.0'), true);
    assert.equal(torchSupportsPrediction(null), null);
  });
});

describe('predict in the editor: predicted reports are marked as predicted', () => {
  it('hints say "predicted" and the hover says it was not measured', () => {
    const r = predicted();
    assert.equal(isPredicted(r), true);
    assert.equal(isPredicted(report()), false);
    const [hint] = hintsForFile(r, [FILE]);
    assert.equal(hint.text, 'predicted +2 MiB');
    assert.match(hoverMarkdown(hint, r), /\*\*predicted\*\* for CUDA on meta tensors, not measured/);
    const [measured] = hintsForFile({ ...r, mode: undefined } as unknown as PredictedReport, [FILE]);
    assert.equal(measured.text, '+2 MiB');
  });

  it('the hover of the line that runs the model shows its module breakdown; backward() and callers do not', () => {
    const base = predicted();
    const r: PredictedReport = {
      ...base,
      lines: [
        ...base.lines,
        line(21, 'loss.backward()', { calls: 1, inclusive: counters(8 * 1024 ** 2, 0, 8 * 1024 ** 2) }),
        line(30, 'train_step(model, opt, x, y)', { function: '<module>', calls: 1, inclusive: counters(12 * 1024 ** 2, 0, 9 * 1024 ** 2) }),
        line(5, 'return self.net(x)', { function: 'MLP.forward', calls: 1, inclusive: counters(2 * 1024 ** 2, 0, 2 * 1024 ** 2) }),
        line(22, 'loss = logits.sum()', { calls: 1, inclusive: counters(4, 0, 4) }),
      ],
    };
    const hints = hintsForFile(r, [FILE], { hide: 0, medium: 1e9, large: 1e10 });
    const hover = (n: number): string => hoverMarkdown(hints.find((h) => h.line === n - 1)!, r);
    const model = hover(20);
    assert.match(model, /\*\*Modules of `MLP`\*\* \(per step; top 4 of 4 by live at peak/);
    assert.match(model, /\| MLP \(whole model\) \| 2\.5 KiB \| 1 KiB \| 4 KiB \| 4 KiB \| 4 KiB \| 8 KiB \| 2\.93 KiB \|/);
    assert.match(model, /\| `net\.0` Linear \| 1 KiB \|/);
    for (const other of [21, 30, 5, 22]) assert.doesNotMatch(hover(other), /Modules of/, `line ${other}`);
  });

  it('the summary model carries the prediction and the module tree', () => {
    const model = buildViewModel(predicted(), { roots: ['/work/project'] });
    assert.deepEqual(model.prediction, {
      maxAllocated: 3 * 1024 ** 2,
      maxReserved: 20 * 1024 ** 2,
      rawPeak: 3 * 1024 ** 2,
      deviceMemory: 16 * 1024 ** 2,
      fits: false,
      firstExceeded: 'train.py:20',
      whatIf: 'AMP bf16, batch=64',
      seconds: 0.5,
    });
    assert.deepEqual(model.modules.map((m) => [m.id, m.parent, m.depth, m.name]), [
      ['MLP', null, 0, 'MLP'],
      ['MLP/net', 'MLP', 1, 'net'],
      ['MLP/net.0', 'MLP/net', 2, '0'],
      ['MLP/net.2', 'MLP/net', 2, '2'],
    ]);
    assert.equal(buildViewModel(report(), { roots: [] }).prediction, null);
  });
});

describe('predict in the editor: the runner (real harness)', function () {
  this.timeout(300_000);
  const fixture = path.join(ROOT, 'test/fixtures/predict/mlp.py');
  const hooks = (signal = new AbortController().signal) => {
    const progress: string[] = [];
    return { progress, hooks: { signal, onProgress: (m: string) => progress.push(m), onOutput: () => undefined } };
  };
  const options = (python: string, batch: number) => ({
    ...predictOptions({ python, script: fixture, function: 'train_step', setup: 'make_inputs', cwd: path.dirname(fixture), deviceMemoryBytes: 80 * GiB, timeoutSeconds: 240 }, { ...NO_WHAT_IF, batch: { arg: 'batch', value: batch } }),
  });

  it('predicts on torch 2.x with the batch from the what-if, and twice the batch needs more', async () => {
    const python = torch2Python();
    const small = hooks();
    const a = await runPrediction(options(python, 64), small.hooks);
    assert.equal(a.error, null, a.error ?? '');
    assert.ok(a.report !== null && isPredicted(a.report));
    const ra = a.report as PredictedReport;
    assert.deepEqual(ra.prediction.setupArgs, { batch: 64 });
    assert.equal(ra.prediction.fits, true);
    assert.ok(small.progress.some((m) => /meta tensors/.test(m)), small.progress.join(' | '));
    const b = await runPrediction(options(python, 128), hooks().hooks);
    const rb = b.report as PredictedReport;
    assert.ok(rb.prediction.rawPeakBytes > ra.prediction.rawPeakBytes, `${rb.prediction.rawPeakBytes} > ${ra.prediction.rawPeakBytes}`);
  });

  it('on torch 1.x the harness refuses with unsupported_torch', async () => {
    const r = await runPrediction(options(TORCH1_PYTHON, 8), hooks().hooks);
    assert.equal(r.report, null);
    assert.equal(r.failure?.kind, 'unsupported_torch', r.error ?? '');
  });

  it('cancel ends the prediction and reports it cancelled', async () => {
    const abort = new AbortController();
    const pending = runPrediction(options(torch2Python(), 64), hooks(abort.signal).hooks);
    setTimeout(() => abort.abort(), 300);
    const r = await pending;
    assert.equal(r.cancelled, true);
    assert.equal(r.report, null);
  });
});
