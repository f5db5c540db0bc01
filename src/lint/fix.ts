// Applies findings' fixes to a text. Overlapping fixes are deferred to a later pass, not merged.
import type { Finding, TextEdit } from './types';

export interface FixResult {
  readonly text: string;
  readonly applied: number;
}

/** Applies every non-overlapping fix once; returns the new text and how many fixes went in. */
export function applyFixes(text: string, findings: readonly Finding[]): FixResult {
  const accepted: TextEdit[] = [];
  let applied = 0;
  const fixes = findings.flatMap((f) => (f.fix === null ? [] : [f.fix]));
  for (const fix of fixes) {
    const edits = [...fix.edits].sort((a, b) => a.start - b.start);
    if (edits.some((e) => e.start < 0 || e.end > text.length || e.end < e.start)) continue;
    if (edits.some((e) => accepted.some((a) => overlaps(a, e)))) continue;
    accepted.push(...edits);
    applied++;
  }
  accepted.sort((a, b) => b.start - a.start || b.end - a.end);
  let out = text;
  for (const e of accepted) out = out.slice(0, e.start) + e.newText + out.slice(e.end);
  return { text: out, applied };
}

function overlaps(a: TextEdit, b: TextEdit): boolean {
  // Two insertions at one point would interleave unpredictably: treat as overlapping.
  if (a.start === a.end && b.start === b.end) return a.start === b.start;
  return a.start < b.end && b.start < a.end;
}

/** Re-lints and re-applies until no fix applies (fixes may unlock or shift one another). */
export function fixUntilStable(text: string, lintText: (t: string) => Finding[], maxPasses = 10): FixResult {
  let current = text;
  let total = 0;
  for (let pass = 0; pass < maxPasses; pass++) {
    const { text: next, applied } = applyFixes(current, lintText(current));
    if (applied === 0 || next === current) break;
    current = next;
    total += applied;
  }
  return { text: current, applied: total };
}
