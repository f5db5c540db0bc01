// "Profile this step" in a notebook: the cells' program (notebookProgram.ts) is run as a temporary
// script, and the report's lines in that script are mapped back to cells for the hints. This module
// decides whether that can work and does the mapping; the controller writes and removes the file.
// No `vscode` here (unit-tested).
import { childByField, type SourceFile, type SyntaxNode } from '../../lint';
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

/** Top-level statements that run nothing when executed (beyond decorators and defaults): kept for prediction. */
const DEFINITION_TYPES = new Set(['function_definition', 'class_definition', 'decorated_definition', 'import_statement', 'import_from_statement', 'future_import_statement', 'comment']);

export interface PredictionProgram {
  /** The program with the driving statements commented out, line for line (the cell map is unchanged). */
  readonly program: NotebookProgram;
  /** Cells (0-based indices) some of whose statements were left out, in program order. */
  readonly leftOut: readonly number[];
}

/**
 * The notebook's program as prediction runs it. Prediction imports the script, then calls the setup
 * function and the step itself; a notebook has no `if __name__ == "__main__":`, so the cell that trains
 * (calls the step, directly or through a function of the notebook) would run its whole loop on meta
 * tensors first, and the cells after it read its results. From the first top-level statement that
 * calls the step on, every statement other than a definition or an import is commented out, keeping
 * each line where it was so that hints and errors map back to cells as for a profile. `file` is the
 * parse of `program.text`.
 */
export function predictionProgram(program: NotebookProgram, file: SourceFile, step: string): PredictionProgram {
  const calls = file.nodesOfType('call').map((call) => {
    const fn = childByField(call, 'function');
    return { start: call.start, name: fn !== null && fn.type === 'identifier' ? file.textOf(fn) : null };
  });
  const callsAny = (node: SyntaxNode, names: ReadonlySet<string>): boolean => calls.some((c) => c.start >= node.start && c.start < node.end && c.name !== null && names.has(c.name));
  // The step and the notebook's functions that reach it (a `train()` whose loop calls `train_step`).
  const defs: { name: string; node: SyntaxNode }[] = [];
  for (const child of file.root.children) {
    const def = child.type === 'decorated_definition' ? childByField(child, 'definition') : child;
    const name = def !== null && def.type === 'function_definition' ? childByField(def, 'name') : null;
    if (name !== null) defs.push({ name: file.textOf(name), node: child });
  }
  const reaching = new Set([step]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const d of defs) {
      if (!reaching.has(d.name) && callsAny(d.node, reaching)) {
        reaching.add(d.name);
        grew = true;
      }
    }
  }
  const commented = new Set<number>();
  let driving = false;
  for (const child of file.root.children) {
    if (DEFINITION_TYPES.has(child.type)) continue;
    if (!driving && callsAny(child, reaching)) driving = true;
    if (!driving) continue;
    const last = file.lineOf(Math.max(child.start, child.end - 1));
    for (let l = file.lineOf(child.start); l <= last; l++) commented.add(l);
  }
  if (commented.size === 0) return { program, leftOut: [] };
  const lines = program.text.split('\n').map((text, i) => (commented.has(i) && text.trim() !== '' ? `# ${text}` : text));
  const starts: number[] = [];
  let offset = 0;
  for (const l of lines) {
    starts.push(offset);
    offset += l.length + 1;
  }
  const segments = program.segments.map((s) => {
    const lastLine = s.firstLine + s.lineCount - 1;
    return { ...s, start: starts[s.firstLine], length: starts[lastLine] + lines[lastLine].length - starts[s.firstLine] };
  });
  const leftOut = program.segments.filter((s) => [...commented].some((l) => l >= s.firstLine && l < s.firstLine + s.lineCount)).map((s) => s.cell);
  return { program: { text: lines.join('\n'), segments }, leftOut };
}
