// Keeps per-line annotations aligned while the user edits: lines above an edit stay, lines below move by
// the number of lines it added or removed, and lines it touched survive only if their text is unchanged
// at the place they could have moved to. No `vscode` here.

/** A change as VS Code reports it (0-based lines and characters). */
export interface LineChange {
  readonly startLine: number;
  readonly startCharacter: number;
  readonly endLine: number;
  readonly endCharacter: number;
  readonly text: string;
}

export interface Anchored {
  readonly line: number;
  /** The line's trimmed text the annotation belongs to. */
  readonly code: string;
}

function newlines(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/** Where `line` can be after one change: zero, one or two candidates (two when the edit touched it). */
export function candidateLines(line: number, change: LineChange): number[] {
  const delta = newlines(change.text) - (change.endLine - change.startLine);
  if (line < change.startLine) return [line];
  if (line > change.endLine) return [line + delta];
  // Touched: it kept its place (text appended after it) or moved with the text after the edit
  // (lines inserted above it). Text equality decides later.
  const out = new Set<number>();
  if (line === change.startLine) out.add(line);
  if (line === change.endLine) out.add(line + delta);
  return [...out];
}

/**
 * Maps annotations through changes applied in order (VS Code sends a multi-cursor edit's changes in
 * descending order, each valid against the text left by the previous one), then keeps those whose line
 * text still matches. `lineText(n)` reads the document after the changes; null past the end.
 */
export function realign<T extends Anchored>(items: readonly T[], changes: readonly LineChange[], lineText: (line: number) => string | null): T[] {
  const out: T[] = [];
  const taken = new Set<number>();
  for (const item of items) {
    let candidates = [item.line];
    for (const change of changes) candidates = [...new Set(candidates.flatMap((l) => candidateLines(l, change)))];
    const hit = candidates.find((l) => !taken.has(l) && lineText(l)?.trim() === item.code);
    if (hit === undefined) continue;
    taken.add(hit);
    out.push(hit === item.line ? item : { ...item, line: hit });
  }
  return out;
}
