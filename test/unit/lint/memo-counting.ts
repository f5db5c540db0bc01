// Counting a NodeMemo's lookups and computes while a test runs: the reuse tests of giant statements assert
// that an edit elsewhere reuses a memo's result and an edit of what it read recomputes it.
import * as assert from 'node:assert/strict';
import { lintFile, defaultSettings } from '../../../src/lint';
import { NodeMemo } from '../../../src/lint/session';
import type { SourceFile } from '../../../src/lint/syntax';
import { findingsView as view, getLinter, getOracle } from './harness';

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

/** An edit of the open document (the first occurrence of `from` becomes `to`), checked against a fresh linter. */
export type CountedEdit = (from: string, to: string) => MemoCounts & { findings: string[] };

/**
 * Opens `text` in an editor session, checks its findings against a fresh linter, and runs `body` with an
 * `edit` that applies one edit, checks the findings again and returns the NodeMemo `descriptor`'s lookups
 * and computes during that re-lint (the reuse tests of giant statements).
 */
export async function editingWithCounts(text: string, descriptor: string, body: (edit: CountedEdit, first: string[]) => void): Promise<void> {
  const linter = await getLinter();
  const oracle = await getOracle();
  const doc = linter.open(text);
  try {
    const first = view(lintFile(doc.source, defaultSettings));
    assert.deepEqual(first, view(oracle.lintText(text, defaultSettings)), 'before any edit');
    countingMemo(descriptor, doc.source.session, (counts) => {
      body((from, to) => {
        const at = text.indexOf(from);
        assert.ok(at >= 0, `no ${JSON.stringify(from)} to edit`);
        doc.update([{ rangeOffset: at, rangeLength: from.length, text: to }]);
        text = text.slice(0, at) + to + text.slice(at + from.length);
        const before = counts();
        const findings = view(lintFile(doc.source, defaultSettings));
        assert.deepEqual(findings, view(oracle.lintText(text, defaultSettings)), `after ${JSON.stringify(from)} -> ${JSON.stringify(to)}`);
        const after = counts();
        return { lookups: after.lookups - before.lookups, computes: after.computes - before.computes, findings };
      }, first);
    });
  } finally {
    doc.dispose();
  }
}
