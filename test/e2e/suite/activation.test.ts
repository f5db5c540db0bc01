// The extension loads in a real VS Code: activation on Python files, every contributed command registered.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { extensionId, memhint, openPython, waitFor } from './util';

describe('activation', () => {
  it('runs inside a real VS Code with the e2e workspace open', () => {
    assert.match(vscode.version, /^1\.\d+\.\d+/);
    assert.equal(vscode.workspace.workspaceFolders?.length, 1);
    assert.equal(vscode.workspace.isTrusted, true);
  });

  it('activates when a Python file opens (onLanguage:python)', async () => {
    const ext = vscode.extensions.getExtension(extensionId);
    assert.ok(ext, `${extensionId} is loaded in development mode`);
    await openPython('e2e_loop.py');
    await waitFor('activation on onLanguage:python', () => ext.isActive, 30_000);
    const api = await memhint();
    assert.equal(api.state().trusted, true);
  });

  it('registers every command package.json contributes, and they run', async () => {
    const ext = vscode.extensions.getExtension(extensionId)!;
    const contributed = ((ext.packageJSON as { contributes?: { commands?: { command: string }[] } }).contributes?.commands ?? []).map((c) => c.command);
    assert.ok(contributed.includes('memhint.showLogs'));
    const registered = new Set(await vscode.commands.getCommands(true));
    assert.deepEqual(contributed.filter((c) => !registered.has(c)), [], 'contributed but not registered');
    await vscode.commands.executeCommand('memhint.showLogs');
  });
});
