// Inline training loops (no step function): the harness finds the loop, each iteration is a step, with
// warmup, leaks across iterations and a clean stop. On a nanoGPT-shaped script, on torch 1.13 and 2.x;
// figures are analytic (see the comments) and checked byte-exact.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { formatReport } from '../../src/profiler/format';
import { findHarnessRoot, runProfile, type ProfileOptions, type ProfileOutcome } from '../../src/profiler/launcher';
import type { LineStats, ProfileReport } from '../../src/profiler/report';
import { TORCH1_PYTHON, torch2Python } from './torch2';

const FIXTURES = path.resolve(__dirname, '../../../test/fixtures/profiler');
const NANO = path.join(FIXTURES, 'nanogpt', 'train.py');
const NANO_MODEL = path.join(FIXTURES, 'nanogpt', 'model.py');
const lineNumber = (file: string, text: string): number => {
  const index = fs.readFileSync(file, 'utf-8').split('\n').findIndex((l) => l.trim() === text);
  assert.ok(index >= 0, text);
  return index + 1;
};

// The fixture's GPT: n_layer 2, n_embd C = 32, vocab V = 64, block T = 16, biases, lm_head tied to wte.
const C = 32;
const V = 64;
const T = 16;
const B = 4; // batch_size
const MICRO = 2; // gradient_accumulation_steps
const BLOCK_PARAMS = 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + 2 * C + (C * 4 * C + 4 * C) + (4 * C * C + C);
const PARAMS = 4 * (V * C + T * C + 2 * BLOCK_PARAMS + 2 * C); // 112,128 bytes
const PARAM_TENSORS = 2 + 2 * 12 + 2; // wte (= lm_head), wpe, 12 per block, ln_f
const CAUSAL_MASKS = 2 * T * T * 4; // torch 1.13 only (no scaled_dot_product_attention): one buffer per block
// get_batch(): ix (B int64), stack of B rows of T int64 for x and y, and the 0-d tensors of `i + ...`
const GET_BATCH = B * 8 + (B * T * 8 + B * 8) + (B * T * 8 + 3 * B * 8); // 1,184 bytes
const LOGITS = B * T * V * 4; // 16,384 bytes per micro-step

