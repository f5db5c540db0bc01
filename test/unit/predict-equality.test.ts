// Correctness evidence of `memhint predict`: for the same model and batch, the prediction on meta tensors
// equals the CPU backend's measurement (`profile --backend cpu`) line by line and kind by kind, in raw tensor
// bytes (before the allocator model). The differences that must exist are asserted exactly too:
// - Adam/AdamW keep a 4-byte float32 `step` tensor per parameter on the host with CUDA (neither capturable
//   nor fused), so the CPU measurement has 4 x (parameter tensors) more optimizer state;
// - 0-dim tensors made without a device (`torch.tensor(1.0)`) are host scalars with CUDA: a line may differ
//   by such allocations only (at most 8 bytes each);
// - nn.LSTM: the CPU precomputes the input projection of the whole sequence, meta (like CUDA without cuDNN)
//   runs it per timestep; only the lines outside the LSTM are equal (docs/predict.md).
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { runProfile } from '../../src/profiler/launcher';
import type { LineStats, MemoryCounters, ProfileReport } from '../../src/profiler/report';
import { childPredictor } from '../../src/predict/run';
import type { PredictedReport } from '../../src/predict/schema';
import { REPO, torch2Python } from './predict-torch2';

const FIXTURES = path.join(REPO, 'test/fixtures/predict');

async function measure(script: string, setupArgs: Record<string, unknown>): Promise<ProfileReport> {
  const outcome = await runProfile(
    {
      script: path.join(FIXTURES, script),
      function: 'train_step',
      setup: 'make_inputs',
      setupArgs,
      warmup: 1,
      steps: 1,
      maxSeconds: null,
      backend: 'cpu',
      python: torch2Python(),
      budgetBytes: null,
      memoryLimitBytes: null,
      timeoutMs: 300_000,
      scriptArgs: [],
    },
    { onSpawn: () => undefined },
  );
  assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}\n${outcome.failure.stderrTail}` : '');
  assert.ok(outcome.report);
  return outcome.report;
}

async function predict(script: string, setupArgs: Record<string, unknown>, computeCapability: string | null = null): Promise<PredictedReport> {
  const outcome = await childPredictor()({
    script: path.join(FIXTURES, script),
    function: 'train_step',
    setup: 'make_inputs',
    setupArgs,
    python: torch2Python(),
    deviceMemoryBytes: null,
    amp: null,
    checkpoint: null,
    maxSplitSizeBytes: null,
    computeCapability,
    warmup: 1,
    steps: 1,
    timeoutMs: 300_000,
  });
  assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}\n${outcome.failure.traceback ?? ''}\n${outcome.failure.stderrTail}` : '');
  assert.ok(outcome.report);
  return outcome.report;
}

const counters = (l: LineStats): Record<string, MemoryCounters> => ({ self: l.self, inclusive: l.inclusive, backward: l.backward });

/** Equal, or different only by host scalars: every extra allocation at most 8 bytes, allocated == freed. */
function equalModuloHostScalars(measured: MemoryCounters, predicted: MemoryCounters): boolean {
  const allocs = measured.allocations - predicted.allocations;
  const bytes = measured.allocated - predicted.allocated;
  const freed = measured.freed - predicted.freed;
  if (allocs === 0) return bytes === 0 && freed === 0 && measured.peak === predicted.peak;
  return allocs > 0 && bytes > 0 && bytes <= 8 * allocs && freed === bytes;
}

function compareLines(measured: ProfileReport, predicted: ProfileReport, skip: ReadonlySet<number> = new Set()): number {
  const key = (l: LineStats): string => `${l.file}:${l.line}`;
  const predictedLines = new Map(predicted.lines.map((l) => [key(l), l]));
  let compared = 0;
  for (const m of measured.lines) {
    if (skip.has(m.line)) continue;
    const p = predictedLines.get(key(m));
    assert.ok(p, `line ${m.line} (${m.code}) measured but not predicted`);
    assert.equal(p.savedForBackward, m.savedForBackward, `saved for backward, line ${m.line}: ${m.code}`);
    const mc = counters(m);
    const pc = counters(p);
    for (const phase of Object.keys(mc)) {
      const exact = JSON.stringify(mc[phase]) === JSON.stringify(pc[phase]);
      assert.ok(
        exact || equalModuloHostScalars(mc[phase], pc[phase]),
        `line ${m.line} (${m.code}) ${phase}: measured ${JSON.stringify(mc[phase])} predicted ${JSON.stringify(pc[phase])}`,
      );
    }
    compared++;
  }
  for (const p of predicted.lines) {
    if (!skip.has(p.line)) assert.ok(measured.lines.some((m) => key(m) === key(p)), `line ${p.line} predicted but not measured`);
  }
  return compared;
}

