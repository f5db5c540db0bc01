// Restricted Mode (an untrusted workspace): linting works, profiling (which runs the user's code) and the
// interpreter setting are disabled, with a clear message instead.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ProfileCommandResult } from '../../../../src/extension/profile/controller';
import { codeOf, linted, memhint, openPython, waitFor, workspaceRoot, type MemhintApi } from '../util';

describe('untrusted workspace', () => {
  let api: MemhintApi;

  before(async () => {
    api = await memhint();
  });

  it('opens in Restricted Mode', () => {
    assert.equal(vscode.workspace.isTrusted, false);
    assert.equal(api.state().trusted, false);
  });

  it('still lints: diagnostics and quick fixes', async () => {
    const editor = await openPython('e2e_loop.py');
    const diags = await linted(api, editor.document);
    assert.deepEqual(diags.map(codeOf).sort(), ['MH002', 'MH002', 'MH003']);
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', editor.document.uri, diags[0].range, vscode.CodeActionKind.QuickFix.value);
    assert.ok(actions.some((a) => a.edit !== undefined), 'an edit-based quick fix');
  });

  it('refuses to profile, without starting Python', async () => {
    const editor = await openPython('e2e_loop.py');
    const line = editor.document.getText().split('\n').findIndex((l) => l.startsWith('def train_step('));
    editor.selection = new vscode.Selection(line + 1, 4, line + 1, 4);
    const started = harnessProcesses();
    const outcome = await vscode.commands.executeCommand<ProfileCommandResult>('memhint.profileStep');
    assert.equal(outcome.status, 'untrusted');
    assert.equal(api.state().report, null);
    assert.deepEqual(harnessProcesses().filter((p) => !started.includes(p)), [], 'no harness process');
  });

  it('ignores memhint.python from the workspace settings (a restricted configuration)', async () => {
    const dir = path.join(workspaceRoot(), '.vscode');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ 'memhint.python': '/tmp/evil-python', 'memhint.lint.ignore': ['MH003'] }));
    // The unrestricted setting from the same file applies, so the file was read...
    await waitFor('workspace settings read', () => (vscode.workspace.getConfiguration('memhint').get<string[]>('lint.ignore') ?? []).includes('MH003'), 20_000);
    // ...but the interpreter it names is not what memhint would run.
    assert.notEqual(vscode.workspace.getConfiguration('memhint').get<string>('python'), '/tmp/evil-python');
    // ...and memhint says so rather than leaving the user to wonder why the setting does not apply.
    const outcome = await vscode.commands.executeCommand<ProfileCommandResult>('memhint.profileStep');
    assert.equal(outcome.status, 'untrusted');
    assert.match(outcome.error ?? '', /memhint\.python "\/tmp\/evil-python" from this workspace's settings is ignored until you trust the workspace/);
  });
});

/** Harness processes started for this workspace's files (other runs on the machine do not count). */
function harnessProcesses(): number[] {
  return fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).filter((pid) => {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return argv.includes('memhint_harness') && argv.some((a) => a.startsWith(workspaceRoot()));
    } catch {
      return false;
    }
  }).map(Number);
}
