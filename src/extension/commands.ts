// Commands that are thin glue over the controllers: rule docs, fix all, loading a report from disk.
import * as fs from 'node:fs/promises';
import * as vscode from 'vscode';
import { allRules } from '../lint';
import { isProfileReport } from '../profiler/report';
import type { MemhintCodeActions } from './codeActions';
import { ruleDocUri } from './diagnostics';
import type { ReportStore } from './reportStore';

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

/** "memhint: Open Profile Report…": a JSON report from `memhint profile --format json --out FILE`. */
export async function openReport(reports: ReportStore, uri?: vscode.Uri): Promise<boolean> {
  const target =
    uri ??
    (await vscode.window.showOpenDialog({ canSelectMany: false, filters: { 'memhint report': ['json'] }, title: 'Open a memhint profile report' }))?.[0];
  if (target === undefined) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(await fs.readFile(target.fsPath, 'utf8'));
  } catch (err) {
    void vscode.window.showErrorMessage(`memhint: cannot read ${target.fsPath}: ${String(err)}`);
    return false;
  }
  if (!isProfileReport(parsed)) {
    void vscode.window.showErrorMessage(`memhint: ${target.fsPath} is not a memhint profile report of this version.`);
    return false;
  }
  await reports.set(parsed);
  return true;
}
