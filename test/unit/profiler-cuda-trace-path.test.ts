// The cuda backend's trace path (python/memhint_harness/trace_tracker.py, issue #17) through the whole
// harness (cli, runner, trace tracker, analysis, report) on CPU: test/fixtures/profiler/fake_cuda logs every
// storage the profiled code makes as the CUDA caching allocator's history would (torch's snapshot format,
// 512-byte blocks, no Python frames inside autograd nodes). test/gpu/check_trace_backend.py runs the same
// path on a real GPU against the dispatch path.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { reportProblem, type LineStats, type ProfileReport } from '../../src/profiler/report';
import { harnessArgs } from '../../src/profiler/launcher';
import { torch2Python } from './torch2';

const ROOT = path.resolve(__dirname, '../../..');
const DRIVER = path.join(ROOT, 'test/fixtures/profiler/fake_cuda/run_harness.py');
const FIXTURE = path.join(ROOT, 'test/fixtures/profiler/trace_leak.py');
const WEIGHT = 256 * 256 * 4;
const BIAS = 256 * 4; // 1,024 B: already a multiple of 512
const ACT = 64 * 256 * 4;

interface Run {
  readonly exit: number;
  readonly messages: { type: string; report?: ProfileReport; kind?: string; message?: string }[];
  readonly snapshots: number;
}