function ok(outcome: ProfileOutcome): ProfileReport {
  assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}\n${outcome.failure.stderrTail}` : '');
  assert.ok(outcome.report);
  return outcome.report;
}

function lineOf(report: ProfileReport, file: string, code: string): LineStats {
  const found = report.lines.find((l) => l.file === file && l.code === code);
  assert.ok(found, `no line "${code}"`);
  return found;
}

for (const [label, python] of [
  ['torch 1.13', (): string => TORCH1_PYTHON],
  ['torch 2.x', torch2Python],
] as const) {
  describe(`profiler: inline training loops (${label})`, function () {
    this.timeout(300_000);
    const options = (overrides: Partial<ProfileOptions>): ProfileOptions => ({
      script: NANO,
      function: null,
      setup: null,
      warmup: 1,
      steps: 3,
      maxSeconds: null,
      backend: 'cpu',
      python: python(),
      budgetBytes: null,
      memoryLimitBytes: null,
      timeoutMs: 240_000,
      scriptArgs: [],
      ...overrides,
    });

    describe('nanoGPT-style train.py, no target: the `while True:` loop', () => {
      let report: ProfileReport;
      let stdout = '';
      before(async () => {
        report = ok(await runProfile(options({}), { onStdout: (c) => (stdout += c.toString()) }));
      });

      it('picks the while loop (backward and step), not the micro-step loop (backward only)', () => {
        assert.equal(report.target.kind, 'loop');
        assert.equal(report.target.loopLine, lineNumber(NANO, 'while True:'));
        assert.equal(report.partial, false);
        assert.equal(report.steps.length, 3);
        assert.deepEqual(report.timeline.steps.map((s) => s.warmup), [true, false, false, false]);
      });

      it('stops the script at the loop header after warmup + steps iterations', () => {
        assert.equal(stdout.match(/^iter \d+:/gm)?.length, 4, stdout);
        assert.doesNotMatch(stdout, /training done/);
      });

      it('counts micro-steps per iteration and measures get_batch exactly', () => {
        assert.equal(lineOf(report, NANO, 'logits, loss = model(X, Y)').calls, 3 * MICRO);
        assert.equal(lineOf(report, NANO, 'X, Y = get_batch("train")').inclusive.allocated, 3 * MICRO * GET_BATCH);
        assert.equal(lineOf(report, NANO, 'while True:').calls, 3);
      });

      it('measures parameters and AdamW state byte-exact at the peak', () => {
        const torch2 = Number(report.environment.torchVersion.split('.')[0]) >= 2;
        assert.equal(report.peak?.byKind.parameter, PARAMS + (torch2 ? 0 : CAUSAL_MASKS));
        assert.equal(report.peak?.byKind.optimizer_state, 2 * PARAMS + 4 * PARAM_TENSORS);
        // The peak is in the second micro-step's forward: the first one's gradients are live.
        assert.equal(report.peak?.byKind.gradient, PARAMS);
      });

      it('breaks memory down by module: c_fc\'s parameters, GELU\'s saved input, the model\'s totals', () => {
        const modules = new Map((report.modules ?? []).map((m) => [m.path, m]));
        const fc = modules.get('transformer.h.0.mlp.c_fc');
        assert.equal(fc?.params, (C * 4 * C + 4 * C) * 4);
        assert.equal(fc?.calls, MICRO);
        assert.equal(fc?.forward_alloc, MICRO * B * T * 4 * C * 4, 'its output, each micro-step');
        assert.equal(modules.get('transformer.h.0.mlp.gelu')?.saved, MICRO * B * T * 4 * C * 4, 'GELU saves its input');
        const root = modules.get('');
        assert.equal(root?.root, 'GPT');
        assert.equal(root?.params, report.peak?.byKind.parameter);
        assert.equal(root?.grads, PARAMS);
        assert.equal(root?.optimizer, 2 * PARAMS + 4 * PARAM_TENSORS);
        const model = lineOf(report, NANO, 'logits, loss = model(X, Y)');
        assert.equal(root?.forward_alloc, model.inclusive.allocated / 3);
      });

      it('finds no leak in a loop that prefetches the next batch', () => {
        assert.deepEqual(report.leaks, []);
      });
    });

    it('finds the leak of logits kept in a list across iterations, and who holds it', async () => {
      const report = ok(await runProfile(options({ scriptArgs: ['--keep_logits=True'] })));
      assert.equal(report.leaks.length, 1, JSON.stringify(report.leaks));
      const [leak] = report.leaks;
      assert.equal(leak.file, NANO_MODEL);
      assert.equal(leak.code, 'logits = self.lm_head(x)');
      assert.deepEqual(leak.bytesByStep, [MICRO * LOGITS, MICRO * LOGITS]);
      assert.match(leak.heldBy ?? '', /logits_log/);
    });

    it('train.py:LINE makes each micro-step a step', async () => {
      const micro = lineNumber(NANO, 'for micro_step in range(gradient_accumulation_steps):');
      const report = ok(await runProfile(options({ loopLine: micro, scriptArgs: ['--keep_logits=True'] })));
      assert.equal(report.target.loopLine, micro);
      assert.equal(report.steps.length, 3);
      assert.equal(lineOf(report, NANO, 'logits, loss = model(X, Y)').calls, 3);
      assert.deepEqual(report.leaks.map((l) => [l.code, l.bytesByStep]), [['logits = self.lm_head(x)', [LOGITS, LOGITS]]]);
    });

    // timm's train.py over its PrefetchLoader reported each batch as a 48 KiB leak per step: the loader
    // makes batch k+2 while iteration k ends, so it is alive when step k+2 starts, and freed a step later.
    describe('a loader that prefetches two batches ahead (timm\'s PrefetchLoader shape)', () => {
      const script = path.join(FIXTURES, 'prefetch_pipeline.py');
      const BATCH = 8 * 64 * 4;
      it('reports no leak, and a note names the line that holds each batch for a while', async () => {
        const report = ok(await runProfile(options({ script })));
        assert.equal(report.target.loopLine, lineNumber(script, 'for x in prefetch(raw_batches(20)):'));
        assert.deepEqual(report.leaks, []);
        const line = lineNumber(script, 'upcoming, tag = raw.to(torch.float32).div_(255.0), torch.zeros(2)');
        assert.ok(report.notes.some((n) => n.startsWith(`prefetch_pipeline.py:${line} (prefetch) keeps each step's tensors alive into a later step`)),
          report.notes.join('\n'));
      });

      it('also when the same line\'s small tensors live a step longer (8 bytes of 2,056 per step)', async () => {
        const report = ok(await runProfile(options({ script, scriptArgs: ['--straggler'] })));
        assert.deepEqual(report.leaks, []);
        assert.ok(report.notes.some((n) => /prefetch_pipeline\.py:\d+ \(prefetch\) keeps each step's tensors alive/.test(n)), report.notes.join('\n'));
      });

      it('still reports the same line\'s batches as a leak when a list keeps them', async () => {
        const report = ok(await runProfile(options({ script, scriptArgs: ['--keep'] })));
        assert.deepEqual(report.leaks.map((l) => [l.code, l.bytesByStep, l.heldBy]),
          [['upcoming, tag = raw.to(torch.float32).div_(255.0), torch.zeros(2)', [BATCH, BATCH], '`kept` in <module>() (list)']]);
        assert.ok(!report.notes.some((n) => /keeps each step's tensors alive/.test(n)), report.notes.join('\n'));
      });
    });
  });
}

