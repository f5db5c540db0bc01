// Bridges the sampler to the profiler's report: starts a sampler on the harness child and, at the end,
// returns the compact series as the report's `timeline.os` (see report.ts OsTimeline). It lives on the
// profiler's side so that src/sampler never imports src/profiler (no import cycle).
import type { OsTimeline } from './report';
import { createSampler, seriesToJSON, type CreateSamplerOptions } from '../sampler';
import type { MemorySampler } from '../sampler/types';

/** 5 ms: fine enough to see per-step swings, about 0.3-0.5% of a core on the machines measured. */
export const DEFAULT_OS_INTERVAL_MS = 5;
export const DEFAULT_OS_MAX_POINTS = 1000;

export interface OsTimelineSampler {
  readonly sampler: MemorySampler;
  stop(): OsTimeline | undefined;
}

export interface OsTimelineOptions extends CreateSamplerOptions {
  intervalMs?: number;
  maxPoints?: number;
}

/**
 * Starts sampling `pid`; undefined when the process cannot be sampled (it is already gone, say), since
 * a missing timeline must never cost the profile. `t` of the result is ms since the sampler started,
 * with `startedAtEpochMs` so the runner can move it onto the harness clock.
 */
export function startOsTimelineSampler(pid: number, options: OsTimelineOptions = {}): OsTimelineSampler | undefined {
  const sampler = createSampler(options);
  try {
    sampler.start(pid, options.intervalMs ?? DEFAULT_OS_INTERVAL_MS);
  } catch {
    return undefined;
  }
  let stopped = false;
  return {
    sampler,
    stop(): OsTimeline | undefined {
      if (stopped) return undefined;
      stopped = true;
      return toOsTimeline(sampler, seriesToJSON(sampler.stop(), options.maxPoints ?? DEFAULT_OS_MAX_POINTS));
    },
  };
}

export function toOsTimeline(sampler: Pick<MemorySampler, 'fallbackReason'>, json: ReturnType<typeof seriesToJSON>): OsTimeline | undefined {
  if (json.tMs.length === 0) return undefined;
  const notes: string[] = [];
  if (sampler.fallbackReason) notes.push(`JS sampler every ${json.intervalMs} ms (native addon unavailable: ${sampler.fallbackReason})`);
  if (!json.gpu.available && json.gpu.reason) notes.push(`GPU memory not sampled: ${json.gpu.reason}`);
  if (json.gpu.available && json.gpu.processSeen === false) {
    notes.push('the process never appeared in NVML’s process list (no CUDA context yet, or a container with its own pid namespace)');
  }
  if (json.truncated) notes.push(`OS series truncated: ${json.endReason ?? 'sample limit reached'}`);
  if (json.bucketSize > 1) notes.push(`OS series: ${json.sampleCount} samples, each point the max of ${json.bucketSize}`);
  const used = json.gpuUsedBytes;
  const failed = used ? used.filter((v) => v === null).length : 0;
  if (failed > 0) notes.push(`GPU used series omitted: ${failed} of ${used!.length} NVML readings failed`);
  return {
    source: json.source,
    pid: json.pid,
    t: json.tMs,
    rssBytes: json.rssBytes,
    ...(used && failed === 0 ? { gpuUsedBytes: used as number[] } : {}),
    ...(json.gpuProcessBytes ? { gpuProcessBytes: json.gpuProcessBytes } : {}),
    ...(json.gpuTotalBytes !== null ? { gpuTotalBytes: json.gpuTotalBytes } : {}),
    ...(json.gpu.device ? { gpuDevice: json.gpu.device } : {}),
    intervalMs: json.intervalMs,
    startedAtEpochMs: json.startedAtEpochMs,
    exited: json.exited,
    peakRssBytes: json.peak.rssBytes ?? 0,
    notes,
  };
}
