// Jupyter notebooks: the Python cells are linted as one program (execution order, magics as comments), with
// findings on the cell and line that have them; markdown cells are left alone. Profile This Step runs a
// cell's step from the cells exported to a temporary script.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import { codeOf, documentState, linted, memhint, memhintDiagnostics, setSetting, testPython, waitFor } from './util';

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

  it('analyses the cells as one program: a model built in cell 1 and evaluated in cell 3 is found on cell 3', async () => {
    const api = await memhint();
    const data = new vscode.NotebookData([
      new vscode.NotebookCellData(vscode.NotebookCellKind.Code, '%matplotlib inline\nimport torch\nfrom torch import nn\nmodel = nn.Linear(4, 2)\n', 'python'),
      new vscode.NotebookCellData(vscode.NotebookCellKind.Markup, '## Evaluate', 'markdown'),
      new vscode.NotebookCellData(vscode.NotebookCellKind.Code, 'for x in loader:\n    out = model(x)\n    print(out.sum().item())\n', 'python'),
    ]);
    const notebook = await vscode.workspace.openNotebookDocument('jupyter-notebook', data);
    await vscode.window.showNotebookDocument(notebook);
    const evalCell = notebook.cellAt(2).document;
    const diags = await linted(api, evalCell);
    const mh001 = diags.filter((d) => codeOf(d) === 'MH001');
    assert.deepEqual(mh001.map((d) => d.range.start.line), [1], JSON.stringify(diags.map((d) => [codeOf(d), d.range.start.line])));
    // The fix wraps the loop in `with torch.no_grad():`, which needs cell 1's `import torch`: offered on cell 3.
    const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', evalCell.uri, mh001[0].range);
    assert.ok(actions.some((a) => /no_grad/.test(a.title)), JSON.stringify(actions.map((a) => a.title)));
    assert.deepEqual((await linted(api, notebook.cellAt(0).document)).map(codeOf), []);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  it('"Profile This Step" in a notebook cell runs the cells as a temporary script; hints land on the cell', async function () {
    this.timeout(180_000);
    const api = await memhint();
    const undo = [await setSetting('python', testPython), await setSetting('profile.backend', 'cpu'), await setSetting('profile.steps', 2), await setSetting('profile.warmup', 1)];
    try {
      const data = new vscode.NotebookData([
        new vscode.NotebookCellData(
          vscode.NotebookCellKind.Code,
          '!pip --version\nimport torch\nmodel = torch.nn.Linear(256, 1024)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n\ndef train_step(x):\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n',
          'python',
        ),
        new vscode.NotebookCellData(vscode.NotebookCellKind.Code, 'for _ in range(4):\n    train_step(torch.randn(64, 256))\n', 'python'),
      ]);
      const notebook = await vscode.workspace.openNotebookDocument('jupyter-notebook', data);
      await vscode.window.showNotebookDocument(notebook);
      const cell = notebook.cellAt(0).document;
      const editor = await vscode.window.showTextDocument(cell);
      editor.selection = new vscode.Selection(7, 4, 7, 4);
      const before = new Set(fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('memhint-notebook-')));
      const profiled = await vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.profileStep');
      assert.equal(profiled.status, 'done', profiled.error);
      const hints = await waitFor('hints on the step cell', () => {
        const h = documentState(api, cell.uri)?.hints ?? [];
        return h.length > 0 ? h : false;
      }, 10_000);
      assert.ok(hints.some((h) => h.line === 7), JSON.stringify(hints)); // loss = model(x).sum()
      const left = fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('memhint-notebook-') && !before.has(f));
      assert.deepEqual(left, [], 'the temporary script is removed');
      // Prediction still needs a .py file: one line that says so.
      const predicted = await vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.predict', cell.uri, 'train_step');
      assert.match(predicted.error ?? '', /^cannot predict a step in a notebook yet/);
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    } finally {
      for (const u of undo.reverse()) await u();
    }
  });

  it('a step that needs the kernel (%run) is refused in one line', async () => {
    await memhint();
    const data = new vscode.NotebookData([
      new vscode.NotebookCellData(vscode.NotebookCellKind.Code, '%run prepare.py\n', 'python'),
      new vscode.NotebookCellData(vscode.NotebookCellKind.Code, 'def train_step(x):\n    loss = model(x).sum()\n    loss.backward()\n', 'python'),
    ]);
    const notebook = await vscode.workspace.openNotebookDocument('jupyter-notebook', data);
    await vscode.window.showNotebookDocument(notebook);
    const profiled = await vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.profileStep', notebook.cellAt(1).document.uri, 'train_step');
    assert.equal(profiled.status, 'no-target');
    assert.match(profiled.error ?? '', /^cannot profile a step in this notebook: cell 1 uses %run/);
    assert.ok(!(profiled.error ?? '').includes('\n'), 'one line');
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
