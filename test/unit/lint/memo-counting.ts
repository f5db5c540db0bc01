// Counting a NodeMemo's lookups and computes while a test runs: the reuse tests of giant statements assert
// that an edit elsewhere reuses a memo's result and an edit of what it read recomputes it.
import { NodeMemo } from '../../../src/lint/session';
import type { SourceFile } from '../../../src/lint/syntax';

type Method = (this: NodeMemo<unknown>, ...args: unknown[]) => unknown;
const LOOKUPS = ['get', 'getTracked', 'getTrackedWithin'] as const;

export interface MemoCounts {
  lookups: number;
  computes: number;
}

/**
 * Runs `body` counting, for the NodeMemo descriptor `name` in `session`, the lookups (any of `get`,
 * `getTracked`, `getTrackedWithin`) and the computes (a lookup's compute is its last argument). Lookups
 * of other sessions (the oracle's fresh lints run the same descriptors) are not counted.
 */
export function countingMemo<T>(name: string, session: unknown, body: (counts: () => MemoCounts) => T): T {
  const proto = NodeMemo.prototype as unknown as Record<(typeof LOOKUPS)[number], Method>;
  const originals = { get: proto.get, getTracked: proto.getTracked, getTrackedWithin: proto.getTrackedWithin };
  let lookups = 0;
  let computes = 0;
  for (const method of LOOKUPS) {
    const original = originals[method];
    proto[method] = function (...args) {
      if (this.name !== name || (args[0] as SourceFile).session !== session) return original.apply(this, args);
      lookups++;
      const compute = args[args.length - 1] as (...a: unknown[]) => unknown;
      return original.apply(this, [
        ...args.slice(0, -1),
        (...a: unknown[]) => {
          computes++;
          return compute(...a);
        },
      ]);
    };
  }
  try {
    return body(() => ({ lookups, computes }));
  } finally {
    Object.assign(proto, originals);
  }
}
