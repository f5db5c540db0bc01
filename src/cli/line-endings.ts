// Lone-CR line endings (old Mac style, or a file mangled by a tool) lint the same as LF.
//
// tree-sitter and the rules split lines on \n; a file whose lines end in a bare \r would be one long
// line to them. The linter is given a copy with each lone \r turned into \n: same length, so every
// offset stays valid in the original. Fixes are applied to the original text, with the line breaks
// they insert written as the file's own.
import type { Finding } from '../lint';

const LONE_CR = /\r(?!\n)/g;

/** The text the linter sees: lone \r mapped to \n, nothing else changed. */
export function textForAnalysis(text: string): string {
  return text.includes('\r') ? text.replace(LONE_CR, '\n') : text;
}

/** Whether every line break of `text` is a lone \r (so inserted \n must become \r). */
export function usesLoneCr(text: string): boolean {
  return !text.includes('\n') && text.includes('\r');
}

/** Lints `text` through the mapping; fixes' inserted line breaks follow the original's style. */
export function lintKeepingLineEndings(text: string, lint: (analysisText: string) => Finding[]): Finding[] {
  const findings = lint(textForAnalysis(text));
  if (!usesLoneCr(text)) return findings;
  return findings.map((f) =>
    f.fix === null ? f : { ...f, fix: { ...f.fix, edits: f.fix.edits.map((e) => ({ ...e, newText: e.newText.replace(/\r?\n/g, '\r') })) } },
  );
}
