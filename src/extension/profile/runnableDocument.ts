// Whether a document is something memhint can run (profile or predict): the harness runs a saved .py
// file with Python. When it is not, one line that says why and what to do instead, rather than a
// generic "open a Python file" that leaves a notebook user guessing. No `vscode` here (unit-tested).

export interface DocumentLike {
  readonly languageId: string;
  readonly uri: { readonly scheme: string };
}

/** The command the Jupyter extension contributes for turning a notebook into a .py file. */
export const EXPORT_NOTEBOOK_COMMAND = 'jupyter.exportAsPythonScript';

/**
 * Null when DOCUMENT can be run; else the reason, as one sentence for an error notification.
 * `action` is the verb of the command ("profile", "predict"); `notebookActive`: no text editor has focus
 * but a notebook does (the palette was opened on the notebook rather than in a cell); `notebookCells`: the
 * command can run a step defined in a notebook cell (profile and predict both can, from the exported cells).
 */
export function whyNotRunnable(document: DocumentLike | undefined, action: string, notebookActive = false, notebookCells = false): string | null {
  const inNotebook = document === undefined ? notebookActive : document.uri.scheme === 'vscode-notebook-cell';
  // Profiling runs a cell's step from the notebook's code exported to a temporary script (notebookScript.ts);
  // it needs the cell (which step, which notebook), so a notebook without a focused cell is still refused.
  if (inNotebook && document !== undefined && notebookCells && document.languageId === 'python') return null;
  if (inNotebook && document === undefined && notebookCells) return `put the cursor in the notebook cell that defines the step to ${action}.`;
  if (inNotebook && notebookCells) return `put the cursor in the Python cell that defines the step to ${action}: this cell is ${document!.languageId}.`;
  if (inNotebook) {
    // A command that cannot run a cell's step (none since predict can): say what to do instead.
    return `cannot ${action} a step in a notebook yet: memhint runs a saved .py file with Python, and notebook cells are not one. Export the notebook to a Python script (Jupyter: Export to Python Script) and ${action} the step there.`;
  }
  if (document === undefined) return `open a Python file and put the cursor in the training step to ${action}.`;
  if (document.languageId !== 'python') return `open a Python file and put the cursor in the training step to ${action}.`;
  if (document.uri.scheme === 'untitled') return `save this file first: memhint runs the saved file with Python to ${action} it.`;
  if (document.uri.scheme !== 'file') return `cannot ${action} a ${document.uri.scheme}: file: memhint runs files on this machine's disk with Python.`;
  return null;
}