describe('profiler: loop targets and the working directory', function () {
  this.timeout(180_000);
  const base = (overrides: Partial<ProfileOptions>): ProfileOptions => ({
    script: NANO, function: null, setup: null, warmup: 1, steps: 3, maxSeconds: 30, backend: 'cpu',
    python: TORCH1_PYTHON, budgetBytes: null, memoryLimitBytes: null, timeoutMs: 120_000, scriptArgs: [], ...overrides,
  });

  it('a line that starts no loop is a clear error listing the loops', async () => {
    const { failure, report } = await runProfile(base({ loopLine: 3 }));
    assert.equal(failure?.kind, 'missing_target');
    assert.match(failure?.message ?? '', /no for\/while loop starts on line 3 \(loops start on lines: .*87/);
    assert.equal(report, null);
  });

  it('a script without a training loop is profiled whole, and the report says why', async () => {
    const script = path.join(FIXTURES, 'whole_script.py');
    const report = ok(await runProfile(base({ script })));
    assert.equal(report.target.kind, 'script');
    assert.ok(report.notes.some((n) => /no training loop found/.test(n)), report.notes.join('\n'));
  });

  it('a timeit.py in the working directory does not shadow the standard library (torch 1.13 and 2.x)', async () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-cwd-'));
    try {
      fs.writeFileSync(path.join(cwd, 'timeit.py'), 'raise ImportError("the working directory\'s timeit.py was imported")\n');
      for (const python of [TORCH1_PYTHON, torch2Python()]) {
        const script = path.join(FIXTURES, 'stdlib_user.py');
        const report = ok(await runProfile(base({ script, function: 'step', python, cwd })));
        assert.equal(report.steps.length, 3);
      }
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  // minGPT's chargpt.py calls Trainer.run() in mingpt/trainer.py and has no loop itself: it was profiled
  // whole, as one step, for --max-seconds (30 s of sampling text). The loop of an imported user module
  // that the script calls into is now the training loop.
  it('finds the training loop in a module of the user\'s that the script imports and runs (torch 1.13 and 2.x)', async () => {
    const dir = path.join(FIXTURES, 'imported_loop');
    const trainer = path.join(dir, 'trainlib', 'trainer.py');
    for (const python of [TORCH1_PYTHON, torch2Python()]) {
      let stdout = '';
      const report = ok(await runProfile(base({ script: path.join(dir, 'run.py'), python, scriptArgs: ['--keep-losses'] }),
        { onStdout: (c) => (stdout += c.toString()) }));
      assert.equal(report.target.kind, 'loop');
      assert.equal(report.target.loopFile, trainer);
      assert.equal(report.target.loopLine, lineNumber(trainer, 'while True:'));
      assert.equal(formatReport(report, () => null).split('\n')[0],
        `memhint profile — ${path.join(dir, 'run.py')} — loop at ${trainer}:${report.target.loopLine} (each iteration of the loop is a step)`);
      assert.equal(report.steps.length, 3);
      assert.equal(lineOf(report, trainer, 'loss.backward()').calls, 3);
      assert.doesNotMatch(stdout, /trained all iterations/, 'stopped after warmup + steps of the 6 iterations');
      assert.ok(report.notes.some((n) => /run\.py has no training loop: profiled the one it runs in .*trainer\.py:\d+/.test(n)), report.notes.join('\n'));
      const root = (report.modules ?? []).find((m) => m.path === '');
      assert.equal(root?.params, (32 * 32 + 32) * 4);
      assert.equal(root?.grads, (32 * 32 + 32) * 4);
      // backward() freed what the kept graphs saved: each step leaks the 4-byte loss and its graph's nodes.
      assert.deepEqual(report.leaks.map((l) => [l.file, l.code, l.bytesByStep]), [[trainer, 'loss = out.square().sum()', [4, 4]]]);
      assert.match(report.leaks[0]?.heldBy ?? '', /^`self\.losses` in run\(\) \(list\)$/, 'an attribute of the trainer');
    }
    const helpers = ok(await runProfile(base({ script: path.join(dir, 'helpers_only.py') })));
    assert.equal(helpers.target.kind, 'script', 'a module imported for its helpers, its loop never called');
    assert.equal(helpers.target.loopFile ?? null, null);
  });

  it('a ::FUNCTION target that contains the training loop (one call per epoch) says so and names the loop', async () => {
    const script = path.join(FIXTURES, 'epoch_function.py');
    const report = ok(await runProfile(base({ script, function: 'train' })));
    assert.equal(report.steps.length, 3);
    assert.equal(lineOf(report, script, 'loss.backward()').calls, 3 * 3, 'three iterations per call');
    const loop = lineNumber(script, 'for x in data:');
    assert.ok(report.notes.some((n) => n.startsWith(`train contains the training loop (line ${loop})`) &&
      n.includes(`epoch_function.py:${loop}`)), report.notes.join('\n'));
    const plain = ok(await runProfile(base({ script: path.join(FIXTURES, 'stdlib_user.py'), function: 'step' })));
    assert.ok(!plain.notes.some((n) => /contains the training loop/.test(n)), 'a real step function gets no such note');
  });

  it('follows the script\'s imports to the user\'s files: packages, relative imports, only loops it calls into', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-imports-'));
    try {
      const write = (name: string, text: string): void => {
        fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
        fs.writeFileSync(path.join(root, name), text);
      };
      const loop = 'def run(self):\n    for x in data:\n        model(x).backward()\n        opt.step()\n';
      write('pkg/__init__.py', 'from .engine import Engine\n'); // relative, one level down
      write('pkg/engine.py', 'class Engine:\n' + loop.replace(/^/gm, '    '));
      write('pkg/unused.py', 'def fit():\n    for x in data:\n        model(x).backward()\n        opt.step()\n');
      write('calls.py', 'from pkg import Engine\nimport pkg.unused\nEngine().run()\n');
      write('helpers.py', 'import pkg.unused\nprint(1)\n');
      const code = 'import json, sys, ast\nfrom memhint_harness.imported_loops import training_loops_in_imports\n' +
        'out = {}\nfor name in sys.argv[2:]:\n    path = sys.argv[1] + "/" + name\n' +
        '    loops = training_loops_in_imports(path, ast.parse(open(path).read()), [sys.argv[1]], lambda f: True)\n' +
        '    out[name] = [[l.file[len(sys.argv[1]) + 1:], l.header, l.function] for l in loops]\nprint(json.dumps(out))';
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(TORCH1_PYTHON, ['-c', code, root, 'calls.py', 'helpers.py'], { env: { ...process.env, PYTHONPATH: findHarnessRoot() } }, (error, out) =>
          error ? reject(new Error(error.message)) : resolve(out),
        ),
      );
      assert.deepEqual(JSON.parse(stdout), {
        'calls.py': [['pkg/engine.py', 3, 'run']], // fit() of pkg/unused.py is imported, never called
        'helpers.py': [],
      });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('finds the training loop: innermost reaching backward() and step(), through the file\'s functions', async () => {
    const cases: Array<[string, number[]]> = [
      // epoch loop around a batch loop: the batch loop
      ['for epoch in range(3):\n    for x in data:\n        loss = model(x)\n        loss.backward()\n        opt.step()\n', [2]],
      // the batch loop in a function called per epoch
      ['def train_epoch():\n    for x in data:\n        step(x)\n\ndef step(x):\n    model(x).backward()\n    opt.step()\n\nfor epoch in range(2):\n    train_epoch()\n', [2]],
      // nanoGPT: micro-steps (backward only) inside the iteration loop (backward and step)
      ['while True:\n    for m in range(2):\n        model(x).backward()\n    scaler.step(opt)\n    if done:\n        break\n', [1]],
      // backward only anywhere: the innermost such loop; evaluation loops never
      ['for x in val:\n    model(x)\nfor e in range(2):\n    for x in data:\n        accelerator.backward(model(x))\n', [4]],
      ['for x in data:\n    print(model(x))\n', []],
    ];
    const code = 'import json, sys\nfrom memhint_harness.loops import LoopFinder\n' +
      'print(json.dumps([[l.header for l in LoopFinder(s, "t.py").training_loops()] for s in json.loads(sys.argv[1])]))';
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(TORCH1_PYTHON, ['-c', code, JSON.stringify(cases.map((c) => c[0]))], { env: { ...process.env, PYTHONPATH: findHarnessRoot() } }, (error, out) =>
        error ? reject(new Error(error.message)) : resolve(out),
      ),
    );
    assert.deepEqual(JSON.parse(stdout), cases.map((c) => c[1]));
  });
});
