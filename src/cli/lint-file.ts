// One file through `memhint lint [--fix]`: read safely, lint, and fix only when that cannot lose data.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FailureLog, type Linter, type LintSettings, type ProjectIndex } from '../lint';
import { fixUntilStable } from '../lint/fix';
import { UnreadableFile, ioMessage } from '../lint/regular-file';
import { ChangedOnDiskError, writeFileAtomic } from './atomic-write';
import { readSource } from './files';
import { lintKeepingLineEndings, textForAnalysis } from './line-endings';
import type { FileFindings } from './report';
import { findSyntaxErrors } from './syntax-errors';

/** The default size limit, shared with the editor (see src/lint/regular-file.ts). */
export { DEFAULT_MAX_FILE_SIZE } from '../lint';

/** Where --fix may write: inside the real paths of the arguments (a file argument's own folder). */
export class FixTargets {
  private readonly roots: string[] = [];
  /** Real paths already fixed this run: two links to one file must not fix it twice. */
  private readonly done = new Set<string>();

  constructor(args: readonly string[]) {
    for (const arg of args) {
      try {
        const stat = fs.statSync(arg);
        this.roots.push(fs.realpathSync(stat.isDirectory() ? arg : path.dirname(arg)));
      } catch {
        // reported by the file listing
      }
    }
  }

  /** The real path to write for `file`, or a one-line reason not to. */
  resolve(file: string): { real: string } | { refused: string } {
    let real: string;
    try {
      real = fs.realpathSync(file);
    } catch (err) {
      return { refused: ioMessage(err) };
    }
    const inside = this.roots.some((root) => real === root || real.startsWith(root.endsWith(path.sep) ? root : root + path.sep));
    if (!inside) return { refused: `a symlink to ${real}, outside the paths given` };
    if (this.done.has(real)) return { refused: `already fixed as ${real}` };
    return { real };
  }

  markDone(real: string): void {
    this.done.add(real);
  }
}

/**
 * Lints one file and, with `fixer`, fixes it. Problems are passed to `warn` as one-line messages
 * (each counts toward exit code 2); returns null when the file could not be checked at all.
 */
export function lintOneFile(
  linter: Linter,
  filename: string,
  settings: LintSettings,
  maxFileSize: number,
  fixer: FixTargets | null,
  warn: (message: string) => void,
  /** The modules the file's imports name are read through it (rules that follow imports); null: the file alone. */
  project: ProjectIndex | null = null,
): FileFindings | null {
  let source;
  try {
    source = readSource(filename, maxFileSize);
  } catch (err) {
    const message = err instanceof UnreadableFile && err.reason === 'too-large' ? `${err.message} (see --max-file-size)` : err instanceof Error ? err.message : String(err);
    warn(`${filename}: ${message}`);
    return null;
  }
  // A rule that throws: the other rules' findings are kept and the failure is reported once per file
  // (--fix lints several times), through the editor's FailureLog: same line, same de-duplication.
  const failures = new FailureLog((line) => warn(line));
  const lint = (text: string): ReturnType<Linter['lintText']> =>
    lintKeepingLineEndings(text, (t) => {
      const result = linter.lint(t, settings, project?.contextFor(filename));
      failures.report(filename, result.failures);
      return result.findings;
    });
  let text = source.text;
  if (fixer !== null) {
    text = fixFile(linter, filename, source, lint, fixer, warn);
    // Files linted later that import this one must see what was written.
    if (text !== source.text) project?.invalidate(filename);
  }
  // Reports locate findings on the analysis text: same offsets, lines split as the linter saw them. A
  // file without findings needs no text in the report: not keeping it (nor copying it from a worker
  // thread) spares a tree's whole text in memory until the report is written.
  const findings = lint(text);
  return { filename, text: findings.length === 0 ? '' : textForAnalysis(text), findings };
}

/** Applies fixes when it is safe; returns the text now on disk (the original when nothing was written). */
function fixFile(
  linter: Linter,
  filename: string,
  source: { readonly text: string; readonly bom: boolean; readonly bytes: Buffer },
  lint: (text: string) => ReturnType<Linter['lintText']>,
  fixer: FixTargets,
  warn: (message: string) => void,
): string {
  const syntax = findSyntaxErrors(linter.parser, textForAnalysis(source.text));
  if (syntax.length > 0) {
    // A fix computed on an error-recovered tree can land anywhere: report, do not touch.
    for (const e of syntax) warn(`${filename}:${e.line}:${e.column}: syntax error (${e.what}), not fixed`);
    return source.text;
  }
  const fixed = fixUntilStable(source.text, lint);
  if (fixed.applied === 0) return source.text;
  if (findSyntaxErrors(linter.parser, textForAnalysis(fixed.text), 1).length > 0) {
    warn(`${filename}: internal error: the fixes would break the syntax, not fixed`);
    return source.text;
  }
  const target = fixer.resolve(filename);
  if ('refused' in target) {
    warn(`${filename}: ${target.refused}, not fixed`);
    return source.text;
  }
  try {
    writeFileAtomic(target.real, (source.bom ? '\ufeff' : '') + fixed.text, { expected: source.bytes });
  } catch (err) {
    if (err instanceof ChangedOnDiskError) warn(`${filename}: changed on disk, not fixed`);
    else warn(`${filename}: cannot write fixes, file left as it was: ${err instanceof Error ? err.message : String(err)}`);
    return source.text;
  }
  fixer.markDone(target.real);
  return fixed.text;
}
