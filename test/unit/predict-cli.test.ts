// `memhint predict` argument parsing, the --max-batch bisection and the what-if helpers, with a scripted
// predictor (no Python): the predicted peak is a known function of the batch.
import * as assert from 'node:assert/strict';
import { parsePredictArgs, parseSetupArg } from '../../src/cli/predict-command';
import { maxBatch, predictArgs, repeatedBlockType, type PredictOptions, type Predictor } from '../../src/predict/run';
import type { ModuleStats, PredictedReport } from '../../src/predict/schema';

const GiB = 1024 ** 3;

function fakePredictor(reservedFor: (batch: number) => number, calls: number[]): Predictor {
  return (options: PredictOptions) => {
    const batch = options.setupArgs.batch as number;
    calls.push(batch);
    if (batch > 1000) {
      return Promise.resolve({
        report: null,
        failure: { kind: 'user_exception', message: 'too big', traceback: null, location: null, exitCode: 1, signal: null, stderrTail: '' },
      });
    }
    const reserved = reservedFor(batch);
    const report = { prediction: { allocator: { maxReservedBytes: reserved, maxAllocatedBytes: reserved - 1 } } } as unknown as PredictedReport;
    return Promise.resolve({ report, failure: null });
  };
}

const base: PredictOptions = {
  script: 'train.py',
  function: 'train_step',
  setup: 'make_inputs',
  setupArgs: { batch: 8 },
  python: 'python3',
  deviceMemoryBytes: 80 * GiB,
  amp: null,
  checkpoint: null,
  maxSplitSizeBytes: null,
  warmup: 1,
  steps: 1,
  timeoutMs: 1000,
};

