// Jupyter notebooks: the Python cells are linted as one program (execution order, magics as comments), with
// findings on the cell and line that have them; markdown cells are left alone. Profile This Step runs a
// cell's step from the cells exported to a temporary script.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import * as path from 'node:path';
import { codeOf, documentState, linted, memhint, memhintDiagnostics, setSetting, testPython, waitFor, workspaceRoot } from './util';

const torch2Python = process.env.MEMHINT_TEST_TORCH2_PYTHON ?? path.resolve(__dirname, '../../../../.venv-torch2/bin/python');

/** The temporary folders memhint made since `before` (its notebook scripts). */
function leftovers(before: ReadonlySet<string>): string[] {
  return fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('memhint-notebook-') && !before.has(f));
}

function tempFolders(): Set<string> {
  return new Set(fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('memhint-notebook-')));
}

const MODEL_CELL = 'import torch\nmodel = torch.nn.Linear(256, 1024)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n';
const STEP_CELL = 'def train_step(x):\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n';

async function openNotebook(...cells: string[]): Promise<vscode.NotebookDocument> {
  const data = new vscode.NotebookData(cells.map((text) => new vscode.NotebookCellData(vscode.NotebookCellKind.Code, text, 'python')));
  const notebook = await vscode.workspace.openNotebookDocument('jupyter-notebook', data);
  await vscode.window.showNotebookDocument(notebook);
  return notebook;
}

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

  it('CodeLens on a step defined in a cell: Profile this step and Predict memory on CUDA, with the cell as target', async () => {
    await memhint();
    const notebook = await openNotebook(MODEL_CELL, STEP_CELL, 'for _ in range(4):\n    train_step(torch.randn(64, 256))\n');
    const cell = notebook.cellAt(1).document;
    const lenses = await waitFor('CodeLens in the step cell', async () => {
      const found = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', cell.uri);
      return found.length >= 2 ? found : false;
    });
    const ours = lenses.filter((l) => l.command?.command.startsWith('memhint.'));
    assert.deepEqual(ours.map((l) => [l.command!.command, l.range.start.line]), [['memhint.profileStep', 0], ['memhint.predict', 0]]);
    for (const l of ours) {
      assert.equal((l.command!.arguments![0] as vscode.Uri).toString(), cell.uri.toString());
      assert.equal(l.command!.arguments![1], 'train_step');
    }
    assert.deepEqual(await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', notebook.cellAt(0).document.uri), [], 'no lens on a cell without a step');
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  it('Predict from a cell: the cells without the training loop as a temporary script; predicted hints on the step cell', async function () {
    this.timeout(240_000);
    if (!fs.existsSync(torch2Python)) this.skip();
    const api = await memhint();
    const undo = await setSetting('python', torch2Python);
    try {
      const notebook = await openNotebook(MODEL_CELL, STEP_CELL, 'def make_inputs(batch=64):\n    return (torch.randn(batch, 256),)\n', 'for _ in range(3):\n    train_step(torch.randn(64, 256))\nprint(model.weight.sum().item())\n');
      const cell = notebook.cellAt(1).document;
      const before = tempFolders();
      const predicted = await vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.predict', cell.uri, 'train_step', { setup: 'make_inputs', whatIf: {} });
      assert.equal(predicted.status, 'done', predicted.error);
      const hints = await waitFor('predicted hints on the step cell', () => {
        const h = documentState(api, cell.uri)?.hints ?? [];
        return h.length > 0 ? h : false;
      }, 10_000);
      assert.ok(hints.some((h) => h.line === 2 && /^predicted /.test(h.text)), JSON.stringify(hints)); // loss = model(x).sum()
      assert.deepEqual(documentState(api, notebook.cellAt(3).document.uri)?.hints ?? [], [], 'the left-out loop cell has no hint');
      assert.deepEqual(leftovers(before), [], 'the temporary script is removed');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    } finally {
      await undo();
    }
  });

  it('the temporary script is removed after a failed run, whose error names the cell', async function () {
    this.timeout(180_000);
    await memhint();
    const undo = [await setSetting('python', testPython), await setSetting('profile.backend', 'cpu')];
    try {
      const notebook = await openNotebook(MODEL_CELL, 'def train_step(x):\n    loss = model(x).sum()\n    raise ValueError("bad batch")\n', 'train_step(torch.randn(64, 256))\n');
      const before = tempFolders();
      const profiled = await vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.profileStep', notebook.cellAt(1).document.uri, 'train_step');
      assert.equal(profiled.status, 'failed');
      assert.match(profiled.error ?? '', /bad batch/);
      assert.match(profiled.error ?? '', /cell 2, line 3/);
      assert.deepEqual(leftovers(before), [], 'the temporary script is removed');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    } finally {
      for (const u of undo.reverse()) await u();
    }
  });

  it('the temporary script is removed after Cancel, once the run has stopped', async function () {
    this.timeout(180_000);
    const api = await memhint();
    const undo = [await setSetting('python', testPython), await setSetting('profile.backend', 'cpu'), await setSetting('profile.steps', 1000)];
    try {
      const notebook = await openNotebook(MODEL_CELL, 'import time\n\ndef train_step(x):\n    time.sleep(0.2)\n    return model(x).sum()\n', 'for _ in range(100000):\n    train_step(torch.randn(64, 256))\n');
      const before = tempFolders();
      const running = vscode.commands.executeCommand<{ status: string; error?: string }>('memhint.profileStep', notebook.cellAt(1).document.uri, 'train_step');
      // Cancel once the script exists and the run is under way (what a person sees: the progress notification).
      await waitFor('the temporary script', () => leftovers(before).length === 1 && api.state().profile.running, 60_000);
      await vscode.commands.executeCommand('memhint.cancelProfile');
      const profiled = await running;
      assert.equal(profiled.status, 'cancelled', profiled.error);
      assert.deepEqual(leftovers(before), [], 'the temporary script is removed');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    } finally {
      for (const u of undo.reverse()) await u();
    }
  });
  it('skips a notebook whose joined cells exceed [tool.memhint] max-file-size, like a file, and lints it within the limit', async () => {
    const api = await memhint();
    // Each cell is under 1 KiB; the program the linter parses (the cells joined) is over it.
    const padding = (n: number): string => Array.from({ length: n }, (_, i) => `# padding line ${i} ${'-'.repeat(40)}\n`).join('');
    const cells = [`import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n${padding(10)}`, `${padding(10)}opt.zero_grad(set_to_none=False)\n`];
    const notebookJson = JSON.stringify({
      cells: cells.map((text, i) => ({ cell_type: 'code', execution_count: null, id: `c${i}`, metadata: {}, outputs: [], source: text.split(/(?<=\n)/) })),
      metadata: { language_info: { name: 'python' } },
      nbformat: 4,
      nbformat_minor: 5,
    });
    const open = async (folder: string, limit: string): Promise<vscode.TextDocument> => {
      const dir = path.join(workspaceRoot(), folder);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'pyproject.toml'), `[tool.memhint]\nmax-file-size = "${limit}"\n`);
      fs.writeFileSync(path.join(dir, 'sized.ipynb'), notebookJson);
      const linting = new Promise<void>((resolve) => {
        const sub = api.onDidLint((uri) => {
          if (uri.scheme === 'vscode-notebook-cell' && uri.fsPath.startsWith(dir)) {
            sub.dispose();
            resolve();
          }
        });
      });
      const notebook = await vscode.workspace.openNotebookDocument(vscode.Uri.file(path.join(dir, 'sized.ipynb')));
      await vscode.window.showNotebookDocument(notebook);
      await linting;
      assert.ok(cells.every((c) => c.length < 1024) && cells.join('\n').length > 1024, 'each cell is under the limit, the joined cells over it');
      return notebook.cellAt(1).document;
    };
    const within = await open('nb-within-limit', '64KiB');
    await waitFor('MH003 on the second cell within the limit', () => memhintDiagnostics(within.uri).some((d) => codeOf(d) === 'MH003'));
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    const over = await open('nb-over-limit', '1KiB');
    // Skipped: the cell that has MH003 within the limit has no diagnostics, and no lint result.
    assert.deepEqual(memhintDiagnostics(over.uri).map(codeOf), []);
    assert.equal(documentState(api, over.uri)?.version ?? -1, -1);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
