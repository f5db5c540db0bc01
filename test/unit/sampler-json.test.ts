// seriesToJSON: bounded size, peaks preserved, NaN made JSON-safe.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { seriesToJSON, type SamplerSeries } from '../../src/sampler';
import { toOsTimeline } from '../../src/profiler/os-timeline';

function series(rss: number[], gpuProcess: number[] | null = null): SamplerSeries {
  return {
    source: 'native',
    intervalMs: 1,
    pid: 42,
    tMs: Float64Array.from(rss, (_, i) => i * 1.0001),
    rssBytes: Float64Array.from(rss),
    gpuUsedBytes: gpuProcess && Float64Array.from(gpuProcess, (v) => (Number.isNaN(v) ? v : v + 100)),
    gpuTotalBytes: gpuProcess ? 1e12 : null,
    gpuProcessBytes: gpuProcess && Float64Array.from(gpuProcess),
    gpu: gpuProcess ? { available: true, device: 'X' } : { available: false, reason: 'none' },
    exited: true,
    running: false,
    endReason: 'process exited',
    startedAtEpochMs: 1e12,
    truncated: false,
    lateTicks: 0,
  };
}

describe('seriesToJSON', () => {
  it('keeps every sample when under the limit', () => {
    const j = seriesToJSON(series([1, 5, 3]), 10);
    assert.equal(j.bucketSize, 1);
    assert.deepEqual(j.rssBytes, [1, 5, 3]);
    assert.deepEqual(j.tMs, [0, 1, 2]);
    assert.equal(j.sampleCount, 3);
    assert.equal(j.gpuUsedBytes, null);
    assert.deepEqual(j.peak, { rssBytes: 5, gpuUsedBytes: null, gpuProcessBytes: null });
  });

  it('bounds the points and never loses the peak', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1e9), { minLength: 1, maxLength: 3000 }), fc.integer({ min: 1, max: 200 }), (rss, max) => {
        const j = seriesToJSON(series(rss), max);
        assert.ok(j.tMs.length <= max);
        assert.equal(j.tMs.length, j.rssBytes.length);
        assert.equal(Math.max(...j.rssBytes), Math.max(...rss));
        assert.equal(j.peak.rssBytes, Math.max(...rss));
        assert.equal(j.bucketSize, Math.ceil(rss.length / max));
      }),
    );
  });

  it('turns withheld GPU values into null and survives JSON round trip', () => {
    const j = seriesToJSON(series([1, 2, 3, 4], [Number.NaN, 7, Number.NaN, Number.NaN]), 2);
    assert.deepEqual(j.gpuProcessBytes, [7, null]);
    assert.equal(j.peak.gpuProcessBytes, 7);
    const round = JSON.parse(JSON.stringify(j)) as typeof j;
    assert.deepEqual(round.gpuProcessBytes, [7, null]);
    assert.equal(round.gpuTotalBytes, 1e12);
  });
});

describe('toOsTimeline', () => {
  it('carries the series, GPU figures and the reasons as notes', () => {
    const s = series([10, 20, 30], [5, 6, 7]);
    s.gpu = { available: true, device: 'X', processSeen: false };
    const tl = toOsTimeline({ fallbackReason: undefined }, seriesToJSON(s))!;
    assert.deepEqual(tl.rssBytes, [10, 20, 30]);
    assert.deepEqual(tl.gpuUsedBytes, [105, 106, 107]);
    assert.deepEqual(tl.gpuProcessBytes, [5, 6, 7]);
    assert.equal(tl.gpuTotalBytes, 1e12);
    assert.equal(tl.gpuDevice, 'X');
    assert.equal(tl.startedAtEpochMs, 1e12);
    assert.equal(tl.peakRssBytes, 30);
    assert.ok(tl.notes?.some((n) => /never appeared in NVML/.test(n)));
  });

  it('omits a GPU-used series with failed readings and says so; notes the JS fallback', () => {
    const tl = toOsTimeline({ fallbackReason: 'addon not built' }, seriesToJSON(series([1, 2], [Number.NaN, 1])))!;
    assert.equal(tl.gpuUsedBytes, undefined);
    assert.ok(tl.notes?.some((n) => /GPU used series omitted: 1 of 2 NVML readings failed/.test(n)));
    assert.ok(tl.notes?.some((n) => /native addon unavailable: addon not built/.test(n)));
    const none = toOsTimeline({ fallbackReason: undefined }, seriesToJSON(series([1])));
    assert.ok(none?.notes?.some((n) => /GPU memory not sampled: none/.test(n)));
    assert.equal(toOsTimeline({ fallbackReason: undefined }, seriesToJSON(series([]))), undefined);
  });
});
