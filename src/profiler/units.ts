// Byte sizes as the CLI (`--budget 24GiB`) and the editor's settings read them, and as every report
// prints them. One rule everywhere: `KiB`/`MiB`/`GiB` (and bare `k`/`m`/`g`) are binary, `kB`/`MB`/`GB` decimal.

const UNITS: Record<string, number> = {
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1000 ** 4,
  tib: 1024 ** 4,
};

/** Parses `24GiB`, `512 MB` (10^6), `1.5g` (2^30), `4096` (bytes). Returns null when the text is not a size. */
export function parseByteSize(text: string): number | null {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!match) return null;
  const unit = UNITS[(match[2] || 'b').toLowerCase()];
  if (unit === undefined) return null;
  const value = Number(match[1]) * unit;
  return Number.isFinite(value) ? Math.round(value) : null;
}

const BINARY = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/**
 * `1288490189` -> `1.2 GiB`: binary units, two or three significant digits; `signed` adds `+` to
 * positive values (deltas). The one formatter of the CLI report and the editor.
 */
export function formatBytes(bytes: number, options: { signed?: boolean } = {}): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  const sign = bytes < 0 ? '-' : options.signed === true && bytes > 0 ? '+' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BINARY.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${sign}${Math.round(value)} B`;
  // 1023.96 KiB would print as "1024 KiB": carry into the next unit instead.
  let text = value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
  if (Number(text) >= 1024 && unit < BINARY.length - 1) {
    unit++;
    text = (value / 1024).toFixed(2);
  }
  return `${sign}${trimZeros(text)} ${BINARY[unit]}`;
}

/** `1.50` -> `1.5`, `2.00` -> `2`. */
export function trimZeros(text: string): string {
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

/**
 * How many steps a report's per-line totals cover: at least 1, so a run that measured no complete step
 * (partial, OOM in the first step) still divides sanely. The one divisor of the CLI and the editor.
 */
export function profiledSteps(report: { readonly steps: readonly unknown[] }): number {
  return Math.max(1, report.steps.length);
}

/** A total over the profiled steps as a per-step figure (rounded to whole units: bytes, allocations). */
export function perStep(total: number, steps: number): number {
  return Math.round(total / Math.max(1, steps));
}
