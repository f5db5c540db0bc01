// Whether a re-lint changed what a document's diagnostics say. Publishing an identical set is not free:
// every publish is a marker change, on which VS Code re-requests code actions automatically, and an
// automatic request replaces a pending Ctrl+. request (the menu then shows nothing). Re-lints that change
// nothing happen often: the interpreter's torch version arriving after the first lint, a report loaded,
// a setting saved, a keystroke that an undo reverts. Structural types, so no `vscode` here.

interface PositionLike {
  readonly line: number;
  readonly character: number;
}

interface RangeLike {
  readonly start: PositionLike;
  readonly end: PositionLike;
}

export interface DiagnosticLike {
  readonly range: RangeLike;
  readonly message: string;
  readonly severity: number;
  readonly source?: string;
  readonly code?: string | number | { readonly value: string | number; readonly target: { toString(): string } };
  readonly relatedInformation?: readonly { readonly location: { readonly uri: { toString(): string }; readonly range: RangeLike }; readonly message: string }[];
}

function sameRange(a: RangeLike, b: RangeLike): boolean {
  return a.start.line === b.start.line && a.start.character === b.start.character && a.end.line === b.end.line && a.end.character === b.end.character;
}

function codeKey(code: DiagnosticLike['code']): string {
  if (code === undefined) return '';
  return typeof code === 'object' ? `${String(code.value)} ${code.target.toString()}` : String(code);
}

function sameDiagnostic(a: DiagnosticLike, b: DiagnosticLike): boolean {
  if (!sameRange(a.range, b.range) || a.message !== b.message || a.severity !== b.severity || a.source !== b.source || codeKey(a.code) !== codeKey(b.code)) return false;
  const ra = a.relatedInformation ?? [];
  const rb = b.relatedInformation ?? [];
  return ra.length === rb.length && ra.every((r, i) => r.message === rb[i].message && r.location.uri.toString() === rb[i].location.uri.toString() && sameRange(r.location.range, rb[i].location.range));
}

/** True when both lists say the same, in the same order (the order is the findings' order). */
export function sameDiagnostics(a: readonly DiagnosticLike[], b: readonly DiagnosticLike[]): boolean {
  return a.length === b.length && a.every((d, i) => sameDiagnostic(d, b[i]));
}
