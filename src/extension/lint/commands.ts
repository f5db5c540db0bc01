// Lint commands that are thin glue over the controllers: rule docs, fix all.
import * as vscode from 'vscode';
import { allRules } from '../../lint';
import type { MemhintCodeActions } from './codeActions';
import { ruleDocUri } from './ruleDocs';

/** Opens docs/rules/MHxxx.md from the extension in the Markdown preview (or as text when the preview is unavailable). */
export async function showRuleDocs(extensionUri: vscode.Uri, code?: string): Promise<void> {
  let chosen = code;
  if (chosen === undefined) {
    const pick = await vscode.window.showQuickPick(
      allRules.map((r) => ({ label: r.code, description: r.name, detail: r.summary })),
      { title: 'memhint: rule documentation' },
    );
    chosen = pick?.label;
  }
  if (chosen === undefined) return;
  const uri = ruleDocUri(extensionUri, chosen.toUpperCase());
  if (uri === null) {
    void vscode.window.showWarningMessage(`memhint: no documentation page for ${chosen}.`);
    return;
  }
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch {
    await vscode.window.showTextDocument(uri, { preview: true });
  }
}

export async function fixAll(actions: MemhintCodeActions, editor: vscode.TextEditor | undefined): Promise<number> {
  if (editor === undefined || editor.document.languageId !== 'python') {
    void vscode.window.showInformationMessage('memhint: open a Python file to fix.');
    return 0;
  }
  const edit = actions.fixAllEdit(editor.document);
  if (edit === null) {
    void vscode.window.setStatusBarMessage('memhint: nothing to fix', 3000);
    return 0;
  }
  return (await vscode.workspace.applyEdit(edit)) ? 1 : 0;
}