function run(extra: string[], env: Record<string, string> = {}): { run: Run; report: ProfileReport } {
  const out = execFileSync(
    torch2Python(),
    [DRIVER, '--script', FIXTURE, '--function', 'train_step', '--warmup', '1', '--steps', '3', '--backend', 'cuda', ...extra],
    { env: { ...process.env, PYTHONPATH: path.join(ROOT, 'python'), ...env }, encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  const result = JSON.parse(out) as Run;
  const found = result.messages.find((m) => m.type === 'result')?.report;
  assert.ok(found, `a report: ${JSON.stringify(result.messages.filter((m) => m.type === 'error'))}`);
  return { run: result, report: found };
}

function line(report: ProfileReport, code: string): LineStats {
  const found = report.lines.find((l) => l.code === code);
  assert.ok(found, `line ${code}`);
  return found;
}

describe('cuda backend, trace path (allocator history, fake allocator on CPU)', function () {
  this.timeout(180_000);
  let trace: { run: Run; report: ProfileReport };
  before(() => {
    trace = run([]);
  });

  it('is the default on a torch whose history has Python stacks, and says what it does not measure', () => {
    const { report } = trace;
    assert.equal(trace.run.exit, 0);
    assert.equal(report.environment.cudaPath, 'trace');
    assert.equal(reportProblem(report), null);
    assert.ok(report.notes.some((n) => n.startsWith('cuda trace path:') && n.includes('saved-for-backward')));
    // Checkpoints only: a few snapshots per step (start, end, boundary), never one per op.
    assert.ok(trace.run.snapshots > 0 && trace.run.snapshots <= 4 * 4 + 2, `${trace.run.snapshots} snapshots`);
  });

  it('charges each block to the innermost user line, and backward to the line that called backward()', () => {
    const { report } = trace;
    const forward = line(report, 'out = model(x)');
    assert.deepEqual([forward.self.allocated, forward.self.allocations], [3 * ACT, 3]);
    assert.equal(line(report, 'act = out.relu()').self.allocated, 3 * ACT);
    assert.equal(line(report, 'loss = act.sum()').self.allocated, 3 * 512, 'a 4-byte loss is one 512-byte block');
    const backward = line(report, 'loss.backward()');
    // Gradients of weight and bias (set_to_none: new each step) are among what autograd allocated.
    assert.ok(backward.backward.allocated >= 3 * (WEIGHT + BIAS), JSON.stringify(backward.backward));
    assert.equal(forward.backward.allocated, 0, 'the allocator log cannot name the forward line of a node');
    // The calling line of the step gets everything inclusively, once.
    const caller = report.lines.find((l) => l.code.startsWith('train_step(torch.randn'));
    assert.ok(caller);
    assert.equal(
      caller.inclusive.allocated,
      report.steps.reduce((sum, s) => sum + s.allocated, 0),
      'inclusive of the caller = the steps\' allocations',
    );
    assert.ok(forward.self.peak === ACT && line(report, 'opt.step()').self.peak > 0);
  });

  it('finds parameters, gradients and optimizer state at the peak by block address, and the kept tensor as a leak', () => {
    const { report } = trace;
    assert.ok(report.peak);
    assert.equal(report.peak.byKind.parameter, WEIGHT + BIAS);
    assert.equal(report.peak.byKind.gradient, WEIGHT + BIAS);
    assert.ok(report.peak.byKind.optimizer_state >= 2 * (WEIGHT + BIAS), JSON.stringify(report.peak.byKind));
    assert.equal(report.peak.bytes, Object.values(report.peak.byKind).reduce((a, b) => a + b, 0));
    assert.equal(report.steps.length, 3);
    for (const step of report.steps) assert.ok(step.peakLive >= step.liveAtStart && step.peakAtMs >= step.startMs);
    const leak = report.leaks.find((l) => l.code === 'kept.append(torch.ones(1000))');
    assert.ok(leak, JSON.stringify(report.leaks));
    assert.deepEqual(leak.bytesByStep, [4096, 4096]);
  });

  it('calls a block the forward allocated and the backward freed an activation at the peak', () => {
    const fixture = path.join(ROOT, 'test/fixtures/profiler/trace_saved.py');
    const out = execFileSync(
      torch2Python(),
      [DRIVER, '--script', fixture, '--function', 'train_step', '--warmup', '1', '--steps', '2', '--backend', 'cuda'],
      { env: { ...process.env, PYTHONPATH: path.join(ROOT, 'python') }, encoding: 'utf8' },
    );
    const peak = (JSON.parse(out) as Run).messages.find((m) => m.type === 'result')?.report?.peak;
    assert.ok(peak);
    // The dispatch path (saved_tensors_hooks) finds the same 4,194,304 B of relu output on this fixture.
    assert.equal(peak.phase, 'backward');
    assert.equal(peak.byKind.activation, 256 * 4096 * 4);
    assert.equal(peak.byKind.parameter, 16 * 4096 * 4 + 4096 * 4);
  });

  it('reports an allocation failure at its line, with the live blocks (the log is read at the failure)', () => {
    const gpuFixture = path.join(ROOT, 'test/gpu/profile_fixture.py');
    const out = execFileSync(
      torch2Python(),
      [DRIVER, '--script', gpuFixture, '--function', 'train_step', '--backend', 'cuda', '--', 'oom'],
      { env: { ...process.env, PYTHONPATH: path.join(ROOT, 'python'), MEMHINT_DEVICE: 'cpu' }, encoding: 'utf8' },
    );
    const result = JSON.parse(out) as Run;
    assert.equal(result.exit, 1);
    assert.equal(result.messages.find((m) => m.type === 'error')?.kind, 'oom');
    const oom = result.messages.find((m) => m.type === 'result')?.report?.oom;
    assert.ok(oom?.location, JSON.stringify(oom));
    assert.match(oom.code, /torch\.empty/);
    assert.ok((oom.requestedBytes ?? 0) > 0);
    // Linear(1000, 1000) (4,004,352 B of blocks) and the input x (256,000 B) are live.
    assert.equal(oom.liveAtOom.bytes, 4_004_352 + 256_000);
  });

  it('--cuda-path dispatch forces the Python dispatch mode', () => {
    const { report } = run(['--cuda-path', 'dispatch']);
    assert.equal(report.environment.cudaPath, 'dispatch');
    assert.ok(!report.notes.some((n) => n.startsWith('cuda trace path:')));
  });

  it('falls back to the dispatch path, with a note, where the history has no Python stacks', () => {
    const { run: fallback, report } = run([], { FAKE_CUDA_HISTORY: 'legacy' });
    assert.equal(report.environment.cudaPath, 'dispatch');
    assert.ok(report.notes.some((n) => n.includes('the dispatch path') && n.includes('no stacks/clear_history/max_entries parameter')), report.notes.join('\n'));
    assert.equal(fallback.snapshots, 0);
  });
});

describe('--cuda-path on the launcher', () => {
  const base = {
    script: 'train.py', function: 'step', setup: null, warmup: 1, steps: 3, maxSeconds: null, backend: 'cuda' as const,
    python: 'python3', budgetBytes: null, memoryLimitBytes: null, timeoutMs: 1000, scriptArgs: [],
  };
  it('passes trace / dispatch to the harness, and nothing for auto (the harness decides)', () => {
    const pair = (args: string[]) => args.slice(args.indexOf('--cuda-path'), args.indexOf('--cuda-path') + 2);
    assert.deepEqual(pair(harnessArgs({ ...base, cudaPath: 'dispatch' })), ['--cuda-path', 'dispatch']);
    assert.deepEqual(pair(harnessArgs({ ...base, cudaPath: 'trace' })), ['--cuda-path', 'trace']);
    assert.ok(!harnessArgs({ ...base, cudaPath: 'auto' }).includes('--cuda-path'));
    assert.ok(!harnessArgs(base).includes('--cuda-path'));
  });
});
