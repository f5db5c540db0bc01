// Settings changes take effect without a reload: enable, ignore, select, target torch.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { codeOf, documentState, linted, memhint, memhintDiagnostics, openCopy, setSetting, waitFor, type MemhintApi } from './util';

describe('settings', () => {
  let api: MemhintApi;
  let doc: vscode.TextDocument;
  const codes = () => memhintDiagnostics(doc.uri).map(codeOf).sort();

  before(async () => {
    api = await memhint();
    doc = (await openCopy('e2e_loop.py', 'settings_loop.py')).document;
    await linted(api, doc);
  });

  it('memhint.lint.ignore drops a rule, and removing it brings the rule back', async () => {
    assert.deepEqual(codes(), ['MH002', 'MH002', 'MH003']);
    const undo = await setSetting('lint.ignore', ['MH002']);
    try {
      await waitFor('MH002 ignored', () => codes().join() === 'MH003');
    } finally {
      await undo();
    }
    await waitFor('MH002 back', () => codes().join() === 'MH002,MH002,MH003');
  });

  it('memhint.lint.select keeps only the selected rules', async () => {
    const undo = await setSetting('lint.select', ['MH003']);
    try {
      await waitFor('only MH003', () => codes().join() === 'MH003');
    } finally {
      await undo();
    }
    await waitFor('every rule back', () => codes().length === 3);
  });

  it('memhint.targetTorch changes what MH003 reports on a bare zero_grad()', async () => {
    // Before torch 2.0 zero_grad() defaulted to set_to_none=False, so the bare call wastes memory there.
    const bare = 'optimizer.zero_grad()\n';
    const line = doc.getText().split('\n').findIndex((l) => l.trim() === 'optimizer.zero_grad()');
    assert.ok(line >= 0, `the fixture has a bare call: ${bare}`);
    const mh003Lines = () => memhintDiagnostics(doc.uri).filter((d) => codeOf(d) === 'MH003').map((d) => d.range.start.line);
    assert.ok(!mh003Lines().includes(line), 'not flagged for torch 2.x');
    const undo = await setSetting('targetTorch', '1.13');
    try {
      await waitFor('bare zero_grad() flagged for torch 1.13', () => mh003Lines().includes(line));
    } finally {
      await undo();
    }
    await waitFor('back to torch 2.x', () => !mh003Lines().includes(line));
  });

  it('memhint.lint.enable=false clears the diagnostics; true lints again', async () => {
    const undo = await setSetting('lint.enable', false);
    try {
      await waitFor('no diagnostics when disabled', () => memhintDiagnostics(doc.uri).length === 0);
    } finally {
      await undo();
    }
    await waitFor('diagnostics back when enabled', () => memhintDiagnostics(doc.uri).length === 3);
    assert.ok(documentState(api, doc.uri));
  });

  it('half-written values (wrong types) are ignored, and the valid settings beside them still apply', async () => {
    // As a user mid-edit leaves settings.json: before, a number in memhint.targetTorch threw while reading
    // the settings, so every later change (here lint.ignore) was lost until a reload.
    const undo = [
      await setSetting('targetTorch', 2.1),
      await setSetting('lint.enable', 'false'),
      await setSetting('lint.delay', 'fast'),
      await setSetting('hints.thresholds', '64 MiB'),
      await setSetting('lint.select', 'MH003'),
    ];
    try {
      assert.equal(vscode.workspace.getConfiguration('memhint').get('targetTorch'), 2.1, 'VS Code hands the wrong type through');
      undo.push(await setSetting('lint.ignore', ['MH002']));
      await waitFor('lint.ignore applied next to the wrong values', () => codes().length > 0 && codes().every((c) => c === 'MH003'));
      const edit = new vscode.WorkspaceEdit();
      edit.insert(doc.uri, new vscode.Position(0, 0), '# still linting\n');
      await vscode.workspace.applyEdit(edit);
      await linted(api, doc);
      assert.ok(codes().includes('MH003'), 'a "false" string does not disable linting');
    } finally {
      for (const u of undo.reverse()) await u();
      if (doc.lineAt(0).text === '# still linting') {
        const revert = new vscode.WorkspaceEdit();
        revert.delete(doc.uri, new vscode.Range(0, 0, 1, 0));
        await vscode.workspace.applyEdit(revert);
      }
    }
    await waitFor('every rule back', () => codes().join() === 'MH002,MH002,MH003');
  });
});
