// Comparing two profiles of the same program where gloo's worker thread may release a few small buffers late.
//
// A gloo collective's Work holds the tensors it was given after wait() returns; the last reference is dropped
// by gloo's worker thread when it gets round to it (docs/distributed.md, "A free that gloo's worker thread
// makes"). DDP's bucket rebuild (second iteration, in warmup) broadcasts two small int32 tensors that nothing
// else holds: normally freed within that warmup forward, but under load the worker thread can be descheduled
// long enough for the free to land in the first profiled step, on whatever line the main thread is running.
// Such a free moves bytes between "freed" and "live" figures by exactly the buffers' sizes; it never changes
// what is allocated, how often, or anything else. That is all this comparison forgives.
import * as assert from 'node:assert/strict';

/** Figures that count what was allocated or how often: a late free never changes them. */
const EXACT = new Set([
  'allocated', 'allocations', 'calls', 'line', 'saved', 'params', 'grads', 'optimizer', 'forward_alloc', 'backward_alloc',
  'bytesByStep', // a leak is what a profiled step allocated and kept: a buffer from warmup is never one
]);

/** Every sum of a subset of `sizes` (each buffer is freed late at most once), zero excluded. */
export function subsetSums(sizes: readonly number[]): Set<number> {
  let sums = new Set<number>([0]);
  for (const size of sizes) sums = new Set([...sums, ...[...sums].map((s) => s + size)]);
  sums.delete(0);
  return sums;
}

/** The paths where `actual` and `expected` differ, except numbers (not counting allocations) that differ by
 * a sum of some of `lateSizes`: the same structure, the same allocations, frees and live bytes equal but for
 * buffers another thread released late. */
export function differencesBeyondLateFrees(actual: unknown, expected: unknown, lateSizes: readonly number[]): string[] {
  const forgiven = subsetSums(lateSizes);
  const out: string[] = [];
  const walk = (a: unknown, e: unknown, path: string, key: string): void => {
    if (typeof a === 'number' && typeof e === 'number') {
      if (a !== e && (EXACT.has(key) || !forgiven.has(Math.abs(a - e)))) out.push(`${path}: ${a} vs ${e}`);
      return;
    }
    if (Array.isArray(a) && Array.isArray(e)) {
      if (a.length !== e.length) out.push(`${path}: ${a.length} vs ${e.length} items`);
      else a.forEach((item, i) => walk(item, e[i], `${path}[${i}]`, key));
      return;
    }
    if (a !== null && e !== null && typeof a === 'object' && typeof e === 'object') {
      const keys = new Set([...Object.keys(a), ...Object.keys(e)]);
      for (const k of keys) walk((a as Record<string, unknown>)[k], (e as Record<string, unknown>)[k], `${path}.${k}`, k);
      return;
    }
    if (a !== e) out.push(`${path}: ${JSON.stringify(a)} vs ${JSON.stringify(e)}`);
  };
  walk(actual, expected, '', '');
  return out;
}

/** assert.deepEqual, forgiving only the late release of buffers of `lateSizes` bytes (see above). */
export function assertEqualButLateFrees(actual: unknown, expected: unknown, lateSizes: readonly number[], message: string): void {
  const differences = differencesBeyondLateFrees(actual, expected, lateSizes);
  assert.deepEqual(differences, [], `${message}: ${differences.slice(0, 12).join('; ')}`);
}
