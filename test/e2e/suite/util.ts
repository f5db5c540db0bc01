// Helpers shared by the extension-host tests.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { MemhintApi, MemhintState } from '../../../src/extension/testApi';

export type { MemhintApi, MemhintState };

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

/**
 * Copies a workspace file to a new name (a test's private copy: no other test's edits or saves reach
 * it) and opens it. Returns the editor.
 */
export async function openCopy(source: string, copyName: string): Promise<vscode.TextEditor> {
  const from = path.join(workspaceRoot(), source);
  const to = path.join(workspaceRoot(), copyName);
  fs.copyFileSync(from, to);
  return openPython(copyName);
}

export async function openPython(...parts: string[]): Promise<vscode.TextEditor> {
  const doc = await vscode.workspace.openTextDocument(workspaceFile(...parts));
  return vscode.window.showTextDocument(doc);
}

/** The extension's API (what activate() returns), activating it first. */
export async function memhint(): Promise<MemhintApi> {
  const ext = await activateExtension();
  const api = ext.exports as MemhintApi | undefined;
  assert.ok(api && typeof api.state === 'function', 'activate() returns the memhint API');
  return api;
}

export function documentState(api: MemhintApi, uri: vscode.Uri): MemhintState['documents'][number] | undefined {
  return api.state().documents.find((d) => d.uri === uri.toString());
}

/** memhint's diagnostics for a file (other sources filtered out). */
export function memhintDiagnostics(uri: vscode.Uri): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri).filter((d) => d.source === 'memhint');
}

export function codeOf(d: vscode.Diagnostic): string {
  return typeof d.code === 'object' && d.code !== null ? String(d.code.value) : String(d.code);
}

/** Waits until memhint published diagnostics for the document's current version. */
export async function linted(api: MemhintApi, doc: vscode.TextDocument, timeoutMs = 20_000): Promise<vscode.Diagnostic[]> {
  await waitFor(`memhint to lint ${path.basename(doc.uri.fsPath)} v${doc.version}`,
    () => (documentState(api, doc.uri)?.version ?? -1) === doc.version, timeoutMs);
  return memhintDiagnostics(doc.uri);
}

/** Updates a memhint setting in the workspace and returns an undo function. */
export async function setSetting(key: string, value: unknown): Promise<() => Promise<void>> {
  const config = vscode.workspace.getConfiguration('memhint');
  const before = config.inspect(key)?.workspaceValue;
  await config.update(key, value, vscode.ConfigurationTarget.Workspace);
  return async () => {
    await vscode.workspace.getConfiguration('memhint').update(key, before, vscode.ConfigurationTarget.Workspace);
  };
}

/** 0-based line of the first line whose text contains `needle`. */
export function lineOf(doc: vscode.TextDocument, needle: string, from = 0): number {
  for (let i = from; i < doc.lineCount; i++) if (doc.lineAt(i).text.includes(needle)) return i;
  throw new Error(`"${needle}" not found in ${doc.uri.fsPath}`);
}

export const testPython = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';
