// Plain data shared by the rules, the engine, the CLI and the editor adapter. No `vscode` here.
import type { AnalysisSession } from './session';
import type { SourceFile } from './syntax';

export type RuleCode = `MH${number}`;
export type Severity = 'error' | 'warning' | 'info';

/** A replacement of source[start, end) by newText; offsets are UTF-16 code units, like VS Code's. */
export interface TextEdit {
  readonly start: number;
  readonly end: number;
  readonly newText: string;
}

/** A safe, self-contained autofix. All edits apply together and must not overlap. */
export interface Fix {
  readonly title: string;
  readonly edits: readonly TextEdit[];
}

/** What a rule reports: a range in the source plus why memory is at stake. */
export interface RuleFinding {
  readonly start: number;
  readonly end: number;
  readonly message: string;
  readonly fix?: Fix | null;
  /** Overrides the rule's default severity for this finding. */
  readonly severity?: Severity;
}

export interface Finding extends RuleFinding {
  readonly code: RuleCode;
  readonly name: string;
  readonly severity: Severity;
  readonly fix: Fix | null;
}

/** A `major.minor` PyTorch version the user targets; null when unknown. */
export interface TorchVersion {
  readonly major: number;
  readonly minor: number;
}

export interface RuleOptions {
  /** Target torch; null means "assume current 2.x". */
  readonly targetTorch: TorchVersion | null;
}

export interface Rule {
  readonly code: RuleCode;
  readonly name: string;
  readonly severity: Severity;
  /** One line for docs and `--help`. */
  readonly summary: string;
  /**
   * Syntax in, findings out. Must not throw on broken code. Whatever it memoises lives in `session`
   * (the file's own, `file.session`), declared through a memo descriptor (see session.ts), never in
   * module-level state.
   */
  check(file: SourceFile, session: AnalysisSession, options: RuleOptions): RuleFinding[];
}

export function parseTorchVersion(text: string | undefined | null): TorchVersion | null {
  if (!text) return null;
  const m = /^\s*(\d+)(?:\.(\d+))?/.exec(text);
  if (!m) return null;
  return { major: Number(m[1]), minor: m[2] === undefined ? 0 : Number(m[2]) };
}

export function formatTorchVersion(v: TorchVersion): string {
  return `${v.major}.${v.minor}`;
}

export function torchAtLeast(v: TorchVersion | null, major: number, minor = 0): boolean {
  if (v === null) return true; // unknown target: assume a current torch
  return v.major > major || (v.major === major && v.minor >= minor);
}