interface Case {
  readonly script: string;
  readonly setupArgs: Record<string, unknown>;
  /** Parameter tensors with an Adam `step` counter (0 for SGD). */
  readonly adamParams: number;
}

const CASES: readonly Case[] = [
  // 3 Linear layers, weight + bias each.
  { script: 'mlp.py', setupArgs: { batch: 32 }, adamParams: 6 },
  // SGD with momentum has no step counter.
  { script: 'cnn.py', setupArgs: { batch: 8 }, adamParams: 0 },
  // wte, wpe, 2 x (ln1 2 + qkv 2 + proj 2 + ln2 2 + mlp 4), ln_f 2; the head is tied to wte.
  { script: 'gpt.py', setupArgs: { batch: 4, seq: 32 }, adamParams: 28 },
  // GPT-2, 2 layers: wte, wpe, 2 x 12, ln_f 2 (lm_head tied). Eager attention: the same algorithm on both sides.
  { script: 'hf_gpt2.py', setupArgs: { batch: 2, seq: 32, attn: 'eager' }, adamParams: 28 },
];

describe('predict: equals the CPU measurement byte for byte (torch 2)', function () {
  this.timeout(600_000);

  for (const c of CASES) {
    it(`${c.script} ${JSON.stringify(c.setupArgs)}`, async () => {
      const [measured, predicted] = await Promise.all([measure(c.script, c.setupArgs), predict(c.script, c.setupArgs)]);
      assert.equal(predicted.mode, 'predicted');
      assert.equal(predicted.environment.device, 'cuda (predicted)');
      const mPeak = measured.peak;
      const pPeak = predicted.peak;
      assert.ok(mPeak && pPeak);
      // Adam/AdamW: CUDA runs the foreach implementation (so does the prediction), the CPU the per-parameter
      // loop. Foreach allocates one list of denominators, one tensor per parameter tensor (measured on an
      // H200: 1x the parameters' bytes for GPT-2 small); the loop two temporaries per parameter, one at a time.
      const step = (report: ProfileReport) => report.lines.find((l) => l.code === 'opt.step()');
      const [mStep, pStep] = [step(measured), step(predicted)];
      assert.ok(mStep && pStep);
      const skip = new Set<number>();
      if (c.adamParams > 0) {
        assert.equal(pStep.self.allocated, pPeak.byKind.parameter, 'foreach: one denominator per parameter');
        assert.equal(pStep.self.allocations, c.adamParams);
        assert.equal(pStep.self.freed, pStep.self.allocated);
        assert.equal(mStep.self.allocated, 2 * pPeak.byKind.parameter, 'the CPU loop: two temporaries per parameter');
        skip.add(mStep.line);
      }
      assert.ok(compareLines(measured, predicted, skip) >= 3);
      const hostSteps = 4 * c.adamParams;
      // Where the optimizer differs (foreach predicted, the loop measured) and these small models peak inside
      // opt.step(), the peaks differ by the temporaries each keeps alive there (foreach: every parameter's
      // denominator at once; the loop: two temporaries of one parameter), either way round.
      const sameOptimizer = c.adamParams === 0;
      const kinds = sameOptimizer ? (['parameter', 'gradient', 'activation', 'input', 'temporary'] as const) : (['parameter', 'input'] as const);
      for (const kind of kinds) {
        assert.equal(pPeak.byKind[kind], mPeak.byKind[kind], `${kind} at the peak`);
      }
      assert.equal(mPeak.byKind.optimizer_state - pPeak.byKind.optimizer_state, hostSteps, 'optimizer state: the host step counters');
      if (sameOptimizer) assert.equal(mPeak.bytes - pPeak.bytes, hostSteps);
      // The step's allocations differ by the host scalars the lines differ by, and nothing else.
      const total = (report: ProfileReport) => report.lines.filter((l) => !skip.has(l.line)).reduce((sum, l) => sum + l.self.allocated, 0);
      const lineDiff = total(measured) - total(predicted);
      assert.ok(lineDiff >= 0 && lineDiff <= 8, `host scalars: ${lineDiff} bytes`);
      const stepDiff = skip.size === 0 ? 0 : mStep.self.allocated - pStep.self.allocated;
      assert.equal(measured.steps[0].allocated - predicted.steps[0].allocated, lineDiff + stepDiff);
      if (sameOptimizer) assert.equal(measured.steps[0].peakLive - predicted.steps[0].peakLive, hostSteps);
      // The per-module breakdown's root holds the model's parameters and optimizer state, once each.
      const root = predicted.modules.find((m) => m.path === '');
      assert.ok(root);
      assert.equal(root.params, pPeak.byKind.parameter);
      assert.equal(root.optimizer, pPeak.byKind.optimizer_state);
      assert.ok(root.saved > 0 && root.forward_alloc > 0 && root.backward_alloc > 0);
      const alloc = predicted.prediction.allocator;
      assert.ok(alloc.maxAllocatedBytes >= predicted.prediction.rawPeakBytes);
      assert.ok(alloc.maxReservedBytes >= alloc.maxAllocatedBytes);
    });
  }

  it('mlp.py: the cuBLAS workspaces (forward thread and backward thread) are in the allocator figures, sized by compute capability', async () => {
    // Measured on an H200 (torch 2.11): two 32 MiB blocks from setWorkspaceForHandle, one per thread that ran
    // a matmul; elsewhere PyTorch's default is 4096 KiB x 2 + 16 KiB x 8.
    const [a100, hopper] = await Promise.all([predict('mlp.py', { batch: 32 }), predict('mlp.py', { batch: 32 }, '9.0')]);
    assert.equal(a100.prediction.computeCapability, '8.0');
    assert.equal(a100.prediction.cublasWorkspaceBytes, 2 * 8_519_680);
    assert.equal(hopper.prediction.cublasWorkspaceBytes, 2 * 32 * 1024 ** 2);
    assert.equal(hopper.prediction.allocator.maxAllocatedBytes - a100.prediction.allocator.maxAllocatedBytes, 2 * (32 * 1024 ** 2 - 8_519_680));
    assert.equal(hopper.prediction.rawPeakBytes, a100.prediction.rawPeakBytes, 'workspaces are not tensors of the step');
    assert.ok(hopper.notes.some((n) => /included: 2 cuBLAS workspace\(s\) of 33554432 bytes/.test(n)), hopper.notes.join('\n'));
  });

  it('dropout_mlp.py: dropout keeps CUDA\'s 1-byte mask, not the CPU\'s float32 noise; every other line equal', async () => {
    const setupArgs = { batch: 64 };
    const [measured, predicted] = await Promise.all([measure('dropout_mlp.py', setupArgs), predict('dropout_mlp.py', setupArgs)]);
    const line = (report: ProfileReport) => report.lines.find((l) => l.code.startsWith('h = F.dropout('));
    const [m, p] = [line(measured), line(predicted)];
    assert.ok(m && p);
    const elements = 64 * 1024;
    // CPU: the noise tensor (float32) is saved for backward; CUDA (predicted): the bool mask.
    assert.equal(m.savedForBackward, 4 * elements);
    assert.equal(p.savedForBackward, elements);
    assert.equal(p.self.allocated, 4 * elements + elements, 'output (float32) + mask (bool)');
    // The saved mask / noise is released in backward while the node of the line before runs: that line's
    // backward, and backward()'s line inclusively, free 3 bytes per element less, and are otherwise equal.
    const find = (report: ProfileReport, start: string) => report.lines.find((l) => l.code.startsWith(start));
    const skip = new Set([m.line]);
    for (const [start, phase] of [['h = model[1](', 'backward'], ['loss.backward()', 'inclusive']] as const) {
      const [ml, pl] = [find(measured, start), find(predicted, start)];
      assert.ok(ml && pl);
      assert.equal(ml[phase].freed - pl[phase].freed, 3 * elements, `${start} ${phase} freed`);
      assert.equal(pl[phase].allocated, ml[phase].allocated, `${start} ${phase} allocated`);
      skip.add(ml.line);
    }
    compareLines(measured, predicted, skip);
  });

  it('lstm.py: equal outside the LSTM (whose CPU algorithm differs), parameters and gradients equal', async () => {
    const setupArgs = { batch: 4, seq: 16, cpu_fused: false };
    const [measured, predicted] = await Promise.all([measure('lstm.py', setupArgs), predict('lstm.py', setupArgs)]);
    const forward = measured.lines.find((l) => l.code.startsWith('logits = model('));
    const backward = measured.lines.find((l) => l.code === 'loss.backward()');
    assert.ok(forward && backward);
    const lstmLines = measured.lines.filter((l) => l.code.startsWith('h, _ = self.rnn(')).map((l) => l.line);
    const step = measured.lines.find((l) => l.code === 'opt.step()');
    assert.ok(step);
    // opt.step(): Adam's foreach implementation on CUDA (predicted) vs the CPU's loop, as in the cases above.
    compareLines(measured, predicted, new Set([forward.line, backward.line, step.line, ...lstmLines]));
    assert.ok(measured.peak && predicted.peak);
    assert.equal(predicted.peak.byKind.parameter, measured.peak.byKind.parameter);
    assert.equal(predicted.peak.byKind.gradient, measured.peak.byKind.gradient);
    assert.equal(measured.peak.byKind.optimizer_state - predicted.peak.byKind.optimizer_state, 4 * 11);
  });
});

