// Entry point: createSampler() returns the native sampler when the addon loads, else the JS fallback
// with the reason. MEMHINT_SAMPLER=js forces the fallback (for comparison and for tests).
import { loadAddon, type GpuProbe } from './native-addon';
import { NativeMemorySampler } from './native-sampler';
import { JsMemorySampler } from './js-sampler';
import type { MemorySampler } from './types';

export type { GpuInfo, MemorySampler, SamplerSeries, SamplerSource, SamplerStartOptions } from './types';
export { seriesToJSON, DEFAULT_MAX_POINTS, type SeriesJSON } from './series-json';
export { JS_MIN_INTERVAL_MS } from './js-sampler';
export { NATIVE_MIN_INTERVAL_MS } from './native-sampler';

export interface CreateSamplerOptions {
  /** 'js' skips the addon. Default: native when available. */
  prefer?: 'native' | 'js';
  /** Native only: false forces a whole-block copy per read instead of a view of native memory. */
  zeroCopy?: boolean;
}

export function createSampler(options: CreateSamplerOptions = {}): MemorySampler {
  const prefer = options.prefer ?? (process.env.MEMHINT_SAMPLER === 'js' ? 'js' : 'native');
  if (prefer === 'js') return new JsMemorySampler('JS sampler requested');
  const load = loadAddon();
  if (!load.ok) return new JsMemorySampler(load.reason);
  return new NativeMemorySampler(load.addon, { zeroCopy: options.zeroCopy });
}

/** Whether the native addon loads here, and why not. */
export function nativeSamplerStatus(): { available: true; path: string } | { available: false; reason: string } {
  const load = loadAddon();
  return load.ok ? { available: true, path: load.path } : { available: false, reason: load.reason };
}

/** What NVML sees on this machine (devices and memory), or why it cannot be used. Never throws. */
export function probeGpu(nvmlLibrary?: string): GpuProbe {
  const load = loadAddon();
  if (!load.ok) return { available: false, reason: `native addon unavailable: ${load.reason}`, devices: [] };
  return load.addon.probeGpu(nvmlLibrary);
}
