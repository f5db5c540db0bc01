// Argument checks shared by both samplers, so the two report the same clear errors.

export const MAX_INTERVAL_MS = 60_000;

export function checkPid(pid: number): void {
  if (!Number.isInteger(pid) || pid < 1) throw new RangeError(`invalid pid ${String(pid)}: expected a positive integer`);
}

export function checkInterval(intervalMs: number, minMs: number): void {
  if (!(intervalMs >= minMs && intervalMs <= MAX_INTERVAL_MS)) {
    throw new RangeError(`intervalMs must be between ${minMs} and ${MAX_INTERVAL_MS}, got ${String(intervalMs)}`);
  }
}
