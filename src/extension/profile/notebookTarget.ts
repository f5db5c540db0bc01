// The notebook behind a cell that Profile / Predict was invoked in: its cells' program (in execution order),
// the cell's index, or one line saying why the step cannot run outside the kernel; and where the kernel
// would have started (the run's working directory). Shared by the profile and predict controllers.
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { cellInputsOf, notebookOf } from '../lint/diagnostics';
import { buildNotebookProgram, type CellInput, type NotebookProgram } from '../lint/notebookProgram';
import { whyNotExportable } from './notebookScript';

export interface NotebookTarget {
  readonly uri: vscode.Uri;
  readonly cells: readonly CellInput[];
  readonly program: NotebookProgram;
  /** Index of the cell that holds the step. */
  readonly cell: number;
}

/** The notebook of a cell document, or the reason the step cannot be run from it. */
export function notebookTarget(document: vscode.TextDocument, action: string): NotebookTarget | { readonly refused: string } {
  const nb = notebookOf(document);
  const cell = nb?.getCells().find((c) => c.document === document);
  if (nb === undefined || cell === undefined) return { refused: 'cannot find the notebook of this cell.' };
  const cells = cellInputsOf(nb);
  const program = buildNotebookProgram(cells);
  const refused = whyNotExportable(cells, program, cell.index, action);
  return refused !== null ? { refused } : { uri: nb.uri, cells, program, cell: cell.index };
}

/** Where a notebook's kernel would start: its folder; an untitled notebook's, the workspace (else the temp folder). */
export function notebookCwd(notebook: vscode.Uri): string {
  if (notebook.scheme === 'file') return path.dirname(notebook.fsPath);
  return vscode.workspace.getWorkspaceFolder(notebook)?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.tmpdir();
}
