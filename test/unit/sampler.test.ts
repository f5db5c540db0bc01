// Behaviour both samplers share (native addon and JS fallback), run against real child processes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createSampler, nativeSamplerStatus, type MemorySampler } from '../../src/sampler';
import { AllocatorChild, median, PYTHON, sleep, waitFor } from './sampler-helpers';

const MiB = 1024 * 1024;

/** A kernel thread's pid (its statm is all zeros), if this pid namespace shows any (containers often do not). */
function kernelThreadPid(): number | undefined {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (/^0 0 /.test(fs.readFileSync(`/proc/${name}/statm`, 'latin1'))) return Number(name);
    } catch {
      // exited meanwhile
    }
  }
  return undefined;
}
const ALLOC_BYTES = 200 * MiB;

interface Variant {
  name: 'native' | 'js';
  make(): MemorySampler;
  intervalMs: number;
}

const variants: Variant[] = [
  { name: 'native', make: () => createSampler({ prefer: 'native' }), intervalMs: 1 },
  { name: 'js', make: () => createSampler({ prefer: 'js' }), intervalMs: 20 },
];

for (const variant of variants) {
  describe(`sampler (${variant.name})`, function () {
    this.timeout(30_000);

    before(function () {
      if (variant.name !== 'native') return;
      const status = nativeSamplerStatus();
      if (status.available) return;
      // The addon is part of the product; its absence is a failure unless explicitly waived.
      if (process.env.MEMHINT_SKIP_NATIVE === '1') this.skip();
      assert.fail(`native addon unavailable: ${status.reason} (set MEMHINT_SKIP_NATIVE=1 to skip)`);
    });

    it('uses the requested implementation', () => {
      const s = variant.make();
      assert.equal(s.source, variant.name);
      if (variant.name === 'js') assert.match(s.fallbackReason ?? '', /JS sampler requested/);
      else assert.equal(s.fallbackReason, undefined);
    });

    it(`sees a child's 200 MiB allocation in the RSS series within 5%`, async () => {
      const child = new AllocatorChild();
      const sampler = variant.make();
      try {
        await child.expect('ready');
        sampler.start(child.pid, variant.intervalMs);
        await sleep(300);
        const before = sampler.read();
        const baseline = median(before.rssBytes.subarray(Math.floor(before.rssBytes.length / 2)));
        const nBefore = before.tMs.length;
        await child.allocate(ALLOC_BYTES);
        await sleep(200);
        const series = sampler.stop();
        const after = median(series.rssBytes.subarray(series.rssBytes.length - 5));
        const delta = after - baseline;
        assert.ok(
          Math.abs(delta - ALLOC_BYTES) <= 0.05 * ALLOC_BYTES,
          `RSS grew by ${(delta / MiB).toFixed(1)} MiB, expected 200 MiB ± 5%`,
        );
        assert.ok(series.tMs.length > nBefore, 'samples kept accumulating');
        assert.equal(series.pid, child.pid);
        assert.equal(series.exited, false);
        assert.equal(series.endReason, 'stopped');
      } finally {
        child.kill();
      }
    });

    it('rejects an invalid pid with a clear error', () => {
      assert.throws(() => variant.make().start(-3, variant.intervalMs), /invalid pid -3: expected a positive integer/);
      assert.throws(() => variant.make().start(1.5, variant.intervalMs), /invalid pid 1\.5/);
      // pid_max is at most 4194304, so this pid cannot exist.
      assert.throws(() => variant.make().start(4194000, variant.intervalMs), /no process with pid 4194000/);
      const kthread = kernelThreadPid();
      if (kthread !== undefined) assert.throws(() => variant.make().start(kthread, variant.intervalMs), /no user address space/);
    });

    it('rejects an out-of-range interval', () => {
      assert.throws(() => variant.make().start(process.pid, 0.5), /intervalMs must be between 1 and 60000/);
      assert.throws(() => variant.make().start(process.pid, Number.NaN), /intervalMs must be between/);
    });

    it('gives clear errors for double stop, stop before start and restart', () => {
      const s = variant.make();
      assert.throws(() => s.stop(), /sampler not started/);
      assert.throws(() => s.read(), /sampler not started/);
      s.start(process.pid, variant.intervalMs);
      assert.throws(() => s.start(process.pid, variant.intervalMs), /sampler already started/);
      const series = s.stop();
      assert.ok(series.tMs.length >= 1);
      assert.throws(() => s.stop(), /sampler already stopped/);
      assert.throws(() => s.start(process.pid, variant.intervalMs), /already stopped; create a new sampler/);
      assert.equal(s.read().tMs.length, series.tMs.length, 'read after stop returns the final series');
    });

    it('ends the series when the process exits', async () => {
      const child = spawn(PYTHON, ['-c', 'import time; time.sleep(0.4)'], { stdio: 'ignore' });
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      const s = variant.make();
      await sleep(100);
      s.start(child.pid!, variant.intervalMs);
      await exited;
      await waitFor(() => s.read().exited, 3000, 'the sampler to notice the exit');
      const atExit = s.read();
      assert.equal(atExit.running, false);
      assert.match(atExit.endReason ?? '', /process exited/);
      assert.ok(atExit.tMs.length >= 3, `only ${atExit.tMs.length} samples before exit`);
      await sleep(100);
      const final = s.stop();
      assert.equal(final.tMs.length, atExit.tMs.length, 'no samples after the exit');
      assert.equal(final.exited, true);
      assert.match(final.endReason ?? '', /process exited/, 'stop() keeps the exit as the end reason');
    });

    it('reports GPU absence as data, not an exception', () => {
      const s = variant.make();
      s.start(process.pid, variant.intervalMs, { nvmlLibrary: '/nonexistent/libnvidia-ml.so.1' });
      const series = s.stop();
      assert.equal(series.gpu.available, false);
      assert.ok(series.gpu.reason && series.gpu.reason.length > 10, 'a reason is given');
      assert.equal(series.gpuUsedBytes, null);
      assert.equal(series.gpuProcessBytes, null);
      assert.equal(series.gpuTotalBytes, null);
    });

    it('keeps timestamps increasing from ~0 and the effective interval', async () => {
      const s = variant.make();
      s.start(process.pid, variant.intervalMs);
      await sleep(300);
      const series = s.stop();
      assert.equal(series.intervalMs, variant.intervalMs);
      assert.ok(series.tMs[0] < 5, `first sample at ${series.tMs[0]} ms`);
      for (let i = 1; i < series.tMs.length; i++) assert.ok(series.tMs[i] > series.tMs[i - 1]);
      assert.ok(Math.abs(series.startedAtEpochMs - (Date.now() - 300)) < 2000);
      assert.equal(series.rssBytes.length, series.tMs.length);
      const rss = series.rssBytes[series.rssBytes.length - 1];
      assert.ok(rss > 10 * MiB && rss < 4096 * MiB, `own RSS ${rss}`);
    });
  });
}