describe('predict: CLI arguments', () => {
  it('parses the documented options', () => {
    const parsed = parsePredictArgs([
      'train.py::train_step', '--setup', 'make_inputs', '--setup-arg', 'batch=64', '--setup-arg', 'name=gpt',
      '--device-memory', '80GiB', '--amp', 'bf16', '--checkpoint', 'h.*', '--max-batch', 'batch', '--format=json',
    ]);
    assert.deepEqual(parsed.options.setupArgs, { batch: 64, name: 'gpt' });
    assert.equal(parsed.options.deviceMemoryBytes, 80 * GiB);
    assert.equal(parsed.options.amp, 'bf16');
    assert.equal(parsed.options.checkpoint, 'h.*');
    assert.equal(parsed.maxBatchArg, 'batch');
    assert.equal(parsed.format, 'json');
  });

  it('--gpu names the target: its memory (unless --device-memory is given) and compute capability', () => {
    const h100 = parsePredictArgs(['train.py::step', '--setup', 'f', '--gpu', 'NVIDIA H100']).options;
    assert.equal(h100.deviceMemoryBytes, 81_559 * 1024 ** 2);
    assert.equal(h100.computeCapability, '9.0');
    assert.deepEqual(predictArgs(h100).slice(-2), ['--compute-capability', '9.0']);
    const given = parsePredictArgs(['train.py::step', '--setup', 'f', '--gpu', 'a100 80gb', '--device-memory', '70GiB']).options;
    assert.equal(given.deviceMemoryBytes, 70 * GiB);
    assert.equal(given.computeCapability, '8.0');
    assert.equal(parsePredictArgs(['train.py::step', '--setup', 'f', '--compute-capability', '8.9']).options.computeCapability, '8.9');
    assert.equal(parsePredictArgs(['train.py::step', '--setup', 'f']).options.computeCapability, null);
    assert.ok(!predictArgs(parsePredictArgs(['train.py::step', '--setup', 'f']).options).includes('--compute-capability'));
    assert.throws(() => parsePredictArgs(['train.py::step', '--setup', 'f', '--gpu', 'Voodoo 2']), /--gpu Voodoo 2: not a GPU memhint knows \(H200, H100/);
    assert.throws(() => parsePredictArgs(['train.py::step', '--setup', 'f', '--compute-capability', 'sm90']), /not MAJOR.MINOR/);
  });

  it('--world-sizes N,N,.. or, as profile spells one world size, --nproc-per-node N', () => {
    const args = (...rest: string[]) => parsePredictArgs(['train.py::step', '--setup', 'f', ...rest]);
    assert.deepEqual(args('--world-sizes', '64,1,8,2').worldSizes, [1, 2, 8, 64]);
    assert.deepEqual(args('--nproc-per-node', '8').worldSizes, [8]);
    assert.equal(args().worldSizes, null);
    assert.equal(args('--nproc-per-node', '2').options.warmup, 2); // DDP's bucket rebuild, as with --world-sizes
    assert.throws(() => args('--nproc-per-node', '2', '--world-sizes', '2,4'), /give --world-sizes or --nproc-per-node, not both/);
    assert.throws(() => args('--nproc-per-node', '0'), /--nproc-per-node: "0" is not a positive integer/);
    assert.throws(() => args('--world-sizes', '2,x'), /--world-sizes: "2,x" is not a list of positive integers/);
  });

  it('reads setup-arg values as JSON, else as strings', () => {
    assert.deepEqual(parseSetupArg('lr=0.5'), ['lr', 0.5]);
    assert.deepEqual(parseSetupArg('flag=true'), ['flag', true]);
    assert.deepEqual(parseSetupArg('attn=eager'), ['attn', 'eager']);
    assert.throws(() => parseSetupArg('=3'), /KEY=VALUE/);
  });

  it('refuses bad usage with one clear message', () => {
    assert.throws(() => parsePredictArgs(['train.py']), /step function/);
    assert.throws(() => parsePredictArgs(['train.py::step']), /--setup/);
    assert.throws(() => parsePredictArgs(['train.py::step', '--setup', 'f', '--device', 'cpu']), /only cuda/);
    assert.throws(() => parsePredictArgs(['train.py::step', '--setup', 'f', '--amp', 'fp8']), /bf16 or fp16/);
    assert.throws(() => parsePredictArgs(['train.py::step', '--setup', 'f', '--max-batch', 'batch']), /--device-memory/);
    assert.throws(() => parsePredictArgs(['train.py::step', '--setup', 'f', '--device-memory', 'lots']), /not a size/);
  });
});

describe('predict: --max-batch bisection', () => {
  it('finds the largest fitting batch and returns the curve', async () => {
    // 1 GiB of state + 0.3 GiB per sample: 80 GiB fits 259 samples (1 + 0.3 * 259 = 78.7; 260 -> 79.0 ... )
    const reserved = (b: number): number => Math.round((1 + 0.3 * b) * GiB);
    const expected = Math.floor((80 - 1) / 0.3);
    const calls: number[] = [];
    const result = await maxBatch(fakePredictor(reserved, calls), base, 'batch', 8, 80 * GiB);
    assert.equal(result.best, expected);
    assert.ok(reserved(expected) <= 80 * GiB && reserved(expected + 1) > 80 * GiB);
    assert.deepEqual(result.curve.map((p) => p.value), [...new Set(calls)].sort((a, b) => a - b));
    assert.ok(calls.length <= 20);
    assert.equal(new Set(calls).size, calls.length, 'no batch predicted twice');
  });

  it('goes down from the start when it does not fit, and says when nothing fits', async () => {
    const none = await maxBatch(fakePredictor(() => 100 * GiB, []), base, 'batch', 16, 80 * GiB);
    assert.equal(none.best, null);
    assert.deepEqual(none.curve.map((p) => p.value), [1, 2, 4, 8, 16]);
    const some = await maxBatch(fakePredictor((b) => b * GiB, []), base, 'batch', 64, 5 * GiB);
    assert.equal(some.best, 5);
  });

  it('counts a failing prediction as not fitting', async () => {
    const result = await maxBatch(fakePredictor(() => GiB, []), base, 'batch', 600, 80 * GiB);
    assert.equal(result.best, 1000);
    assert.ok(result.curve.some((p) => p.error === 'too big'));
  });
});

describe('predict: what-if helpers', () => {
  it('picks the repeated block class for --checkpoint advice', () => {
    const m = (path: string, type: string): ModuleStats => ({
      root: 'GPT', path, type, calls: 1, params: 0, grads: 0, optimizer: 0, saved: 0, forward_alloc: 0, backward_alloc: 0, live_at_peak: 0,
    });
    const modules = [m('', 'GPT'), m('h', 'ModuleList'), m('h.0', 'Block'), m('h.0.mlp', 'MLP'), m('h.0.mlp.fc', 'Linear'),
      m('h.1', 'Block'), m('h.1.mlp', 'MLP'), m('h.1.mlp.fc', 'Linear'), m('h.0.ln', 'LayerNorm'), m('h.1.ln', 'LayerNorm'), m('head', 'Linear')];
    // Block and MLP both repeat twice; Linear and LayerNorm are leaves.
    assert.ok(['Block', 'MLP'].includes(repeatedBlockType(modules) ?? ''));
    assert.equal(repeatedBlockType([m('', 'Net'), m('fc', 'Linear')]), null);
  });
});

describe('predict: torch version gate (system python)', function () {
  this.timeout(300_000);
  const python = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

  it('answers one line on torch < 2.0, predicts on torch >= 2.0', async () => {
    const { execFileSync } = await import('node:child_process');
    const path = await import('node:path');
    const { childPredictor } = await import('../../src/predict/run');
    const version = execFileSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf-8' }).trim();
    const outcome = await childPredictor()({
      ...base,
      script: path.resolve(__dirname, '../../../test/fixtures/predict/mlp.py'),
      setupArgs: { batch: 4 },
      python,
      deviceMemoryBytes: null,
      timeoutMs: 240_000,
    });
    if (Number(version.split('.')[0]) < 2) {
      assert.equal(outcome.failure?.kind, 'unsupported_torch');
      assert.match(outcome.failure.message, /^memhint predict needs torch >= 2\.0 .* has torch 1\./);
      assert.ok(!outcome.failure.message.includes('\n'));
    } else {
      assert.equal(outcome.failure, null);
      assert.equal(outcome.report?.mode, 'predicted');
    }
  });

  it('--world-sizes with FSDP: on torch < 2.0 one line, asked once for all world sizes', async function () {
    const { execFileSync } = await import('node:child_process');
    const path = await import('node:path');
    const { childPredictor } = await import('../../src/predict/run');
    const { predictWorldSizes } = await import('../../src/predict/ranks');
    const version = execFileSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf-8' }).trim();
    if (Number(version.split('.')[0]) >= 2) this.skip(); // torch 2 predicts FSDP: test/unit/predict-fsdp.test.ts
    const asked: number[] = [];
    const predictor = childPredictor();
    const outcome = await predictWorldSizes((o) => (asked.push(o.worldSize ?? 0), predictor(o)), {
      ...base, script: path.resolve(__dirname, '../../../test/fixtures/predict/fsdp_mlp.py'), setupArgs: { api: 'fsdp2' },
      python, deviceMemoryBytes: null, timeoutMs: 240_000,
    }, [2, 8, 64]);
    assert.deepEqual(asked, [2]);
    assert.equal(outcome.failure?.kind, 'unsupported_torch');
    assert.match(outcome.failure.message, /^memhint predict needs torch >= 2\.0 .* has torch 1\./);
    assert.ok(!outcome.failure.message.includes('\n'));
  });
});
