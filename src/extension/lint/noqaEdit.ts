// The text edit behind "Ignore MHxxx for this line": add the code to the line's `# noqa: ...` list or
// append a new `  # noqa: MHxxx` comment. No `vscode` here.
import { noqaCodesEnd, parseNoqa, type SourceFile, type SyntaxNode } from '../../lint';

export interface InsertEdit {
  readonly start: number;
  readonly end: number;
  readonly newText: string;
}

/**
 * The edit that suppresses `code` on the finding starting at `offset`. Returns null when the line is
 * already suppressed for it. The comment goes on the finding's first line unless that line ends inside
 * a multi-line string, where a `#` would become part of the string; then on the statement's last line.
 */
export function noqaEdit(file: SourceFile, offset: number, code: string): InsertEdit | null {
  let line = file.lineOf(offset);
  const strings = file.nodesOfType('string');
  const lineEnd = (l: number): number => file.lineStarts[l] + file.lineText(l).length;
  for (let guard = 0; guard < 10_000; guard++) {
    const end = lineEnd(line);
    const inside = strings.find((s) => s.start < end && end < s.end);
    if (inside === undefined) break;
    line = file.lineOf(inside.end);
  }
  const comment = commentOn(file, line);
  if (comment !== null) {
    const text = file.textOf(comment);
    const codes = parseNoqa(text);
    if (codes === null || codes?.includes(code)) return null; // bare `# noqa` or already listed
    const codesEnd = noqaCodesEnd(text);
    if (codesEnd !== null) {
      const at = comment.start + codesEnd;
      return { start: at, end: at, newText: `, ${code}` };
    }
  }
  const end = lineEnd(line);
  const trailing = /\s*$/.exec(file.lineText(line))?.[0].length ?? 0;
  return { start: end - trailing, end, newText: `  # noqa: ${code}` };
}

function commentOn(file: SourceFile, line: number): SyntaxNode | null {
  const start = file.lineStarts[line];
  const end = start + file.lineText(line).length;
  return file.nodesOfType('comment').find((c) => c.start >= start && c.end <= end) ?? null;
}
