// Byte figures as people read them: binary units, two or three significant digits. No `vscode` here.

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** `1288490189` -> `1.2 GiB`; `signed` adds `+` to positive values (deltas). */
export function formatBytes(bytes: number, options: { signed?: boolean } = {}): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  const sign = bytes < 0 ? '-' : options.signed && bytes > 0 ? '+' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${sign}${Math.round(value)} B`;
  // 1023.96 KiB would print as "1024 KiB": carry into the next unit instead.
  let text = value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
  if (Number(text) >= 1024 && unit < UNITS.length - 1) {
    unit++;
    text = (value / 1024).toFixed(2);
  }
  return `${sign}${trimZeros(text)} ${UNITS[unit]}`;
}

function trimZeros(text: string): string {
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

const PARSE = /^\s*([0-9]*\.?[0-9]+)\s*([kmgtp]?)(i?)(b?)\s*$/i;

/**
 * `"64 MiB"`, `"1.5GB"`, `"512k"`, `"0"` -> bytes. Decimal (`MB`) and binary (`MiB`) suffixes are both
 * read as binary: thresholds are approximate and users write them either way. Null when unreadable.
 */
export function parseBytes(text: string | number): number | null {
  if (typeof text === 'number') return Number.isFinite(text) && text >= 0 ? Math.round(text) : null;
  const m = PARSE.exec(text);
  if (m === null) return null;
  const power = ' kmgtp'.indexOf((m[2] || ' ').toLowerCase());
  return Math.round(Number(m[1]) * 1024 ** power);
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
