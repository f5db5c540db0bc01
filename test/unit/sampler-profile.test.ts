// End to end: the profiler's launcher starts the sampler on the harness child by default and the
// report carries the OS series on the harness clock (timeline.os), next to the allocator's view.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runProfile } from '../../src/profiler/launcher';
import { nativeSamplerStatus } from '../../src/sampler';
import { PYTHON } from './sampler-helpers';

const MiB = 1024 * 1024;

const STEP_SCRIPT = `
import time
import torch

def train_step():
    x = torch.ones(64, 1024, 1024)  # 256 MiB, written
    y = x * 2                        # another 256 MiB
    # Both held for 300 ms, so the sampler sees them on a loaded machine: with torch 2.x the step is
    # otherwise over (y freed) within one or two sampling periods, and the peak could fall between samples.
    time.sleep(0.3)
    return float(y.sum())

if __name__ == "__main__":
    for _ in range(3):
        train_step()
`;

describe('sampler in the profiler run (timeline.os)', function () {
  this.timeout(180_000);
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-sampler-profile-'));
    fs.writeFileSync(path.join(dir, 'step.py'), STEP_SCRIPT);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('attaches the RSS series, aligned with the steps, showing the step’s 512 MiB', async () => {
    const outcome = await runProfile({
      script: path.join(dir, 'step.py'),
      function: 'train_step',
      setup: null,
      warmup: 0,
      steps: 1,
      maxSeconds: null,
      backend: 'cpu',
      python: PYTHON,
      budgetBytes: null,
      memoryLimitBytes: null,
      timeoutMs: 150_000,
      scriptArgs: [],
      cwd: dir,
    });
    assert.equal(outcome.failure, null, outcome.failure?.message);
    const report = outcome.report!;
    const tl = report.timeline.os;
    assert.ok(tl, 'timeline.os is attached');
    assert.equal(tl.source, nativeSamplerStatus().available ? 'native' : 'js');
    assert.equal(tl.pid, report.environment.pid);
    assert.equal(tl.exited, true, 'the series ended with the harness process');
    assert.equal(tl.t.length, tl.rssBytes.length);
    assert.ok(tl.t.length <= 1000, 'downsampled for the report');

    const step = report.timeline.steps.find((s) => !s.warmup)!;
    assert.ok(tl.t[0] < step.startMs, 'sampling began before the step (at spawn)');
    assert.ok(tl.t[0] < 0, 'the interpreter started before the harness clock origin');
    assert.ok(tl.t[tl.t.length - 1] >= step.endMs, 'sampling covered the whole step');

    const idx = (pred: (t: number) => boolean) => tl.t.map((t, i) => (pred(t) ? i : -1)).filter((i) => i >= 0);
    const before = idx((t) => t <= step.startMs);
    const during = idx((t) => t >= step.startMs && t <= step.endMs);
    assert.ok(during.length >= 2, `only ${during.length} points inside the step`);
    const rssAtStart = tl.rssBytes[before[before.length - 1]];
    const peakInStep = Math.max(...during.map((i) => tl.rssBytes[i]));
    const rise = peakInStep - rssAtStart;
    // x and y are alive together: 512 MiB of written pages (the harness's own bookkeeping adds a little).
    assert.ok(rise > 480 * MiB && rise < 700 * MiB, `RSS rose by ${(rise / MiB).toFixed(0)} MiB during the step`);
    assert.ok((tl.peakRssBytes ?? 0) >= peakInStep);
    assert.ok(tl.notes?.some((n) => /GPU memory not sampled|NVML/.test(n)) || tl.gpuUsedBytes !== undefined);
  });
});
