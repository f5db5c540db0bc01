// Diagnostics from the linter on open and on change, with rule codes, links to the rule docs and quick fixes.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { codeOf, documentState, linted, lineOf, memhint, openCopy, setSetting, waitFor, type MemhintApi } from './util';

describe('diagnostics and quick fixes', () => {
  let api: MemhintApi;
  let editor: vscode.TextEditor;

  before(async () => {
    api = await memhint();
    editor = await openCopy('e2e_loop.py', 'diagnostics_loop.py');
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.files.revert');
  });

  it('publishes MH002 and MH003 on the lines that have them, with docs links', async () => {
    const doc = editor.document;
    const diags = await linted(api, doc);
    const byCode = (code: string) => diags.filter((d) => codeOf(d) === code).map((d) => d.range.start.line);
    assert.deepEqual(byCode('MH003'), [lineOf(doc, 'set_to_none=False')]);
    const accumulate = lineOf(doc, 'total_loss += loss');
    assert.deepEqual(byCode('MH002'), [accumulate, lineOf(doc, 'total_loss += loss', accumulate + 1)]);
    for (const d of diags) {
      assert.equal(d.source, 'memhint');
      assert.ok(typeof d.code === 'object' && d.code !== null, 'code carries a docs target');
      const target = (d.code as { target: vscode.Uri }).target;
      assert.match(target.path, new RegExp(`docs/rules/${codeOf(d)}\\.md$`));
      assert.ok(fs.existsSync(target.fsPath), `${target.fsPath} exists`);
    }
    const mh002 = diags.find((d) => codeOf(d) === 'MH002')!;
    assert.equal(mh002.severity, vscode.DiagnosticSeverity.Warning);
    assert.match(mh002.message, /total_loss/);
  });

  it('re-lints after an edit (debounced) and follows the text', async () => {
    const doc = editor.document;
    const line = lineOf(doc, 'set_to_none=False');
    await editor.edit((e) => e.insert(new vscode.Position(line, 0), '    # a comment pushes everything down\n'));
    const diags = await linted(api, doc);
    assert.deepEqual(diags.filter((d) => codeOf(d) === 'MH003').map((d) => d.range.start.line), [line + 1]);
    await vscode.commands.executeCommand('undo');
    await linted(api, doc);
  });

  it('answers quick fixes from the published lint while a re-lint is pending, without linting or publishing', async () => {
    const doc = editor.document;
    // A long debounce keeps the re-lint pending for the whole test; the setting change re-lints once first.
    let applied: vscode.Disposable | undefined;
    const relinted = new Promise<void>((resolve) => {
      applied = api.onDidLint((uri) => {
        if (uri.toString() === doc.uri.toString()) resolve();
      });
    });
    const undo = await setSetting('lint.delay', 5000);
    try {
      await relinted;
      applied?.dispose();
      const line = lineOf(doc, 'set_to_none=False');
      await editor.edit((e) => e.insert(new vscode.Position(0, 0), '# two lines above\n# push the finding down\n'));
      let lints = 0;
      const counting = api.onDidLint((uri) => {
        if (uri.toString() === doc.uri.toString()) lints += 1;
      });
      try {
        const at = new vscode.Range(line + 2, 10, line + 2, 10);
        const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', doc.uri, at, vscode.CodeActionKind.QuickFix.value);
        assert.equal(lints, 0, 'the request did not lint');
        assert.notEqual(documentState(api, doc.uri)?.version, doc.version, 'the published lint is still the one before the edit');
        const fix = actions.find((a) => a.isPreferred);
        assert.ok(fix?.edit, actions.map((a) => a.title).join(' | '));
        const edits = fix.edit.get(doc.uri);
        assert.ok(edits.length > 0 && edits.every((e) => e.range.start.line === line + 2), JSON.stringify(edits.map((e) => e.range)));
        const ignore = actions.find((a) => a.title === 'Ignore MH003 for this line')?.edit?.get(doc.uri) ?? [];
        assert.deepEqual(ignore.map((e) => e.range.start.line), [line + 2]);
      } finally {
        counting.dispose();
      }
    } finally {
      await undo();
      await vscode.commands.executeCommand('undo');
      await linted(api, doc);
    }
  });

  it('offers the rule fix, an ignore comment and the docs as quick fixes; the fix removes the finding', async () => {
    const doc = editor.document;
    const diags = await linted(api, doc);
    const mh003 = diags.find((d) => codeOf(d) === 'MH003');
    assert.ok(mh003);
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', doc.uri, mh003.range, vscode.CodeActionKind.QuickFix.value);
    const titles = actions.map((a) => a.title);
    assert.ok(titles.includes('Ignore MH003 for this line'), titles.join(' | '));
    assert.ok(titles.some((t) => /^Show documentation for MH003/.test(t)), titles.join(' | '));
    const fix = actions.find((a) => a.isPreferred);
    assert.ok(fix?.edit, `a preferred fix among ${titles.join(' | ')}`);
    assert.ok(await vscode.workspace.applyEdit(fix.edit));
    const after = await linted(api, doc);
    assert.equal(after.filter((d) => codeOf(d) === 'MH003').length, 0);
    assert.match(doc.lineAt(mh003.range.start.line).text, /zero_grad\(set_to_none=True\)|zero_grad\(\)/);
  });

  it('"Ignore MH002 for this line" adds a noqa comment that silences exactly that finding', async () => {
    const doc = editor.document;
    const diags = await linted(api, doc);
    const first = diags.find((d) => codeOf(d) === 'MH002')!;
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', doc.uri, first.range, vscode.CodeActionKind.QuickFix.value);
    const ignore = actions.find((a) => a.title === 'Ignore MH002 for this line');
    assert.ok(ignore?.edit);
    assert.ok(await vscode.workspace.applyEdit(ignore.edit));
    assert.match(doc.lineAt(first.range.start.line).text, /#\s*noqa:\s*MH002/);
    const after = await linted(api, doc);
    assert.deepEqual(after.filter((d) => codeOf(d) === 'MH002').map((d) => d.range.start.line), [lineOf(doc, 'total_loss += loss', first.range.start.line + 1)]);
  });

  it('"memhint: Fix All memhint Issues" fixes what is left', async () => {
    const doc = editor.document;
    await linted(api, doc);
    await vscode.commands.executeCommand('memhint.fixAll');
    await waitFor('fix all to leave no finding', async () => (await linted(api, doc)).length === 0);
    assert.match(doc.getText(), /total_loss \+= loss\.item\(\)|total_loss \+= loss\.detach\(\)/);
  });
});
