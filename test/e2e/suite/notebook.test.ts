// Jupyter notebooks: each Python cell is a document of its own (scheme vscode-notebook-cell), linted like a
// file, with findings on the cell and line that have them; markdown cells are left alone.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { codeOf, linted, memhint, memhintDiagnostics, waitFor } from './util';

describe('notebooks', () => {
  it('lints the Python cells of a notebook, findings on the right cell and line', async () => {
    const api = await memhint();
    const data = new vscode.NotebookData([
      new vscode.NotebookCellData(vscode.NotebookCellKind.Code, 'import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n', 'python'),
      new vscode.NotebookCellData(vscode.NotebookCellKind.Markup, '## Training\n`total_loss += loss` keeps every graph.', 'markdown'),
      new vscode.NotebookCellData(
        vscode.NotebookCellKind.Code,
        'total_loss = 0\nfor _ in range(3):\n    opt.zero_grad(set_to_none=False)\n    loss = model(torch.randn(2, 4)).sum()\n    loss.backward()\n    opt.step()\n    total_loss += loss\n',
        'python',
      ),
    ]);
    const notebook = await vscode.workspace.openNotebookDocument('jupyter-notebook', data);
    await vscode.window.showNotebookDocument(notebook);
    const [first, markdown, loop] = notebook.getCells().map((c) => c.document);
    assert.equal(loop.uri.scheme, 'vscode-notebook-cell');
    const diags = await linted(api, loop);
    const at = (code: string): number[] => diags.filter((d) => codeOf(d) === code).map((d) => d.range.start.line);
    assert.deepEqual(at('MH003'), [2], JSON.stringify(diags.map((d) => [codeOf(d), d.range.start.line])));
    assert.deepEqual(at('MH002'), [6]);
    assert.deepEqual((await linted(api, first)).map(codeOf), []);
    await waitFor('the markdown cell to stay unlinted', () => memhintDiagnostics(markdown.uri).length === 0, 2_000);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  it('"Profile This Step" and "Predict" in a notebook cell refuse in one line that says why and what to do', async () => {
    await memhint();
    const data = new vscode.NotebookData([
      new vscode.NotebookCellData(
        vscode.NotebookCellKind.Code,
        'import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n\ndef train_step(x):\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n',
        'python',
      ),
    ]);
    const notebook = await vscode.workspace.openNotebookDocument('jupyter-notebook', data);
    await vscode.window.showNotebookDocument(notebook);
    const cell = notebook.cellAt(0).document;
    // The cursor in the step, in the cell's own editor, as a user would have it.
    const editor = await vscode.window.showTextDocument(cell);
    editor.selection = new vscode.Selection(6, 4, 6, 4);
    const profiled = await vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.profileStep');
    assert.equal(profiled.status, 'no-target');
    assert.match(profiled.error ?? '', /^cannot profile a step in a notebook yet: .*Export the notebook to a Python script .* and profile the step there\.$/);
    assert.ok(!(profiled.error ?? '').includes('\n'), 'one line');
    // The CodeLens path passes the cell's URI and the function: same answer.
    const fromLens = await vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.profileStep', cell.uri, 'train_step');
    assert.equal(fromLens.error, profiled.error);
    const predicted = await vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.predict', cell.uri, 'train_step');
    assert.match(predicted.error ?? '', /^cannot predict a step in a notebook yet/);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
