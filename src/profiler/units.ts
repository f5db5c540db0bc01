// Byte sizes for the command line (`--budget 24GiB`) and for human-readable reports.

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

/** Parses `24GiB`, `512 MB`, `1.5g`, `4096` (bytes). Returns null when the text is not a size. */
export function parseByteSize(text: string): number | null {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!match) return null;
  const unit = UNITS[(match[2] || 'b').toLowerCase()];
  if (unit === undefined) return null;
  const value = Number(match[1]) * unit;
  return Number.isFinite(value) ? Math.round(value) : null;
}

/** `4.0 MiB`, `512 B`, `-1.2 GiB`: binary units, one decimal above bytes. */
export function formatBytes(bytes: number): string {
  const sign = bytes < 0 ? '-' : '';
  let value = Math.abs(bytes);
  if (value < 1024) return `${sign}${value} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let unit = -1;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${sign}${value.toFixed(1)} ${units[unit]}`;
}
