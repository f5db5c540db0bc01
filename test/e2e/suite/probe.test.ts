// Probe: the infrastructure really runs this inside VS Code with the extension in development mode.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { activateExtension, extensionId, waitFor } from './util';

describe('probe: extension host', () => {
  it('runs inside a real VS Code with a workspace folder', () => {
    assert.match(vscode.version, /^1\.\d+\.\d+/);
    assert.equal(vscode.workspace.workspaceFolders?.length, 1);
  });

  it('activates the extension when a Python file opens', async () => {
    const doc = await vscode.workspace.openTextDocument({ language: 'python', content: 'import torch\n' });
    await vscode.window.showTextDocument(doc);
    const ext = vscode.extensions.getExtension(extensionId);
    assert.ok(ext);
    await waitFor('activation on onLanguage:python', () => ext.isActive);
    await activateExtension();
  });

  it('registers and runs memhint.showLogs', async () => {
    const commands = await vscode.commands.getCommands(true);
    assert.ok(commands.includes('memhint.showLogs'));
    await vscode.commands.executeCommand('memhint.showLogs');
  });
});
