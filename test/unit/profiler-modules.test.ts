// Per-module breakdown on a library model: a Hugging Face GPT-2 built from a config (random init, no
// download) on torch 2.x, where every byte otherwise lands on `out = model(...)`.
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { formatReport } from '../../src/profiler/format';
import { runProfile } from '../../src/profiler/launcher';
import type { ModuleStats, ProfileReport } from '../../src/profiler/report';
import { TORCH1_PYTHON, torch2Python } from './torch2';

const FIXTURES = path.resolve(__dirname, '../../../test/fixtures/profiler');
const SCRIPT = path.join(FIXTURES, 'hf_gpt2.py');
const C = 64; // n_embd
const C_FC = (C * 4 * C + 4 * C) * 4; // Conv1D(4C, C): weight C x 4C, bias 4C, float32 = 66,560 bytes
const C_ATTN = (C * 3 * C + 3 * C) * 4; // 49,920 bytes
const STEPS = 2;

export function childrenOf(modules: readonly ModuleStats[], parent: ModuleStats): ModuleStats[] {
  const depth = parent.path === '' ? 0 : parent.path.split('.').length;
  return modules.filter(
    (m) => m.root === parent.root && m.path !== parent.path && (parent.path === '' || m.path.startsWith(`${parent.path}.`)) &&
      m.path.split('.').length === depth + 1,
  );
}

