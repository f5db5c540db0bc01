// Tells the user why a document cannot be profiled or predicted (runnableDocument.ts), offering the
// Jupyter extension's export when the document is a notebook cell and that command exists.
import * as vscode from 'vscode';
import { EXPORT_NOTEBOOK_COMMAND } from './runnableDocument';

export function refuse(reason: string, document: vscode.TextDocument | undefined): void {
  void (async () => {
    const inNotebook = document === undefined ? vscode.window.activeNotebookEditor !== undefined : document.uri.scheme === 'vscode-notebook-cell';
    const canExport = inNotebook && (await vscode.commands.getCommands(true)).includes(EXPORT_NOTEBOOK_COMMAND);
    const exportTitle = 'Export to Python Script';
    const choice = await vscode.window.showErrorMessage(`memhint: ${reason}`, ...(canExport ? [exportTitle] : []));
    if (choice === exportTitle) await vscode.commands.executeCommand(EXPORT_NOTEBOOK_COMMAND);
  })();
}
