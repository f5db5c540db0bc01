// "memhint: Open Profile Report…": loads a JSON report written by the CLI into the editor.
import * as fs from 'node:fs/promises';
import * as vscode from 'vscode';
import { isProfileReport } from '../../profiler/report';
import type { ReportStore } from '../reportStore';

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
