// The sampler's public shapes. Other modules (profiler runner, report) code against these names.

export type SamplerSource = 'native' | 'js';

export interface GpuInfo {
  available: boolean;
  /** Why GPU memory is not sampled (no driver, NVML error, JS fallback, disabled). */
  reason?: string;
  /** NVML device name of the tracked device. */
  device?: string;
  /** NVML index of the tracked device. */
  index?: number;
  /** Whether the pid ever appeared in NVML's compute-process list (false in containers with their own pid namespace). */
  processSeen?: boolean;
}

export interface SamplerSeries {
  source: SamplerSource;
  /** Effective interval (the JS fallback clamps to its own minimum). */
  intervalMs: number;
  pid: number;
  /** ms since start (steady clock). */
  tMs: Float64Array;
  rssBytes: Float64Array;
  /** Device memory in use by all processes on the tracked GPU; null without NVML. */
  gpuUsedBytes: Float64Array | null;
  gpuTotalBytes: number | null;
  /** This pid's own device memory summed over GPUs (NaN where the driver withholds it); null without NVML. */
  gpuProcessBytes: Float64Array | null;
  gpu: GpuInfo;
  /** The process exited while sampled; the series ends there. */
  exited: boolean;
  /** Extensions beyond the core contract. */
  running: boolean;
  endReason?: string;
  endedAtMs?: number;
  /** Wall-clock time of tMs = 0, to line the series up with other timelines. */
  startedAtEpochMs: number;
  /** The series hit its sample limit and stopped early. */
  truncated: boolean;
  /** CPU used by the sampling thread so far (native only). */
  samplerCpuMs?: number;
  /** Ticks skipped because the sampler fell behind. */
  lateTicks: number;
}

export interface SamplerStartOptions {
  /** Sample GPU memory through NVML (native only). Default true. */
  gpu?: boolean;
  /** GPU query interval; between queries the last reading holds. Default: max(intervalMs, 20). */
  gpuIntervalMs?: number;
  /** NVML device index to report used/total for; default: the device the process allocates on, else 0. */
  gpuIndex?: number;
  /** Library to dlopen instead of libnvidia-ml.so.1. */
  nvmlLibrary?: string;
  /** Samples kept before the series is truncated. */
  maxSamples?: number;
  /** Native only: samples the first block holds before it grows (tuning; default about a minute). */
  initialCapacity?: number;
}

export interface MemorySampler {
  readonly source: SamplerSource;
  /** Set when the JS fallback is in use: why the native addon is not. */
  readonly fallbackReason?: string;
  start(pid: number, intervalMs: number, options?: SamplerStartOptions): void;
  /** Samples accumulated so far: typed-array views, no per-sample copies. */
  read(): SamplerSeries;
  /** Ends the series; a second call throws. */
  stop(): SamplerSeries;
}
