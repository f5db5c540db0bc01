// Locates and loads the compiled addon (native/build/Release/memhint_sampler.node). Loading never
// throws: a missing or broken addon yields a reason the caller can show, and the JS fallback runs.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';

export const ADDON_FILE = 'memhint_sampler.node';

export interface NativeSnapshot {
  buffer: ArrayBuffer;
  /** Column stride in doubles: column c starts at byte c * stride * 8. */
  stride: number;
  count: number;
  zeroCopy: boolean;
  pid: number;
  intervalMs: number;
  running: boolean;
  exited: boolean;
  truncated: boolean;
  endReason?: string;
  endedAtMs?: number;
  startedAtEpochMs: number;
  lateTicks: number;
  threadCpuMs: number;
  gpu: { available: boolean; reason?: string; device?: string; index?: number; processSeen: boolean };
  gpuTotalBytes: number | null;
}

export interface NativeSamplerHandle {
  start(pid: number, intervalMs: number, options?: object): void;
  read(): NativeSnapshot;
  stop(): NativeSnapshot;
}

export interface GpuProbe {
  available: boolean;
  reason?: string;
  devices: Array<{ index: number; name: string; totalBytes: number; usedBytes: number }>;
}

export interface NativeAddon {
  NativeSampler: new (options?: { zeroCopy?: boolean }) => NativeSamplerHandle;
  probeGpu(nvmlLibrary?: string): GpuProbe;
  /** Benchmark baseline: CPU of a thread that only wakes on the sampler's schedule. Blocks the caller. */
  measureWakeCost(durationMs: number, intervalMs: number): { wakes: number; cpuMs: number; wallMs: number };
  napiVersion: number;
  columns: number;
}

export type AddonLoad = { ok: true; addon: NativeAddon; path: string } | { ok: false; reason: string };

/** Where the addon may live: an explicit override, next to the bundle, or under native/build of an ancestor. */
export function addonCandidates(fromDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  if (env.MEMHINT_SAMPLER_ADDON) out.push(path.resolve(env.MEMHINT_SAMPLER_ADDON));
  let dir = fromDir;
  for (let depth = 0; depth < 5; depth++) {
    out.push(path.join(dir, ADDON_FILE));
    out.push(path.join(dir, 'native', 'build', 'Release', ADDON_FILE));
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return out;
}

function isAddon(value: unknown): value is NativeAddon {
  const v = value as Partial<NativeAddon> | null;
  return !!v && typeof v.NativeSampler === 'function' && typeof v.probeGpu === 'function';
}

export function loadAddonFrom(candidates: string[]): AddonLoad {
  if (process.platform !== 'linux') {
    return { ok: false, reason: `the native sampler supports Linux only (this is ${process.platform})` };
  }
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) {
    return {
      ok: false,
      reason: `native addon ${ADDON_FILE} not built (looked in ${candidates.length} places, e.g. ${candidates[1] ?? candidates[0]}); run \`npm run build:native\``,
    };
  }
  try {
    // createRequire keeps bundlers from trying to inline a .node file.
    const loaded: unknown = createRequire(__filename)(found);
    if (!isAddon(loaded)) return { ok: false, reason: `${found} is not the memhint sampler addon` };
    return { ok: true, addon: loaded, path: found };
  } catch (err) {
    return { ok: false, reason: `failed to load ${found}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

let cached: AddonLoad | undefined;

export function loadAddon(): AddonLoad {
  cached ??= loadAddonFrom(addonCandidates(__dirname));
  return cached;
}
