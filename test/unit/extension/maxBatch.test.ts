// "Largest batch that fits" in the editor's predict what-ifs: the pure parts (start value, the report kept
// per value, the sentence), driving the same bisection as `memhint predict --max-batch` with a fake predictor.
import * as assert from 'node:assert/strict';
import { maxBatchCurve, maxBatchSentence, recordingPredictor, searchStart } from '../../../src/extension/predict/maxBatch';
import { maxBatch, type PredictOptions, type Predictor } from '../../../src/predict/run';
import type { ProfileFailure } from '../../../src/profiler/launcher';
import { predictedReport } from './reportFixture';

const MiB = 1024 ** 2;
const base: PredictOptions = { script: '/w/train.py', function: 'train_step', setup: 'make_inputs', setupArgs: {}, python: 'python3', deviceMemoryBytes: 1000 * MiB, amp: null, checkpoint: null, maxSplitSizeBytes: null, warmup: 1, steps: 1, timeoutMs: 60_000 };

/** A model whose peak is 100 MiB + 10 MiB per sample; values listed in `broken` fail to predict. */
function linearModel(broken: readonly number[] = []): { predictor: Predictor; asked: number[] } {
  const asked: number[] = [];
  const predictor: Predictor = (options) => {
    const batch = options.setupArgs.batch as number;
    asked.push(batch);
    if (broken.includes(batch)) {
      const failure: ProfileFailure = { kind: 'crash', message: `shape error at ${batch}`, traceback: null, location: null, exitCode: 1, signal: null, stderrTail: '' };
      return Promise.resolve({ report: null, failure });
    }
    const reserved = (100 + 10 * batch) * MiB;
    return Promise.resolve({ report: predictedReport({ allocator: { ...predictedReport().prediction.allocator, maxReservedBytes: reserved }, setupArgs: { batch } }), failure: null });
  };
  return { predictor, asked };
}

describe('predict in the editor: largest batch that fits', () => {
  it('starts from the last value used, else the setup default, else 1', () => {
    assert.equal(searchStart(48, '32'), 48);
    assert.equal(searchStart(null, '32'), 32);
    assert.equal(searchStart(null, ' 8 '), 8);
    assert.equal(searchStart(null, 'cfg.batch'), 1);
    assert.equal(searchStart(null, null), 1);
    assert.equal(searchStart(0, '0.5'), 1);
  });

  it('finds the largest fitting value and keeps its report (no extra prediction for the answer)', async () => {
    const model = linearModel();
    const recorder = recordingPredictor(model.predictor, 'batch');
    const result = await maxBatch(recorder.predictor, base, 'batch', 32, 1000 * MiB);
    // 100 + 10 b <= 1000  <=>  b <= 90
    assert.equal(result.best, 90);
    assert.deepEqual(model.asked.slice(0, 3), [32, 64, 128], 'doubles, then bisects');
    assert.equal(new Set(model.asked).size, model.asked.length, 'each value predicted once');
    const kept = recorder.reportFor(result.best);
    assert.ok(kept !== null);
    assert.deepEqual(kept.prediction.setupArgs, { batch: 90 });
    assert.equal(recorder.reportFor(null), null);
    assert.equal(maxBatchSentence(result, 'A100 1000MiB'), 'largest batch that fits A100 1000MiB: 90 (max reserved 1000 MiB); batch=91 needs 1010 MiB');
    assert.deepEqual(maxBatchCurve(result).slice(0, 1), ['  batch=32: max reserved 420 MiB']);
  });

  it('a value that fails to predict counts as not fitting and is named in the sentence', async () => {
    const model = linearModel([64]);
    const recorder = recordingPredictor(model.predictor, 'batch');
    const result = await maxBatch(recorder.predictor, base, 'batch', 32, 1000 * MiB);
    assert.equal(result.best, 63);
    assert.equal(recorder.reportFor(64), null);
    assert.match(maxBatchSentence(result, '1000 MiB'), /^largest batch that fits 1000 MiB: 63 .*; batch=64 failed \(shape error at 64\)$/);
  });

  it('says so when not even 1 fits', async () => {
    const recorder = recordingPredictor(linearModel().predictor, 'batch');
    const result = await maxBatch(recorder.predictor, base, 'batch', 4, 50 * MiB);
    assert.equal(result.best, null);
    assert.match(maxBatchSentence(result, '50 MiB'), /^no batch tried fits 50 MiB \(smallest tried: 1\); batch=1 needs 110 MiB$/);
  });
});
