// The editor follows the project's own imports (src/lint/project): a batch copied in train.py from a
// loader that data.py builds pinned is reported with the other file named, and changing data.py on disk
// re-lints the open train.py.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { codeOf, lineOf, memhint, memhintDiagnostics, openPython, waitFor, workspaceRoot } from './util';

const DATA_PINNED = `from torch.utils.data import DataLoader


def get_loader(ds):
    return DataLoader(ds, batch_size=8, pin_memory=True)
`;

const TRAIN = `import torch
from data import get_loader


def tune(model, optimizer, ds):
    for x in get_loader(ds):
        x = x.cuda()
        model(x).sum().backward()
        optimizer.step()
`;

describe('lint follows imports into the workspace', () => {
  const folder = path.join(workspaceRoot(), 'project_imports');
  const dataFile = path.join(folder, 'data.py');

  before(() => {
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(dataFile, DATA_PINNED);
    fs.writeFileSync(path.join(folder, 'train.py'), TRAIN);
  });

  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('reports the blocking copy of a pinned loader built in another file, naming it, and re-lints when that file changes', async () => {
    await memhint();
    const editor = await openPython('project_imports', 'train.py');
    const doc = editor.document;
    const copyLine = lineOf(doc, 'x = x.cuda()');
    const mh009 = () => memhintDiagnostics(doc.uri).filter((d) => codeOf(d) === 'MH009');
    const found = await waitFor('MH009 on the copy of the imported loader', () => {
      const diags = mh009();
      return diags.length > 0 ? diags : undefined;
    });
    assert.deepEqual(found.map((d) => d.range.start.line), [copyLine]);
    assert.match(found[0].message, /data\.py:5/);

    // The loader is no longer pinned: non_blocking would change nothing, so the finding goes.
    fs.writeFileSync(dataFile, DATA_PINNED.replace(', pin_memory=True', ''));
    await waitFor('MH009 to clear after data.py changed on disk', () => (mh009().length === 0 ? true : undefined), 30_000);
  });
});