describe('predict: what cannot be predicted fails with the line (torch 2)', function () {
  this.timeout(300_000);

  it('boolean-mask indexing (data-dependent size) names the op and the line', async () => {
    const outcome = await childPredictor()({
      script: path.join(FIXTURES, 'data_dependent.py'),
      function: 'train_step',
      setup: 'make_inputs',
      setupArgs: {},
      python: torch2Python(),
      deviceMemoryBytes: null,
      amp: null,
      checkpoint: null,
      maxSplitSizeBytes: null,
      warmup: 1,
      steps: 1,
      timeoutMs: 240_000,
    });
    assert.equal(outcome.failure?.kind, 'user_exception');
    assert.match(outcome.failure.message, /depends on tensor values/);
    assert.equal(outcome.failure.location?.line, 10);
  });
});

describe('predict: what-ifs change what they should (torch 2)', function () {
  this.timeout(600_000);

  it('--amp bf16 saves bf16 copies as CUDA autocast does; --checkpoint keeps only the blocks\' inputs', async () => {
    const run = async (amp: 'bf16' | null, checkpoint: string | null): Promise<PredictedReport> => {
      const outcome = await childPredictor()({
        script: path.join(FIXTURES, 'gpt.py'),
        function: 'train_step',
        setup: 'make_inputs',
        setupArgs: { batch: 4, seq: 32 },
        python: torch2Python(),
        deviceMemoryBytes: null,
        amp,
        checkpoint,
        maxSplitSizeBytes: null,
        warmup: 1,
        steps: 1,
        timeoutMs: 300_000,
      });
      assert.equal(outcome.failure, null, outcome.failure?.message);
      assert.ok(outcome.report);
      return outcome.report;
    };
    const [base, amp, ckpt] = await Promise.all([run(null, null), run('bf16', null), run(null, 'h.*')]);
    const saved = (r: PredictedReport, p: string): number => r.modules.find((m) => m.path === p)?.saved ?? NaN;
    // h.0.mlp = Linear(128, 512), GELU, Linear(512, 128) on 4 x 32 = 128 tokens. In float32 it saves the first
    // Linear's input, GELU's input and the second Linear's input (parameters are not step allocations).
    // Under bf16 autocast each Linear saves a bf16 copy of its input and of its weight (the cached casts are
    // new allocations, as on CUDA), GELU runs on the bf16 output.
    const tokens = 128;
    assert.equal(saved(base, 'h.0.mlp'), 4 * (tokens * 128 + tokens * 512 + tokens * 512));
    assert.equal(saved(amp, 'h.0.mlp'), 2 * (tokens * 128 + 512 * 128 + tokens * 512 + tokens * 512 + 128 * 512));
    assert.equal(amp.prediction.amp, 'bf16');
    // (No claim on the peak: for a model this small the bf16 weight copies outweigh the activations saved.)
    // Non-reentrant checkpointing keeps only each block's input (saved by checkpoint's _NoopSaveInputs),
    // nothing of what runs inside: 128 tokens x 128 float32.
    assert.equal(saved(ckpt, 'h.0'), tokens * 128 * 4);
    assert.equal(saved(ckpt, 'h.1'), tokens * 128 * 4);
    assert.equal(saved(ckpt, 'h.0.mlp'), 0);
    assert.ok(saved(ckpt, '') < saved(base, ''));
    // Parameters and optimizer state do not change with either.
    for (const r of [amp, ckpt]) {
      assert.equal(r.peak?.byKind.parameter, base.peak?.byKind.parameter);
    }
  });
});
