// What the quick-fix menu offers at a range, answered from the last *published* lint and the edits made
// since, never by linting again. Linting inside provideCodeActions published new diagnostics while VS Code
// was waiting for the answer; the marker change makes VS Code re-request code actions automatically, and
// an automatic request that arrives while Ctrl+.'s request is pending replaces it (500 ms later), so the
// menu showed nothing. Offsets of the published findings are carried through the edits typed since
// (in order, each relative to the text the previous one left); a finding, fix or noqa insertion point
// that an edit touches is left out until the debounced re-lint publishes it again. No `vscode` here.
import type { Finding, TextChange, TextEdit } from '../../lint';

/** A published finding at a range of the current text, with what it can offer there. */
export interface FindingAt {
  /** Index in the published findings (and diagnostics: index i is finding i). */
  readonly index: number;
  readonly finding: Finding;
  /** Start and end in the current text. */
  readonly start: number;
  readonly end: number;
  /** The rule's fix in current offsets; null when it has none or an edit since touched it. */
  readonly fixEdits: readonly TextEdit[] | null;
  /** "Ignore for this line" in current offsets; null when suppressed already or touched since. */
  readonly ignore: TextEdit | null;
}

/**
 * Carries the range [start, end) of the published text through the changes; null when a change
 * overlaps it. Text inserted exactly at either end of a non-empty range does not touch it (it stays
 * outside); an empty range (an insertion point, such as the end of a line for "# noqa") is touched by any
 * change at it, since the user's new text there would otherwise land after the inserted comment.
 */
export function mapRange(start: number, end: number, changes: readonly TextChange[]): { start: number; end: number } | null {
  let s = start;
  let e = end;
  for (const c of changes) {
    const changeEnd = c.rangeOffset + c.rangeLength;
    if (s === e && s >= c.rangeOffset && s <= changeEnd) return null;
    if (e <= c.rangeOffset) continue; // entirely before the change
    if (s >= changeEnd) {
      const delta = c.text.length - c.rangeLength;
      s += delta;
      e += delta;
      continue;
    }
    return null;
  }
  return { start: s, end: e };
}

function mapEdits(edits: readonly TextEdit[], changes: readonly TextChange[]): TextEdit[] | null {
  const out: TextEdit[] = [];
  for (const edit of edits) {
    const at = mapRange(edit.start, edit.end, changes);
    if (at === null) return null;
    out.push({ start: at.start, end: at.end, newText: edit.newText });
  }
  return out;
}

/**
 * The published findings whose current range meets [start, end] (a cursor is start === end; a finding
 * that ends at the cursor counts, as VS Code's own range intersection does). `ignoreOf` gives the noqa
 * insertion of a finding in published offsets (noqaEdit.ts on the published parse).
 */
export function findingsAt(
  findings: readonly Finding[],
  changes: readonly TextChange[],
  start: number,
  end: number,
  ignoreOf: (finding: Finding) => TextEdit | null,
): FindingAt[] {
  const out: FindingAt[] = [];
  findings.forEach((finding, index) => {
    const at = mapRange(finding.start, finding.end, changes);
    if (at === null || at.end < start || at.start > end) return;
    const fixEdits = finding.fix === null ? null : mapEdits(finding.fix.edits, changes);
    const ignore = ignoreOf(finding);
    const ignoreAt = ignore === null ? null : mapEdits([ignore], changes);
    out.push({ index, finding, start: at.start, end: at.end, fixEdits, ignore: ignoreAt === null ? null : ignoreAt[0] });
  });
  return out;
}
