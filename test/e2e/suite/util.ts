// Helpers shared by the extension-host tests.
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';

export const extensionId = 'memhint.memhint';

export function workspaceRoot(): string {
  const folder = vscode.workspace.workspaceFolders?.[0];
  assert.ok(folder, 'the e2e runner opens a workspace folder');
  return folder.uri.fsPath;
}

export function workspaceFile(...parts: string[]): vscode.Uri {
  return vscode.Uri.file(path.join(workspaceRoot(), ...parts));
}

/** Polls until `probe` returns a value other than undefined/false, or fails with `what` after timeoutMs. */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export async function activateExtension(): Promise<vscode.Extension<unknown>> {
  const ext = vscode.extensions.getExtension(extensionId);
  assert.ok(ext, `${extensionId} is loaded in development mode`);
  await ext.activate();
  return ext;
}

export async function openPython(...parts: string[]): Promise<vscode.TextEditor> {
  const doc = await vscode.workspace.openTextDocument(workspaceFile(...parts));
  return vscode.window.showTextDocument(doc);
}
