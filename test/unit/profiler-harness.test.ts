// End-to-end tests of the step profiler with real torch on CPU: the Python harness in a child process,
// driven by the TypeScript launcher. Figures are checked byte-exact against analytic ground truth.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findHarnessRoot, runProfile, type ProfileOptions, type ProfileOutcome } from '../../src/profiler/launcher';
import { formatReport } from '../../src/profiler/format';
import type { LineStats, ProfileReport } from '../../src/profiler/report';

const PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';
const FIXTURES = path.resolve(__dirname, '../../../test/fixtures/profiler');
const LINEAR = path.join(FIXTURES, 'linear_adam.py');
const ERRORS = path.join(FIXTURES, 'errors.py');

// Analytic sizes of Linear(1000, 1000) + Adam, batch 64, float32.
const PARAMS = 1000 * 1000 * 4 + 1000 * 4; // 4,004,000
const ACT = 64 * 1000 * 4; // 256,000
const ADAM_STEP_SCALARS = 2 * 4; // one float32 `step` tensor per parameter (torch >= 1.12)

function options(overrides: Partial<ProfileOptions>): ProfileOptions {
  return {
    script: LINEAR,
    function: 'train_step',
    setup: null,
    warmup: 1,
    steps: 3,
    maxSeconds: null,
    backend: 'cpu',
    python: PYTHON,
    budgetBytes: null,
    memoryLimitBytes: null,
    timeoutMs: 120_000,
    scriptArgs: [],
    ...overrides,
  };
}

function lineOf(report: ProfileReport, file: string, code: string): LineStats {
  const found = report.lines.find((l) => l.file === file && l.code === code);
  assert.ok(found, `no line "${code}" in the report; lines: ${report.lines.map((l) => l.code).join(' | ')}`);
  return found;
}

