// A Jupyter notebook's Python code cells as one program, so that a model built in one cell and evaluated
// in another is analysed together, and the way back: program offsets and lines to (cell, offset / line).
// No `vscode` here (unit-tested); the editor adapter feeds plain cell data and publishes per cell.
import type { Finding, Fix } from '../../lint';

/** What the program needs of a notebook cell. */
export interface CellInput {
  /** The cell's index in the notebook (document order). */
  readonly index: number;
  /** False for markdown and raw cells. */
  readonly isCode: boolean;
  readonly languageId: string;
  readonly text: string;
  /** The kernel's execution count of the cell's last run; undefined when it has not run. */
  readonly executionOrder?: number;
}

/** One cell's place in the program. */
export interface CellSegment {
  readonly cell: number;
  /** Offset of the cell's first character in the program (UTF-16 code units). */
  readonly start: number;
  /** The cell's text length; the program has the same length there (magics are neutralised in place). */
  readonly length: number;
  /** 0-based program line of the cell's first line. */
  readonly firstLine: number;
  readonly lineCount: number;
}

export interface NotebookProgram {
  readonly text: string;
  /** In program order (execution order when known). */
  readonly segments: readonly CellSegment[];
}

export interface CellPosition {
  readonly cell: number;
  /** Offset in the cell's text, or 0-based line in the cell, depending on the call. */
  readonly at: number;
}

/** A finding moved onto the cell that holds it: offsets are the cell's, a fix only when it stays in the cell. */
export interface CellFinding {
  readonly cell: number;
  readonly finding: Finding;
  /** True when the program's finding had a fix that touched another cell (published without it). */
  readonly fixDropped: boolean;
}

/**
 * Cell magics whose body is Python run by IPython (the body is kept); any other cell magic (%%bash,
 * %%writefile, %%html, …) makes the body another language, which is blanked out.
 */
const PYTHON_BODY_CELL_MAGICS = new Set(['time', 'timeit', 'capture', 'prun', 'debug', 'memit', 'mprun', 'skip']);

/**
 * The program: code cells that have run, by execution count (the kernel's order), then those that have
 * not, in document order (they would run after what already has). Non-Python code cells and markdown are
 * left out. Each cell starts on a line of its own.
 */
export function buildNotebookProgram(cells: readonly CellInput[]): NotebookProgram {
  const code = cells.filter((c) => c.isCode && c.languageId === 'python');
  const ran = code.filter((c) => c.executionOrder !== undefined).sort((a, b) => a.executionOrder! - b.executionOrder! || a.index - b.index);
  const notRun = code.filter((c) => c.executionOrder === undefined);
  const parts: string[] = [];
  const segments: CellSegment[] = [];
  let offset = 0;
  let line = 0;
  for (const c of [...ran, ...notRun]) {
    const text = neutraliseMagics(c.text);
    const lineCount = text.split('\n').length;
    segments.push({ cell: c.index, start: offset, length: text.length, firstLine: line, lineCount });
    parts.push(text);
    // A separating newline: the next cell starts at column 0, which also closes any block left open.
    offset += text.length + 1;
    line += lineCount;
  }
  return { text: parts.join('\n'), segments };
}

/**
 * IPython syntax made Python without moving anything: each magic line (`%magic`, `!shell`, `x = !cmd`,
 * `obj?`) becomes a comment of the same length, and a non-Python cell magic's whole body too, so every
 * other character keeps its line and column.
 */
export function neutraliseMagics(text: string): string {
  const lines = text.split('\n');
  const first = /^\s*%%(\w+)/.exec(lines[0] ?? '');
  const blankBody = first !== null && !PYTHON_BODY_CELL_MAGICS.has(first[1]);
  return lines.map((l, i) => (i === 0 && first !== null) || (blankBody && i > 0) || isMagicLine(l) ? commentOut(l) : l).join('\n');
}

function isMagicLine(line: string): boolean {
  const t = line.trim();
  if (t.startsWith('%') || t.startsWith('!')) return true;
  // `files = !ls`, `t = %timeit -o f()`: IPython's assignment forms.
  if (/^[\w.,\s[\]()]+=\s*[!%]/.test(t) && !/^[\w.,\s[\]()]+==/.test(t)) return true;
  // `model?`, `torch.cuda??`: help, not an expression (a comment or string ending in `?` is left alone).
  return /^[\w.]+\?{1,2}$/.test(t);
}

/** The line as a comment of the same length (its indentation kept). */
function commentOut(line: string): string {
  const indent = /^\s*/.exec(line)![0].length;
  if (indent === line.length) return line;
  const cr = line.endsWith('\r') ? '\r' : '';
  const body = line.slice(indent, line.length - cr.length);
  return `${line.slice(0, indent)}#${body.slice(1)}${cr}`;
}

/** The cell holding a program offset; an offset at a cell's end (before the separator) is that cell's. */
export function cellOfOffset(program: NotebookProgram, offset: number): CellPosition | null {
  for (const s of program.segments) {
    if (offset >= s.start && offset <= s.start + s.length) return { cell: s.cell, at: offset - s.start };
  }
  return null;
}

/** The cell and 0-based cell line of a 0-based program line (for a profile report's line numbers). */
export function cellOfLine(program: NotebookProgram, line: number): CellPosition | null {
  for (const s of program.segments) {
    if (line >= s.firstLine && line < s.firstLine + s.lineCount) return { cell: s.cell, at: line - s.firstLine };
  }
  return null;
}

/** The 0-based program line of a cell's 0-based line, or null when the cell is not in the program. */
export function programLineOf(program: NotebookProgram, cell: number, line: number): number | null {
  const s = program.segments.find((x) => x.cell === cell);
  if (s === undefined || line < 0 || line >= s.lineCount) return null;
  return s.firstLine + line;
}

/**
 * Each program finding on its cell, with cell offsets. A range that runs past its cell's end is cut there
 * (a diagnostic cannot span cells); a fix whose edits leave the finding's cell is dropped, since one
 * quick fix cannot edit two cells' documents as the finding's fix.
 */
export function findingsByCell(program: NotebookProgram, findings: readonly Finding[]): CellFinding[] {
  const out: CellFinding[] = [];
  for (const f of findings) {
    const start = cellOfOffset(program, f.start);
    if (start === null) continue;
    const segment = program.segments.find((s) => s.cell === start.cell)!;
    const end = Math.min(f.end - segment.start, segment.length);
    const fix = f.fix === null ? null : fixInCell(f.fix, segment);
    out.push({ cell: start.cell, finding: { ...f, start: start.at, end: Math.max(end, start.at), fix }, fixDropped: f.fix !== null && fix === null });
  }
  return out;
}

function fixInCell(fix: Fix, segment: CellSegment): Fix | null {
  const edits = [];
  for (const e of fix.edits) {
    if (e.start < segment.start || e.end > segment.start + segment.length) return null;
    edits.push({ start: e.start - segment.start, end: e.end - segment.start, newText: e.newText });
  }
  return { title: fix.title, edits };
}
