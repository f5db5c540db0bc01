// Figures as people read them (bytes, percentages, durations). No `vscode` here.
import { parseByteSize, trimZeros } from '../profiler/units';

export { formatBytes } from '../profiler/units';

/**
 * A size setting (`"64 MiB"`, `"1.5GB"`, `"512k"`, or bytes as a number) in bytes, by the same rule as
 * the CLI's `--budget` (see parseByteSize). Null when unreadable or negative.
 */
export function parseBytes(text: string | number): number | null {
  if (typeof text === 'number') return Number.isFinite(text) && text >= 0 ? Math.round(text) : null;
  return parseByteSize(text);
}

/** `0.8513` -> `85%`. */
export function formatPercent(fraction: number): string {
  return `${Math.round(fraction * 100)}%`;
}

/** Milliseconds as `850 ms` / `2.3 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${trimZeros((ms / 1000).toFixed(ms < 10_000 ? 2 : 1))} s`;
}