describe('profiler: per-module breakdown of a Hugging Face GPT-2 (torch 2.x)', function () {
  this.timeout(300_000);
  let report: ProfileReport;
  let byPath: Map<string, ModuleStats>;
  before(async () => {
    const outcome = await runProfile({
      script: SCRIPT, function: 'train_step', setup: null, warmup: 1, steps: STEPS, maxSeconds: null, backend: 'cpu',
      python: torch2Python(), budgetBytes: null, memoryLimitBytes: null, timeoutMs: 240_000, scriptArgs: [],
    });
    assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}\n${outcome.failure.stderrTail}` : '');
    assert.ok(outcome.report?.modules);
    report = outcome.report;
    byPath = new Map(report.modules!.map((m) => [m.path, m]));
  });

  it('lists the model\'s modules by path, with their real parameter bytes', () => {
    for (const p of ['', 'transformer', 'transformer.h.0.mlp.c_fc', 'transformer.h.1.attn.c_attn', 'transformer.ln_f', 'lm_head']) {
      assert.ok(byPath.has(p), `module "${p}" missing: ${[...byPath.keys()].join(', ')}`);
    }
    const fc = byPath.get('transformer.h.0.mlp.c_fc')!;
    assert.equal(fc.type, 'Conv1D');
    assert.equal(fc.params, C_FC);
    assert.equal(fc.grads, C_FC, 'every parameter gets a gradient');
    assert.equal(byPath.get('transformer.h.1.attn.c_attn')?.params, C_ATTN);
    assert.equal(fc.calls, 1);
  });

  it('agrees with the per-line and per-kind totals', () => {
    const root = byPath.get('')!;
    assert.equal(root.root, 'GPT2LMHeadModel');
    assert.equal(root.params, report.peak?.byKind.parameter);
    assert.equal(root.optimizer, report.peak?.byKind.optimizer_state);
    // Everything the model line allocated, saved and caused in backward happened inside the model.
    const line = report.lines.find((l) => l.code === 'out = model(input_ids, labels=input_ids)');
    assert.ok(line);
    assert.equal(root.forward_alloc, line.self.allocated / STEPS);
    assert.equal(root.saved, line.savedForBackward / STEPS);
    assert.equal(root.backward_alloc, line.backward.allocated / STEPS);
  });

  it('includes each module\'s submodules in its figures', () => {
    for (const parent of report.modules!) {
      const children = childrenOf(report.modules!, parent);
      if (children.length === 0) continue;
      for (const key of ['forward_alloc', 'saved', 'backward_alloc', 'params'] as const) {
        const sum = children.reduce((s, c) => s + c[key], 0);
        assert.ok(sum <= parent[key] || key === 'params', `${parent.path}.${key}: children ${sum} > ${parent[key]}`);
      }
    }
    const mlp = byPath.get('transformer.h.0.mlp')!;
    const parts = childrenOf(report.modules!, mlp).reduce((s, c) => s + c.params, 0);
    assert.equal(mlp.params, parts, 'an MLP holds only its submodules\' parameters');
  });

  it('shows the module tree in the text report', () => {
    const text = formatReport(report, () => null);
    assert.match(text, /^Modules \(per step/m);
    assert.match(text, /^ {8}mlp \(GPT2MLP\) /m);
  });
});

// timm's --grad-checkpointing on torch 2.13 charged the loss, backward and optimizer of later steps to
// layer1: non-reentrant checkpoint recomputation raises out of the block's forward once it has what
// backward needs, and the block stayed on the module stack. Every activation is 8 x 64 float32.
for (const [label, python] of [['torch 1.13', (): string => TORCH1_PYTHON], ['torch 2.x', torch2Python]] as const) {
  describe(`profiler: modules under torch.utils.checkpoint's early-stopping recomputation (${label})`, function () {
    this.timeout(300_000);
    it('charges the block its own forward only, and nothing after the recomputation', async () => {
      const outcome = await runProfile({
        script: path.join(FIXTURES, 'checkpoint_early_stop.py'), function: null, setup: null, warmup: 1, steps: 3,
        maxSeconds: null, backend: 'cpu', python: python(), budgetBytes: null, memoryLimitBytes: null, timeoutMs: 240_000, scriptArgs: [],
      });
      assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}\n${outcome.failure.stderrTail}` : '');
      const byPath = new Map((outcome.report?.modules ?? []).map((m) => [m.path, m]));
      const ACT = 8 * 64 * 4;
      const FC = (64 * 64 + 64) * 4;
      const block = byPath.get('block');
      assert.equal(block?.calls, 2, 'the forward and its recomputation');
      assert.equal(block?.forward_alloc, 3 * ACT, 'fc, relu and `+ 1.0` outputs, per step');
      assert.equal(block?.live_at_peak, FC, 'its gradients at the peak (in opt.step()), no Adam temporaries');
      assert.equal(byPath.get('')?.forward_alloc, 3 * ACT + 8 * 4, 'the block and the head\'s output, not the loss');
    });
  });
}

// nanoGPT's `model = torch.compile(model)`: the tree was rooted at `OptimizedModule`, every path under
// `_orig_mod.`, and torch warned at each call about the harness's global hooks.
describe('profiler: modules of a torch.compile\'d model (torch 2.x)', function () {
  this.timeout(300_000);
  it('reads as the model it wraps, with no warning about the harness\'s hooks', async () => {
    let stderr = '';
    const outcome = await runProfile({
      script: path.join(FIXTURES, 'compiled_module.py'), function: null, setup: null, warmup: 1, steps: 3,
      maxSeconds: null, backend: 'cpu', python: torch2Python(), budgetBytes: null, memoryLimitBytes: null, timeoutMs: 240_000, scriptArgs: [],
    }, { onStderr: (c) => (stderr += c.toString()) });
    assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}\n${outcome.failure.stderrTail}` : '');
    const rows = (outcome.report?.modules ?? []).map((m) => [m.root, m.path, m.type, m.calls, m.params, m.forward_alloc]);
    assert.deepEqual(rows, [
      ['Net', '', 'Net', 1, (32 * 64 + 64 + 64 + 1) * 4, 2 * 16 * 64 * 4 + 16 * 4],
      ['Net', 'fc1', 'Linear', 1, (32 * 64 + 64) * 4, 16 * 64 * 4],
      ['Net', 'act', 'ReLU', 1, 0, 16 * 64 * 4],
      ['Net', 'fc2', 'Linear', 1, (64 + 1) * 4, 16 * 4],
    ]);
    assert.doesNotMatch(stderr, /global hooks/);
  });
});
