// The event-fed tracker (MEMHINT_EVENTS=1; python/memhint_harness/event_tracker.py, issue #17): no dispatch
// mode, per-line figures from the allocation hook's events. Runs in both torch passes: on a torch 2.x wheel
// (headers shipped, the hook builds) the event path must run and give the dispatch path's per-line and
// per-step figures, except where the dispatch mode itself changes what a kernel allocates; on Debian's torch
// 1.13 (no headers) MEMHINT_EVENTS=1 must fall back to the dispatch path and say why.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { findHarnessRoot, runProfile, type ProfileOptions } from '../../src/profiler/launcher';
import type { LineStats, ProfileReport } from '../../src/profiler/report';

const PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';
const ROOT = path.resolve(__dirname, '../../..');
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'profiler');
const ZOO = path.join(ROOT, 'scripts', 'bench_zoo.py');
const EVENTS_NOTE = 'MEMHINT_EVENTS=1: per-line figures';
const FALLBACK_NOTE = 'MEMHINT_EVENTS=1 ignored: the allocation hook is unavailable';

async function profile(script: string, fn: string, setup: string | null, events: boolean): Promise<ProfileReport> {
  const options: ProfileOptions = {
    script, function: fn, setup, warmup: 1, steps: 3, maxSeconds: null, backend: 'cpu', python: PYTHON,
    budgetBytes: null, memoryLimitBytes: null, timeoutMs: 240_000, scriptArgs: [],
    env: { ...process.env, MEMHINT_EVENTS: events ? '1' : '0' },
  };
  const outcome = await runProfile(options);
  assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}` : '');
  assert.ok(outcome.report);
  return outcome.report;
}

// What the event path computes: per line self, inclusive, backward and calls; per step allocated, freed, peak.
function perLine(report: ProfileReport): string[] {
  return report.lines
    .filter((l: LineStats) => l.calls || l.self.allocated || l.self.freed || l.inclusive.allocated || l.inclusive.freed || l.backward.allocated || l.backward.freed)
    .map((l: LineStats) => JSON.stringify([l.file, l.line, l.calls, l.self, l.inclusive, l.backward]));
}

function perStep(report: ProfileReport): string[] {
  return report.steps.map((s) => JSON.stringify([s.allocated, s.freed, s.peakLive]));
}

// Session 20's figures from the blocks' records: saved for backward per line, the peak's composition, leaks,
// the per-module breakdown (every figure of every module).
// graphNodesPerStep and the autograd_graph reason need each block's tensor: not on the event path yet.
function composition(report: ProfileReport): unknown {
  const peak = report.peak;
  return {
    saved: report.lines
      .filter((l: LineStats) => l.savedForBackward || l.savedMadeHere)
      .map((l: LineStats) => [l.file, l.line, l.savedForBackward, l.savedMadeHere]),
    peak: peak && [peak.bytes, peak.step, peak.phase, peak.location, peak.byKind, peak.byLine],
    leaks: report.leaks
      .filter((l) => l.bytesPerStep)
      .map((l) => [l.file, l.line, l.function, l.bytesByStep, l.bytesPerStep, l.heldBy]),
    modules: (report.modules ?? []).map((m) => [
      m.root, m.path, m.type, m.calls, m.params, m.grads, m.optimizer, m.saved, m.forward_alloc, m.backward_alloc, m.live_at_peak,
    ]),
  };
}

function hasHeaders(): Promise<boolean> {
  const code = 'import os, torch\nprint(os.path.isfile(os.path.join(os.path.dirname(torch.__file__), "include", "c10", "core", "Allocator.h")))';
  return new Promise((resolve, reject) =>
    execFile(PYTHON, ['-c', code], { env: { ...process.env, PYTHONPATH: findHarnessRoot() } }, (error, stdout, stderr) =>
      error ? reject(new Error(stderr || error.message)) : resolve(stdout.trim() === 'True'),
    ),
  );
}

function selfOf(report: ProfileReport, code: string): LineStats['self'] {
  const line = report.lines.find((l) => l.code.startsWith(code));
  assert.ok(line, `no line "${code}"; lines: ${report.lines.map((l) => l.code).join(' | ')}`);
  return line.self;
}

describe('event-fed tracker (MEMHINT_EVENTS=1)', function () {
  this.timeout(600_000);
  let headers = false;

  before(async () => {
    headers = await hasHeaders();
  });

  for (const [name, setup] of [['tiny', 'tiny_inputs'], ['resnet18', 'resnet18_inputs']] as const) {
    it(`gives the dispatch path's per-line and per-step figures on the zoo's ${name} model`, async () => {
      const dispatch = await profile(ZOO, 'train_step', setup, false);
      const events = await profile(ZOO, 'train_step', setup, true);
      assert.ok(!dispatch.notes.some((n) => n.startsWith('MEMHINT_EVENTS')), dispatch.notes.join('\n'));
      if (headers) {
        assert.ok(events.notes.some((n) => n.startsWith(EVENTS_NOTE)), `the event path did not run: ${events.notes.join('\n')}`);
      } else {
        assert.ok(events.notes.some((n) => n.startsWith(FALLBACK_NOTE)), events.notes.join('\n'));
      }
      assert.ok(perLine(events).length > 4);
      assert.deepEqual(perLine(events), perLine(dispatch));
      assert.deepEqual(perStep(events), perStep(dispatch));
    });
  }

  // The dispatch mode's observer effect: the event path reports what the unprofiled program allocates.
  it('does not allocate the block a dispatch mode adds to a composite kernel (F.linear, transposed input)', async () => {
    const script = path.join(FIXTURES, 'composite_linear.py');
    const dispatch = await profile(script, 'transposed', null, false);
    const events = await profile(script, 'transposed', null, true);
    const call = 'y = F.linear(x.transpose(0, 1), weight, bias)';
    // 3 calls: the transposed input's contiguous copy (65,536 B) and the output (256,000 B); under a mode
    // the bias is added out of place, a second 256,000 B block.
    assert.deepEqual(
      [dispatch.lines.length > 0, selfOf(dispatch, call).allocated, selfOf(dispatch, call).allocations],
      [true, 3 * (65_536 + 256_000 + 256_000), 9],
    );
    if (headers) {
      assert.equal(selfOf(events, call).allocated, 3 * (65_536 + 256_000));
      assert.equal(selfOf(events, call).allocations, 6);
      assert.equal(selfOf(events, call).peak, 65_536 + 256_000);
    } else {
      assert.deepEqual(selfOf(events, call), selfOf(dispatch, call));
    }
  });

  it('gives the same figures on both paths where no composite kernel is affected (contiguous input)', async () => {
    const script = path.join(FIXTURES, 'composite_linear.py');
    const dispatch = await profile(script, 'contiguous', null, false);
    const events = await profile(script, 'contiguous', null, true);
    assert.equal(selfOf(dispatch, 'y = F.linear(x, weight, bias)').allocated, 3 * 256_000);
    assert.deepEqual(perLine(events), perLine(dispatch));
  });

  // Each fixture is exact on both paths: one op per line, no composite kernel a mode would change.
  for (const [fixture, fn, setup, check] of [
    // gelu saves fc1's output, fc2's addmm saves h: activations at the peak, saved per line and per module (fc2).
    ['saved_lines.py', 'step', null, (r: ProfileReport) =>
      r.lines.some((l) => l.savedForBackward > 0 && l.savedMadeHere > 0) && (r.modules ?? []).some((m) => m.path === 'fc2' && m.saved > 0 && m.backward_alloc > 0)],
    // Adam's peak in opt.step(), grad mode off: phase "other", optimizer state and gradients at the peak.
    ['linear_adam.py', 'train_step', 'make_inputs', (r: ProfileReport) => r.peak?.phase === 'other' && (r.peak?.byKind.optimizer_state ?? 0) > 8_000_000],
    // losses.append(loss): a 4-byte leak per step, held by the list.
    ['kept_losses.py', 'step', null, (r: ProfileReport) => r.leaks.some((l) => l.bytesPerStep === 4 && (l.heldBy ?? '').includes('losses'))],
  ] as const) {
    it(`gives the dispatch path's saved for backward, peak composition, leaks and modules on ${fixture}`, async () => {
      const script = path.join(FIXTURES, fixture);
      const dispatch = await profile(script, fn, setup, false);
      const events = await profile(script, fn, setup, true);
      assert.ok(check(dispatch), JSON.stringify(composition(dispatch)));
      if (headers) {
        assert.ok(events.notes.some((n) => n.startsWith(EVENTS_NOTE)), `the event path did not run: ${events.notes.join('\n')}`);
      }
      assert.deepEqual(composition(events), composition(dispatch));
    });
  }
});
