// "Profile this step" in a notebook: the cells' program (notebookProgram.ts) is run as a temporary
// script, and the report's lines in that script are mapped back to cells for the hints. This module
// decides whether that can work and does the mapping; the controller writes and removes the file.
// No `vscode` here (unit-tested).
import type { LineHint } from '../hints/model';
import { cellOfLine, programLineOf, type CellInput, type NotebookProgram } from '../lint/notebookProgram';

/**
 * IPython features whose effect the exported script cannot have, so a step that depends on them would
 * fail or measure something else: `%run`/`%load` bring in code that is not in the cells, `%store -r`
 * and `%recall` restore kernel state, `%%writefile` writes a file later cells may read, and
 * `get_ipython()` does not exist outside a kernel. Other magics (`%matplotlib`, `!pip install`,
 * `%time`) are skipped safely: they are comments in the script.
 */
const KERNEL_ONLY: readonly { readonly pattern: RegExp; readonly what: string }[] = [
  { pattern: /^\s*%(?:run|load)\b/m, what: '%run / %load (code from outside the notebook)' },
  { pattern: /^\s*%(?:store|recall|rerun|macro)\b/m, what: '%store / %recall (kernel state)' },
  { pattern: /^\s*%%writefile\b/m, what: '%%writefile' },
  { pattern: /\bget_ipython\s*\(/, what: 'get_ipython()' },
];

/**
 * Null when the step can run from the exported script; else one line saying why not. `stepCell` is the
 * index of the cell that defines the step.
 */
export function whyNotExportable(cells: readonly CellInput[], program: NotebookProgram, stepCell: number, action: string): string | null {
  if (!program.segments.some((s) => s.cell === stepCell)) {
    return `cannot ${action} this cell: it is not a Python code cell, so it is not part of the notebook's program.`;
  }
  for (const s of program.segments) {
    const cell = cells.find((c) => c.index === s.cell);
    const found = KERNEL_ONLY.find((k) => cell !== undefined && k.pattern.test(cell.text));
    if (found !== undefined) {
      return `cannot ${action} a step in this notebook: cell ${s.cell + 1} uses ${found.what}, which a plain Python script run outside the kernel cannot reproduce. Export the notebook to a Python script, replace it with code, and ${action} the step there.`;
    }
  }
  return null;
}

/**
 * The report's hints for the exported script, restricted to one cell and moved to the cell's lines
 * (hint lines are 0-based, as are the program's).
 */
export function hintsForCell(scriptHints: readonly LineHint[], program: NotebookProgram, cell: number): LineHint[] {
  const out: LineHint[] = [];
  for (const h of scriptHints) {
    const at = cellOfLine(program, h.line);
    if (at !== null && at.cell === cell) out.push({ ...h, line: at.at });
  }
  return out;
}

/** The 1-based script line of a cell's 0-based line (a loop header chosen in the cell, a failure location). */
export function scriptLineOf(program: NotebookProgram, cell: number, line: number): number | null {
  const l = programLineOf(program, cell, line);
  return l === null ? null : l + 1;
}

/** A 1-based script line as "cell N, line M" for messages, or null when the line is in no cell. */
export function describeScriptLine(program: NotebookProgram, line: number): string | null {
  const at = cellOfLine(program, line - 1);
  return at === null ? null : `cell ${at.cell + 1}, line ${at.at + 1}`;
}

/** `script.py:12` in an error as the notebook cell it came from, since the script is gone after the run. */
export function errorInCells(error: string, script: string, program: NotebookProgram): string {
  const escaped = script.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return error
    .replace(new RegExp(`${escaped}:(\\d+)`, 'g'), (whole, line: string) => describeScriptLine(program, Number(line)) ?? whole)
    .replace(new RegExp(`File "${escaped}", line (\\d+)`, 'g'), (whole, line: string) => describeScriptLine(program, Number(line)) ?? whole);
}
