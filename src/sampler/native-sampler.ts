// MemorySampler over the addon: the addon's thread samples; read() wraps its block in typed-array views.
import type { NativeAddon, NativeSamplerHandle, NativeSnapshot } from './native-addon';
import type { MemorySampler, SamplerSeries, SamplerStartOptions } from './types';
import { checkInterval, checkPid } from './validate';

export const NATIVE_MIN_INTERVAL_MS = 1;
/** NVML queries are driver ioctls (tens to hundreds of µs); by default they run at most every 20 ms and hold in between. */
export const DEFAULT_MIN_GPU_INTERVAL_MS = 20;

const BYTES_PER_DOUBLE = 8;
const enum Column {
  Time = 0,
  Rss = 1,
  GpuUsed = 2,
  GpuProcess = 3,
}

export function seriesFromSnapshot(s: NativeSnapshot): SamplerSeries {
  const column = (c: Column) => new Float64Array(s.buffer, c * s.stride * BYTES_PER_DOUBLE, s.count);
  const gpu = s.gpu.available;
  return {
    source: 'native',
    intervalMs: s.intervalMs,
    pid: s.pid,
    tMs: column(Column.Time),
    rssBytes: column(Column.Rss),
    gpuUsedBytes: gpu ? column(Column.GpuUsed) : null,
    gpuTotalBytes: gpu ? s.gpuTotalBytes : null,
    gpuProcessBytes: gpu ? column(Column.GpuProcess) : null,
    gpu: { ...s.gpu },
    exited: s.exited,
    running: s.running,
    endReason: s.endReason,
    endedAtMs: s.endedAtMs,
    startedAtEpochMs: s.startedAtEpochMs,
    truncated: s.truncated,
    samplerCpuMs: s.threadCpuMs,
    lateTicks: s.lateTicks,
  };
}

export class NativeMemorySampler implements MemorySampler {
  readonly source = 'native' as const;
  readonly fallbackReason = undefined;
  private readonly handle: NativeSamplerHandle;

  constructor(addon: NativeAddon, options: { zeroCopy?: boolean } = {}) {
    this.handle = new addon.NativeSampler(options);
  }

  start(pid: number, intervalMs: number, options: SamplerStartOptions = {}): void {
    checkPid(pid);
    checkInterval(intervalMs, NATIVE_MIN_INTERVAL_MS);
    this.handle.start(pid, intervalMs, {
      ...options,
      gpuIntervalMs: options.gpuIntervalMs ?? Math.max(intervalMs, DEFAULT_MIN_GPU_INTERVAL_MS),
    });
  }

  read(): SamplerSeries {
    return seriesFromSnapshot(this.handle.read());
  }

  stop(): SamplerSeries {
    return seriesFromSnapshot(this.handle.stop());
  }
}
