// Compact, JSON-safe form of a series for reports: downsampled to a bounded number of points by
// taking each bucket's maximum, so memory peaks survive (a mean would shave them off).
import type { GpuInfo, SamplerSeries, SamplerSource } from './types';

export interface SeriesJSON {
  source: SamplerSource;
  pid: number;
  intervalMs: number;
  startedAtEpochMs: number;
  sampleCount: number;
  durationMs: number;
  exited: boolean;
  endReason?: string;
  truncated: boolean;
  /** Samples per point (1 = not downsampled); each point is its bucket's max, at the bucket's first time. */
  bucketSize: number;
  gpu: GpuInfo;
  gpuTotalBytes: number | null;
  peak: { rssBytes: number | null; gpuUsedBytes: number | null; gpuProcessBytes: number | null };
  tMs: number[];
  rssBytes: number[];
  /** null entries: the driver withheld the value at that point. */
  gpuUsedBytes: Array<number | null> | null;
  gpuProcessBytes: Array<number | null> | null;
}

export const DEFAULT_MAX_POINTS = 1000;

function peakOf(values: Float64Array | null): number | null {
  if (!values) return null;
  let peak = -Infinity;
  for (const v of values) if (v > peak) peak = v; // NaN never compares greater
  return peak === -Infinity ? null : peak;
}

function bucketMax(values: Float64Array, bucket: number): Array<number | null> {
  const out: Array<number | null> = [];
  for (let i = 0; i < values.length; i += bucket) {
    let m = -Infinity;
    const end = Math.min(i + bucket, values.length);
    for (let j = i; j < end; j++) if (values[j] > m) m = values[j];
    out.push(m === -Infinity ? null : m);
  }
  return out;
}

export function seriesToJSON(series: SamplerSeries, maxPoints = DEFAULT_MAX_POINTS): SeriesJSON {
  const n = series.tMs.length;
  const bucket = Math.max(1, Math.ceil(n / Math.max(1, maxPoints)));
  const times: number[] = [];
  for (let i = 0; i < n; i += bucket) times.push(Math.round(series.tMs[i] * 100) / 100);
  return {
    source: series.source,
    pid: series.pid,
    intervalMs: series.intervalMs,
    startedAtEpochMs: series.startedAtEpochMs,
    sampleCount: n,
    durationMs: n > 0 ? series.tMs[n - 1] : 0,
    exited: series.exited,
    endReason: series.endReason,
    truncated: series.truncated,
    bucketSize: bucket,
    gpu: series.gpu,
    gpuTotalBytes: series.gpuTotalBytes,
    peak: {
      rssBytes: peakOf(series.rssBytes),
      gpuUsedBytes: peakOf(series.gpuUsedBytes),
      gpuProcessBytes: peakOf(series.gpuProcessBytes),
    },
    tMs: times,
    rssBytes: bucketMax(series.rssBytes, bucket).map((v) => v ?? 0),
    gpuUsedBytes: series.gpuUsedBytes && bucketMax(series.gpuUsedBytes, bucket),
    gpuProcessBytes: series.gpuProcessBytes && bucketMax(series.gpuProcessBytes, bucket),
  };
}
