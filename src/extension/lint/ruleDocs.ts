// Where a rule's documentation page lives inside the extension (docs/rules/MHxxx.md).
import * as fs from 'node:fs';
import * as vscode from 'vscode';

const docPages = new Map<string, vscode.Uri | null>();

/** docs/rules/MHxxx.md inside the extension, when that page exists (looked up once per code). */
export function ruleDocUri(extensionUri: vscode.Uri, code: string): vscode.Uri | null {
  const key = `${extensionUri.toString()}#${code}`;
  let uri = docPages.get(key);
  if (uri === undefined) {
    const candidate = vscode.Uri.joinPath(extensionUri, 'docs', 'rules', `${code}.md`);
    uri = fs.existsSync(candidate.fsPath) ? candidate : null;
    // A missing page is not cached: the docs may be added while a development host runs.
    if (uri !== null) docPages.set(key, uri);
  }
  return uri;
}
