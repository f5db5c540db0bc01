// Addon specifics: zero-copy views over the native block, growth, truncation, the copy fallback used
// where external buffers are forbidden (Electron), and the sampling rate at 1 ms.
import assert from 'node:assert/strict';
import { createSampler, nativeSamplerStatus } from '../../src/sampler';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { median, sleep } from './sampler-helpers';

describe('sampler (native specifics)', function () {
  this.timeout(30_000);

  before(function () {
    const status = nativeSamplerStatus();
    if (status.available) return;
    if (process.env.MEMHINT_SKIP_NATIVE === '1') this.skip();
    assert.fail(`native addon unavailable: ${status.reason} (set MEMHINT_SKIP_NATIVE=1 to skip)`);
  });

  it('samples at a steady 1 ms off the JS thread, even while JS is busy', async () => {
    const s = createSampler();
    s.start(process.pid, 1);
    const busyUntil = Date.now() + 300;
    while (Date.now() < busyUntil) {
      // Block the event loop: a JS-timer sampler would record nothing here.
    }
    await sleep(200);
    const series = s.stop();
    const gaps = Array.from(series.tMs.subarray(1), (t, i) => t - series.tMs[i]);
    const duringBusy = series.tMs.filter((t) => t < 290).length;
    assert.ok(duringBusy > 100, `only ${duringBusy} samples while the JS thread was blocked`);
    const m = median(gaps);
    assert.ok(m > 0.9 && m < 1.3, `median gap ${m.toFixed(3)} ms`);
    assert.ok((series.samplerCpuMs ?? -1) >= 0);
  });

  it('hands out views over one native block, stable across reads', async () => {
    const s = createSampler();
    s.start(process.pid, 1);
    await sleep(30);
    const a = s.read();
    const snapshot = Array.from(a.tMs);
    await sleep(30);
    const b = s.read();
    s.stop();
    assert.equal(a.tMs.buffer, b.tMs.buffer, 'same ArrayBuffer: no copy per read');
    assert.equal(a.rssBytes.buffer, a.tMs.buffer);
    assert.ok(b.tMs.length > a.tMs.length);
    assert.deepEqual(Array.from(a.tMs), snapshot, 'published samples never change');
    assert.deepEqual(Array.from(b.tMs.subarray(0, a.tMs.length)), snapshot);
  });

  it('grows the block without disturbing earlier views', async () => {
    const s = createSampler();
    s.start(process.pid, 1, { initialCapacity: 16 });
    await sleep(10);
    const early = s.read();
    const earlyCopy = Array.from(early.rssBytes);
    await sleep(120);
    const series = s.stop();
    assert.ok(series.tMs.length > 64, `${series.tMs.length} samples`);
    assert.notEqual(series.tMs.buffer, early.tMs.buffer, 'a new block after growth');
    assert.deepEqual(Array.from(early.rssBytes), earlyCopy);
    assert.deepEqual(Array.from(series.rssBytes.subarray(0, earlyCopy.length)), earlyCopy);
  });

  it('truncates at maxSamples and says so', async () => {
    const s = createSampler();
    s.start(process.pid, 1, { maxSamples: 40 });
    await sleep(150);
    const atLimit = s.read();
    assert.equal(atLimit.tMs.length, 40);
    assert.equal(atLimit.truncated, true);
    assert.equal(atLimit.running, false);
    assert.match(atLimit.endReason ?? '', /sample limit reached \(40 samples\)/);
    const final = s.stop();
    assert.equal(final.exited, false);
    assert.match(final.endReason ?? '', /sample limit/);
  });

  it('copies the whole block per read when zero-copy is off (Electron)', async () => {
    const s = createSampler({ zeroCopy: false });
    s.start(process.pid, 1);
    await sleep(30);
    const a = s.read();
    await sleep(10);
    const b = s.stop();
    assert.notEqual(a.tMs.buffer, b.tMs.buffer);
    assert.equal(a.tMs.buffer.byteLength, a.tMs.length * 4 * 8, 'exactly the samples, four columns');
    assert.deepEqual(Array.from(b.tMs.subarray(0, a.tMs.length)), Array.from(a.tMs));
    assert.ok(b.rssBytes.every((v) => v > 0));
  });

  it('stops the thread of a sampler that is garbage-collected while running', () => {
    // In a child with --expose-gc: count this process's threads before, with 8 running samplers, and
    // after dropping them and collecting. The addon's finalizer must stop and join each thread.
    const script = `
      const { createSampler } = require(${JSON.stringify(path.resolve(__dirname, '../../src/sampler'))});
      const threads = () => require('fs').readdirSync('/proc/self/task').length;
      const before = threads();
      (() => { for (let i = 0; i < 8; i++) createSampler().start(process.pid, 1); })();
      const running = threads();
      setTimeout(() => {
        for (let i = 0; i < 5; i++) globalThis.gc();
        setTimeout(() => { globalThis.gc(); setTimeout(() => console.log(JSON.stringify({ before, running, after: threads() })), 100); }, 100);
      }, 50);`;
    const out = execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    const { before, running, after } = JSON.parse(out) as { before: number; running: number; after: number };
    assert.equal(running, before + 8, 'one thread per running sampler');
    assert.equal(after, before, 'collected samplers leave no thread behind');
  });

  it('rejects absurd options with a RangeError instead of aborting the process', () => {
    // In a child process: before the fix, initialCapacity 1e18 ended the whole process in std::terminate.
    const addon = path.resolve(__dirname, '../../../native/build/Release/memhint_sampler.node');
    const cases = [
      '{ initialCapacity: 1e18, maxSamples: 1e18 }',
      '{ initialCapacity: NaN }',
      '{ initialCapacity: Infinity, maxSamples: Infinity }',
      '{ maxSamples: 2.5 }',
      '{ maxSamples: -1 }',
      '{ gpuIntervalMs: -5 }',
      '{ gpuIntervalMs: NaN }',
      '{ gpuIndex: 1e12 }',
    ];
    const script = `const a = require(${JSON.stringify(addon)}); const out = [];
      for (const o of [${cases.join(', ')}]) {
        const s = new a.NativeSampler({});
        try { s.start(process.pid, 10, o); out.push('started'); s.stop(); } catch (e) { out.push(e.constructor.name + ': ' + e.message); }
      }
      process.stdout.write(JSON.stringify(out));`;
    const results = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf-8' })) as string[];
    assert.equal(results.length, cases.length);
    results.forEach((r, i) => assert.match(r, /^RangeError: (initialCapacity|maxSamples|gpuIntervalMs|gpuIndex) must be/, cases[i]));
  });
});