function ok(outcome: ProfileOutcome): ProfileReport {
  assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}\n${outcome.failure.stderrTail}` : '');
  assert.ok(outcome.report);
  return outcome.report;
}

describe('profiler harness (real torch, cpu)', function () {
  this.timeout(180_000);

  describe('train.py::train_step on Linear(1000, 1000) + Adam', () => {
    let report: ProfileReport;
    let stdout = '';
    before(async () => {
      report = ok(
        await runProfile(options({}), { onStdout: (c) => (stdout += c.toString()) }),
      );
    });

    it('says hello with the environment and runs warmup + steps', () => {
      assert.equal(report.version, 1);
      assert.equal(report.environment.backend, 'cpu');
      assert.match(report.environment.torchVersion, /^\d+\.\d+/);
      assert.equal(report.steps.length, 3);
      assert.equal(report.partial, false);
      assert.deepEqual(report.timeline.steps.map((s) => s.warmup), [true, false, false, false]);
    });

    it('keeps the user prints out of the protocol', () => {
      assert.match(stdout, /the user printing protocol-looking text/);
    });

    it('measures parameters, gradients and Adam state byte-exact at the peak', () => {
      const peak = report.peak;
      assert.ok(peak);
      assert.equal(peak.byKind.parameter, PARAMS);
      assert.equal(peak.byKind.gradient, PARAMS);
      assert.equal(peak.byKind.optimizer_state, 2 * PARAMS + ADAM_STEP_SCALARS);
      assert.equal(peak.byKind.input, ACT);
      const params = peak.byLine.find((g) => g.line === 10 && g.file === LINEAR);
      assert.equal(params?.byKind.parameter, PARAMS, 'parameters are attributed to the nn.Linear line');
    });

    it('attributes forward allocations and saved activations to their lines', () => {
      const forward = lineOf(report, LINEAR, 'out = model(x)');
      assert.equal(forward.self.allocated, 3 * ACT);
      assert.equal(forward.calls, 3);
      assert.equal(forward.savedForBackward, 0, 'addmm saves the input and the weight, which are not activations');
      const relu = lineOf(report, LINEAR, 'act = out.relu()');
      assert.equal(relu.self.allocated, 3 * ACT);
      assert.equal(relu.savedForBackward, 3 * ACT, 'relu saves its output');
      assert.equal(relu.self.peak, ACT);
    });

    it('charges backward allocations to the forward line whose node ran, not to backward()', () => {
      const forward = lineOf(report, LINEAR, 'out = model(x)');
      assert.equal(forward.backward.allocated, 3 * PARAMS, 'weight + bias gradients come from the Linear node');
      const relu = lineOf(report, LINEAR, 'act = out.relu()');
      assert.equal(relu.backward.allocated, 3 * ACT, 'threshold_backward output');
      const backward = lineOf(report, LINEAR, 'loss.backward()');
      // Only the implicit gradient seed, ones_like(loss): one float32 per step, made inside backward() itself
      // (torch 2.x; torch 1.13 charges it elsewhere). Everything the graph's nodes allocate is charged forward.
      assert.ok(backward.self.allocated <= 4 * report.steps.length, `${backward.self.allocated} bytes`);
      assert.ok(backward.inclusive.allocated >= 3 * (PARAMS + ACT));
    });

    it('sees Adam state and temporaries in opt.step()', () => {
      const step = lineOf(report, LINEAR, 'opt.step()');
      assert.ok(step.self.allocated > 0);
      assert.equal(step.self.net, 0, 'after warmup, Adam only allocates temporaries');
      const zero = lineOf(report, LINEAR, 'opt.zero_grad(set_to_none=True)');
      // set_to_none frees the previous bias gradient; the weight gradient is still held by `grads`.
      assert.equal(zero.self.net, -3 * 1000 * 4);
    });

    it('finds the leaks: a gradient kept per step, and `total += loss` growing the graph', () => {
      const grad = report.leaks.find((l) => l.reason === 'storage' && l.code === 'out = model(x)');
      assert.ok(grad, JSON.stringify(report.leaks));
      assert.deepEqual(grad.bytesByStep, [1000 * 1000 * 4, 1000 * 1000 * 4]);
      assert.match(grad.heldBy ?? '', /grads/);
      const total = report.leaks.find((l) => l.code === 'total += loss');
      assert.ok(total, JSON.stringify(report.leaks));
      assert.equal(total.reason, 'autograd_graph');
      assert.ok(total.graphNodesPerStep > 0);
    });

    it('keeps step totals consistent with the timeline', () => {
      for (const step of report.steps) {
        assert.ok(step.peakLive >= step.liveAtStart);
        assert.ok(step.allocated >= 2 * ACT + 4);
      }
      const maxLive = Math.max(...report.timeline.allocator.map((p) => p.live));
      assert.equal(maxLive, report.peak?.bytes);
    });
  });

  it('--setup calls the setup function for the step arguments', async () => {
    const report = ok(await runProfile(options({ setup: 'make_inputs', warmup: 1, steps: 2 })));
    assert.equal(report.target.kind, 'setup');
    assert.equal(report.steps.length, 2);
    assert.equal(report.peak?.byKind.parameter, PARAMS);
    assert.equal(report.peak?.byKind.input, ACT);
    assert.equal(lineOf(report, LINEAR, 'out = model(x)').backward.allocated, 2 * PARAMS);
    assert.equal(report.leaks.length, 0, 'nothing accumulates without the script loop');
  });

  it('profiles a whole script', async () => {
    const script = path.join(FIXTURES, 'whole_script.py');
    const report = ok(await runProfile(options({ script, function: null, maxSeconds: 30 })));
    assert.equal(report.target.kind, 'script');
    assert.equal(lineOf(report, script, 'a = torch.zeros(1000, 250)  # 1,000,000 bytes').self.allocated, 1_000_000);
    assert.equal(lineOf(report, script, 'b = a + 1  # 1,000,000 bytes').self.allocated, 1_000_000);
    assert.equal(lineOf(report, script, 'del a').self.freed, 1_000_000);
    assert.equal(report.steps[0].peakLive, 2_000_000);
  });

  it('follows storages through views, in-place ops, detach, out= and resize_', async () => {
    const script = path.join(FIXTURES, 'storage_ops.py');
    const report = ok(await runProfile(options({ script, function: 'step' })));
    const expected: Array<[string, number, number]> = [
      ['a = torch.zeros(1000)', 4000, 0],
      ['v = a.view(10, 100)', 0, 0],
      ['a.add_(1)', 0, 0],
      ['d = a.detach()', 0, 0],
      ['o = torch.empty(0)', 0, 0],
      ['torch.add(a, 1, out=o)', 4000, 0],
      ['r = torch.zeros(10)', 40, 0],
      ['r.resize_(2000)', 7960, 0],
      ['del a', 0, 0],
      ['del v, d', 0, 4000],
    ];
    for (const [prefix, allocated, freed] of expected) {
      const line = report.lines.find((l) => l.code.startsWith(prefix));
      assert.ok(line, prefix);
      assert.deepEqual([line.self.allocated, line.self.freed], [3 * allocated, 3 * freed], prefix);
    }
  });

  it('tells saved bytes by the ops of a line apart from saved bytes the line made', async () => {
    const script = path.join(FIXTURES, 'saved_lines.py');
    const report = ok(await runProfile(options({ script, function: 'step' })));
    const MIB2 = 512 * 1024 * 4;
    const gelu = lineOf(report, script, 'h = F.gelu(self.fc1(x))');
    assert.equal(gelu.savedForBackward, 3 * MIB2, 'gelu saves fc1\'s output');
    assert.equal(gelu.savedMadeHere, 3 * 2 * MIB2, 'fc1\'s output and h, both made here, are saved');
    const fc2 = lineOf(report, script, 'return self.fc2(h)');
    assert.equal(fc2.savedForBackward, 3 * MIB2, 'fc2 saves h');
    assert.equal(fc2.savedMadeHere, 0);
  });

  it('presents a kept loss by the autograd graph it holds, not by its 4 bytes', async () => {
    const script = path.join(FIXTURES, 'kept_losses.py');
    const report = ok(await runProfile(options({ script, function: 'step' })));
    assert.equal(report.leaks.length, 1, JSON.stringify(report.leaks));
    const [leak] = report.leaks;
    assert.deepEqual(leak.bytesByStep, [4, 4]);
    assert.equal(leak.graphNodesPerStep, 6, 'Sum, Relu, Addmm, T and two AccumulateGrad nodes per kept loss');
    assert.match(leak.heldBy ?? '', /losses/);
    assert.match(formatReport(report, () => null), /keeps 6 autograd nodes alive per step \(their tensors: 4 B per step\), held by `losses`/);
  });

  it('charges an in-place op\'s backward to its own line, not to the line that made the storage', async () => {
    const script = path.join(FIXTURES, 'inplace_backward.py');
    const report = ok(await runProfile(options({ script, function: 'step' })));
    const mul = report.lines.find((l) => l.code.startsWith('h = w * 2'));
    const relu = report.lines.find((l) => l.code.startsWith('h.relu_()'));
    assert.equal(mul?.backward.allocated, 3 * 4_000_000);
    assert.equal(relu?.backward.allocated, 3 * 4_000_000);
    assert.equal(relu?.self.allocated, 0);
  });

  it('charges the backward of a node an in-place op replaced in the same line to that line', async () => {
    // `relu_(w * 2)`: relu_ replaces the product's grad_fn before the line ends; MulBackward's allocation
    // fell on the backward() line when its node was tagged only after the in-place op (issue #17).
    const script = path.join(FIXTURES, 'inplace_rebase.py');
    const report = ok(await runProfile(options({ script, function: 'step' })));
    const made = report.lines.find((l) => l.code.startsWith('h = torch.relu_(w * 2)'));
    const backward = report.lines.find((l) => l.code.startsWith('loss.backward()'));
    assert.equal(made?.backward.allocated, 3 * 2 * 4_000_000);
    assert.equal(made?.backward.allocations, 3 * 2);
    assert.ok((backward?.self.allocated ?? 0) < 100, `backward() self ${backward?.self.allocated}`);
  });

  describe('the autograd engine\'s gradient sums, as the program makes them without a profiler (issue #17/#14)', () => {
    // torch >= 2 adds a second gradient into the first one's block in place, but out of place while any
    // dispatch mode is active (memhint's): one phantom block per sum. torch 1.13 sums out of place either
    // way. Truth from scripts/gradsum_truth.py (no mode, the allocation hook): grad_sum.py's blocks are
    // 1,000,000 bytes; the 8 (12) bytes are the loss scalars.
    const script = path.join(FIXTURES, 'grad_sum.py');
    const profile = async (fn: string) => ok(await runProfile(options({ script, function: fn })));
    const inPlace = (report: ProfileReport) => !report.environment.torchVersion.startsWith('1.');
    const perStep = (report: ProfileReport) => report.steps.map((s) => [s.allocated, s.peakLive - s.liveAtStart]);

    it('counts no block for a sum of two gradients of one tensor, and no peak for it', async () => {
      const report = await profile('squared');
      const expected = inPlace(report) ? [5_000_008, 3_000_008] : [6_000_008, 4_000_008];
      assert.deepEqual(perStep(report), [expected, expected, expected]);
    });

    it('charges the summed node\'s line only the blocks its formulas make', async () => {
      const report = await profile('step');
      const expected = inPlace(report) ? 10_000_008 : 11_000_008;
      assert.deepEqual(report.steps.map((s) => s.allocated), [expected, expected, expected]);
      if (inPlace(report)) {
        // SinBackward0: cos(y), its product with the gradient; CosBackward0: sin(y), its negation, the product.
        const line = lineOf(report, script, 'loss = (y.sin() + y.cos()).sum()');
        assert.deepEqual([line.backward.allocated, line.backward.allocations], [3 * 5_000_000, 3 * 5]);
      }
    });

    it('does the same for a weight used twice', async () => {
      const report = await profile('shared_weight');
      const expected = inPlace(report) ? 6_000_008 : 7_000_008;
      assert.deepEqual(report.steps.map((s) => s.allocated), [expected, expected, expected]);
    });

    it('still counts the sums that run out of place without a profiler too', async () => {
      // create_graph=True: grad mode is on in backward, the engine sums out of place on every torch.
      const second = await profile('second_order');
      assert.deepEqual(second.steps.map((s) => s.allocated), [11_000_012, 11_000_012, 11_000_012]);
      // A backward written in Python: `doubled + grad` is the user's own sum, made with or without memhint.
      const python = await profile('python_sum');
      assert.deepEqual(python.steps.map((s) => s.allocated), [3_000_008, 3_000_008, 3_000_008]);
      if (inPlace(python)) {
        assert.equal(lineOf(python, script, 'return doubled + grad').self.allocated, 3 * 1_000_000);
      }
      // Gradient accumulation over 4 micro-steps: AccumulateGrad adds into .grad in place, mode or not.
      const accumulated = await profile('accumulate');
      assert.deepEqual(accumulated.steps.map((s) => s.allocated), [8_000_032, 8_000_032, 8_000_032]);
    });
  });

  it('sees the ops of a dispatch mode the user stacks on memhint\'s, and the mode sees them too', async () => {
    const script = path.join(FIXTURES, 'user_mode.py');
    const report = ok(await runProfile(options({ script, function: 'step' })));
    const self = (prefix: string): number[] => {
      const line = report.lines.find((l) => l.code.startsWith(prefix));
      assert.ok(line, prefix);
      return [line.calls, line.self.allocated, line.self.freed];
    };
    assert.deepEqual(self('a = torch.zeros(1000)'), [3, 3 * 4000, 0]);
    assert.deepEqual(self('return func(*args'), [6, 3 * 8000, 0]);
    assert.deepEqual(self('d = c + 1'), [3, 3 * 4000, 0]);
    assert.deepEqual(self('return d'), [3, 0, 3 * 12000]);
  });

  it('runs a library module\'s body untraced, and a user module it imports traced, charging both to the user lines', async () => {
    const dir = path.join(FIXTURES, 'imports');
    const script = path.join(dir, 'import_step.py');
    const report = ok(await runProfile(options({
      script, warmup: 0, steps: 1, env: { ...process.env, PYTHONPATH: path.join(dir, 'site-packages') },
    })));
    // fakelib's body allocates 8,000 bytes only when the tracer is off, plugin.py's 4,000 only when it is on
    const imported = lineOf(report, script, 'import fakelib  # 8,000 bytes in the library\'s body, 4,000 in plugin.py\'s');
    assert.equal(imported.self.allocated, 8000);
    assert.equal(imported.inclusive.allocated, 12000);
    const plugin = lineOf(report, path.join(dir, 'plugin.py'),
      'kept = torch.zeros(1000 if sys.gettrace() is not None else 1500)  # 4,000 bytes when traced, as it must be');
    assert.equal(plugin.self.allocated, 4000);
  });

  it('measures a step that calls a torch.compile\'d function, as eager code (torch 2.x)', async function () {
    const version = await new Promise<string>((resolve, reject) =>
      execFile(PYTHON, ['-c', 'import torch; print(torch.__version__)'], (error, out) => (error ? reject(new Error(error.message)) : resolve(out))),
    );
    if (Number(version.split('.')[0]) < 2) this.skip(); // torch 1.13 has no torch.compile
    const script = path.join(FIXTURES, 'compiled_step.py');
    const report = ok(await runProfile(options({ script, setup: 'make_inputs' })));
    const act = 64 * 256 * 4;
    const forward = lineOf(report, script, 'out = model(x)');
    assert.equal(forward.self.allocated, 3 * act);
    assert.equal(forward.backward.allocated, 3 * (256 * 256 * 4 + 256 * 4), 'weight + bias gradients');
    const relu = lineOf(report, script, 'act = out.relu()');
    assert.equal(relu.savedForBackward, 3 * act);
    assert.ok(!report.notes.some((n) => /internal error/.test(n)), report.notes.join('\n'));
    // timm's train.py --torchcompile measured the same bytes as without it, and nothing said why.
    const decorator = fs.readFileSync(script, 'utf-8').split('\n').findIndex((l) => l.startsWith('@torch.compile')) + 1;
    assert.ok(report.notes.some((n) => n.startsWith(`torch.compile (compiled_step.py:${decorator}) was measured as eager code`)), report.notes.join('\n'));
  });

  it('stops a never-ending script after --max-seconds', async () => {
    const script = path.join(FIXTURES, 'forever.py');
    const started = Date.now();
    const report = ok(await runProfile(options({ script, function: null, maxSeconds: 2 })));
    assert.ok(Date.now() - started < 60_000);
    assert.ok(report.notes.some((n) => /stopped after --max-seconds 2/.test(n)), report.notes.join('\n'));
    const append = lineOf(report, script, 'kept.append(torch.ones(256))  # 1024 bytes each');
    assert.ok(append.calls > 10);
    assert.equal(append.self.allocated, append.calls * 1024);
  });

  it('--budget reports the first line where live memory exceeds it', async () => {
    const report = ok(await runProfile(options({ budgetBytes: 10_000_000, steps: 1 })));
    assert.equal(report.budget?.exceeded, true);
    assert.equal(report.budget?.firstExceeded?.code, 'opt.step()');
    assert.ok((report.budget?.firstExceeded?.liveBytes ?? 0) > 10_000_000);
  });

  it('reports a CPU out-of-memory for real under an address-space limit', async () => {
    const outcome = await runProfile(
      options({ script: ERRORS, scriptArgs: ['oom'], memoryLimitBytes: 256 * 1024 * 1024 }),
    );
    assert.equal(outcome.failure?.kind, 'oom');
    const oom = outcome.report?.oom;
    assert.ok(oom);
    assert.equal(oom.location?.line, 25);
    assert.equal(oom.requestedBytes, 2 ** 31 * 4);
    assert.ok(oom.liveAtOom.byLine.some((g) => g.line === 14 && g.bytes === 40), 'the live `t` is listed');
    assert.ok(oom.advice.some((a) => /batch size/i.test(a)));
  });

  it('reads the requested size from CPU and CUDA allocation failures', async () => {
    const messages = [
      ["DefaultCPUAllocator: can't allocate memory: you tried to allocate 8589934592 bytes. Error code 12", 8589934592],
      ['CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.35 GiB total capacity)', 20 * 1024 ** 2],
      ['CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 139 GiB', 1.5 * 1024 ** 3],
      ['something else entirely', null],
    ] as const;
    const code = `import json, sys\nfrom memhint_harness.oom import requested_bytes\nprint(json.dumps([requested_bytes(m) for m in json.loads(sys.argv[1])]))`;
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(PYTHON, ['-c', code, JSON.stringify(messages.map((m) => m[0]))], { env: { ...process.env, PYTHONPATH: findHarnessRoot() } }, (error, out) =>
        error ? reject(new Error(error.message)) : resolve(out),
      ),
    );
    assert.deepEqual(JSON.parse(stdout), messages.map((m) => m[1]));
  });

  // The line tracer's global trace function and the dispatch mode's per-op bookkeeping (_cdispatch.c) and the
  // ledger's expiry scan (_cexpiry.c) run in C when the extension builds for this interpreter (ctrace.py), else
  // in Python; MEMHINT_CTRACE=1 requires the C ones, 0 forces the Python ones. Both must give the same report.
  describe('C and Python line tracers (MEMHINT_CTRACE)', () => {
    const withTracer = (script: string, fn: string, choice: '0' | '1') =>
      runProfile(options({ script, function: fn, env: { ...process.env, MEMHINT_CTRACE: choice } }));
    const perLine = (report: ProfileReport) =>
      report.lines.map((l) => JSON.stringify([l.file, l.line, l.calls, l.self, l.inclusive, l.backward, l.savedForBackward]));

    // subclass_dispatch: a tensor subclass's outputs (the Python bookkeeping's); storage_ops: resize_, out=,
    // set_ and views (resized and reused storages: Python; views and new storages: C); inplace_backward and
    // linear_adam: allocations and frees in backward() (hooks mode on 1.13, the running node on 2.x) and an
    // optimizer step.
    for (const [name, fn] of [
      ['subclass_dispatch.py', 'step'],
      ['saved_lines.py', 'step'],
      ['storage_ops.py', 'step'],
      ['inplace_backward.py', 'step'],
      ['inplace_rebase.py', 'step'],
      ['grad_sum.py', 'squared'],
      ['linear_adam.py', 'train_step'],
    ] as const) {
      it(`gives identical per-line figures on ${name}, and the report says which tracer ran`, async () => {
        const script = path.join(FIXTURES, name);
        const c = ok(await withTracer(script, fn, '1'));
        const py = ok(await withTracer(script, fn, '0'));
        assert.equal(c.environment.tracer, 'c');
        assert.equal(py.environment.tracer, 'python');
        assert.deepEqual(perLine(c), perLine(py));
        const clockless = (report: ProfileReport) => JSON.stringify([{ ...report.peak, atMs: 0 }, report.modules, report.leaks]);
        assert.equal(clockless(c), clockless(py));
        assert.ok(c.lines.length > 3, `${c.lines.length} lines`);
        assert.ok(!c.notes.some((n) => /internal error/.test(n)), c.notes.join('\n'));
      });
    }

    // _cexpiry.c's scan against torch's own _expired, on storages alive and dead, both with the strong counts
    // read directly (where expiry.py's calibration allowed it) and through _expired.
    it('finds the same dead storages as _expired, reading strong counts directly where calibrated', async () => {
      const code = [
        'import json, torch',
        'from memhint_harness import ctrace, expiry',
        'from memhint_harness.storage import StorageApi',
        'api = StorageApi()',
        'scan = expiry.scanner(api)',
        'module = ctrace.load()[0]',
        'tensors = [torch.empty(n + 1) for n in range(40)]',
        'handles = {i: api.storage_of(t)._weak_ref() for i, t in enumerate(tensors)}',
        'recs = {i: "rec%d" % i for i in handles}',
        'views = [tensors[i].view(-1) for i in range(0, 40, 4)]',
        'for i in range(0, 40, 3):',
        '    tensors[i] = None',
        'truth = [recs[i] for i, h in handles.items() if api.expired_raw(h)]',
        'direct = scan(recs, handles, api.expired_raw, [])',
        'was_direct = expiry.direct_reads()',
        'module.set_direct_expiry(False)',
        'called = scan(recs, handles, api.expired_raw, [])',
        'print(json.dumps({"direct": was_direct, "truth": truth, "found": direct, "called": called}))',
      ].join('\n');
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(PYTHON, ['-c', code], { env: { ...process.env, PYTHONPATH: findHarnessRoot(), MEMHINT_CTRACE: '1' } }, (error, out) =>
          error ? reject(new Error(error.message)) : resolve(out),
        ),
      );
      const result = JSON.parse(stdout) as { direct: boolean; truth: string[]; found: string[]; called: string[] };
      // Every third tensor dropped, except those a view keeps alive (multiples of 4): 0, 12, 24, 36 stay.
      assert.deepEqual(result.truth, ['rec3', 'rec6', 'rec9', 'rec15', 'rec18', 'rec21', 'rec27', 'rec30', 'rec33', 'rec39']);
      assert.deepEqual(result.found, result.truth);
      assert.deepEqual(result.called, result.truth);
      assert.equal(result.direct, true, 'the calibration accepts this torch (1.13 and 2.x keep the strong count after the vtable)');
    });

    it("traces a tensor subclass's own __torch_dispatch__ (user code run by the op) with the C tracer", async () => {
      const script = path.join(FIXTURES, 'subclass_dispatch.py');
      const report = ok(await withTracer(script, 'step', '1'));
      // Two ops per step (add, mul), three profiled steps: the method's op line ran 6 times, unwrap 12.
      assert.equal(lineOf(report, script, 'out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))  # the op on the plain tensors').calls, 6);
      assert.equal(lineOf(report, script, 'return t.elem if isinstance(t, Wrapped) else t').calls, 12);
    });
  });

  describe('failures end with a clear error', () => {
    const run = (args: string[], extra: Partial<ProfileOptions> = {}): Promise<ProfileOutcome> =>
      runProfile(options({ script: ERRORS, scriptArgs: args, ...extra }));

    it('a user exception, located', async () => {
      const { failure } = await run(['raise']);
      assert.equal(failure?.kind, 'user_exception');
      assert.match(failure?.message ?? '', /ValueError: boom in the step/);
      assert.equal(failure?.location?.line, 16);
      assert.match(failure?.traceback ?? '', /errors\.py/);
    });

    it('a syntax error', async () => {
      const { failure } = await runProfile(options({ script: path.join(FIXTURES, 'syntax_error.py') }));
      assert.equal(failure?.kind, 'syntax_error');
      assert.equal(failure?.location?.line, 3);
    });

    it('a missing target', async () => {
      const { failure } = await runProfile(options({ function: 'no_such_step', scriptArgs: ['2'] }));
      assert.equal(failure?.kind, 'missing_target');
      assert.match(failure?.message ?? '', /no_such_step/);
    });

    it('sys.exit() before the steps', async () => {
      const { failure } = await run(['exit-early']);
      assert.equal(failure?.kind, 'script_exit');
      assert.match(failure?.message ?? '', /sys\.exit\(3\)/);
    });

    it('an interpreter that dies (os._exit, abort)', async () => {
      const exited = await run(['crash']);
      assert.equal(exited.failure?.kind, 'crash');
      assert.equal(exited.failure?.exitCode, 7);
      const aborted = await run(['abort']);
      assert.equal(aborted.failure?.kind, 'crash');
      assert.equal(aborted.failure?.signal, 'SIGABRT');
    });

    it('a timeout', async () => {
      const started = Date.now();
      const { failure } = await run(['hang'], { timeoutMs: 8000 });
      assert.equal(failure?.kind, 'timeout');
      assert.ok(Date.now() - started < 30_000);
    });

    it('cancellation ends the child', async () => {
      const abort = new AbortController();
      const outcome = await runProfile(options({ script: ERRORS, scriptArgs: ['hang'] }), {
        signal: abort.signal,
        onMessage: (m) => {
          if (m.type === 'progress' || m.type === 'hello') setTimeout(() => abort.abort(), 200);
        },
      });
      assert.equal(outcome.failure?.kind, 'cancelled');
    });

    it('a missing interpreter', async () => {
      const { failure } = await runProfile(options({ python: '/nonexistent/python3' }));
      assert.equal(failure?.kind, 'spawn');
    });

    for (const [name, pattern] of [
      ['malformed', /not JSON/],
      ['truncated', /truncated/],
      ['version', /unsupported protocol version 99/],
    ] as const) {
      it(`${name} protocol output is reported, not parsed`, async () => {
        const outcome = await runProfile(options({ python: path.join(FIXTURES, `fake_python_${name}.sh`) }));
        assert.equal(outcome.failure?.kind, 'protocol');
        assert.match(outcome.failure?.message ?? '', pattern);
        assert.equal(outcome.report, null);
      });
    }
  });
});
