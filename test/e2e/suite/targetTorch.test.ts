// The lint target torch in the editor (#13): memhint.targetTorch > the torch of the interpreter that will
// run the file (memhint.python here) > the project's pin, the interpreter probed once. Fake interpreters
// (shell scripts that answer memhint's probe) make it independent of the machine's torch.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { codeOf, documentState, linted, memhint, memhintDiagnostics, openCopy, setSetting, waitFor, workspaceRoot, type MemhintApi } from './util';

const folder = 'target_torch';

/** An executable that answers the probe as an interpreter with TORCH (null: torch does not import) would, and counts its runs. */
function fakeInterpreter(name: string, torch: string | null): { path: string; runs: () => number } {
  const file = path.join(workspaceRoot(), folder, name);
  const answer = torch === null
    ? `{"executable": "${file}", "python": "3.11.2", "torchError": "ModuleNotFoundError: No module named 'torch'"}`
    : `{"executable": "${file}", "python": "3.11.2", "torch": "${torch}", "cuda": false}`;
  fs.writeFileSync(file, `#!/bin/sh\necho run >> "$0.runs"\nprintf '%s' '${answer}'\n`, { mode: 0o755 });
  const runs = (): number => (fs.existsSync(`${file}.runs`) ? fs.readFileSync(`${file}.runs`, 'utf8').split('\n').filter(Boolean).length : 0);
  return { path: file, runs };
}

describe('lint target torch: explicit setting > running interpreter > project pin', () => {
  let api: MemhintApi;
  let doc: vscode.TextDocument;
  let bareLine: number;
  const undo: Array<() => Promise<void>> = [];
  /** Before torch 2.0 a bare zero_grad() zeroes in place (MH003); from 2.0 it sets grads to None. */
  const bareFlagged = (): boolean => memhintDiagnostics(doc.uri).some((d) => codeOf(d) === 'MH003' && d.range.start.line === bareLine);
  /** The target the last lint used, and whether the findings agree with it. */
  const target = (): string | null | undefined => documentState(api, doc.uri)?.targetTorch;

  before(async () => {
    api = await memhint();
    fs.mkdirSync(path.join(workspaceRoot(), folder), { recursive: true });
    // The project's pin: what applies when nothing else says which torch runs the file.
    fs.writeFileSync(path.join(workspaceRoot(), folder, 'requirements.txt'), 'torch==1.13.1\n');
    doc = (await openCopy('e2e_loop.py', `${folder}/loop.py`)).document;
    bareLine = doc.getText().split('\n').findIndex((l) => l.trim() === 'optimizer.zero_grad()');
    assert.ok(bareLine >= 0, 'the fixture has a bare optimizer.zero_grad()');
    await linted(api, doc);
  });

  after(async () => {
    for (const u of undo.reverse()) await u();
  });

  it('follows the interpreter memhint.python names, probing it once', async () => {
    const torch113 = fakeInterpreter('python-torch113', '1.13.1');
    undo.push(await setSetting('python', torch113.path));
    // The e2e workspace pins the target (.vscode/settings.json); this test removes the pin.
    undo.push(await setSetting('targetTorch', undefined));
    await waitFor('target 1.13 (the interpreter\'s torch), bare zero_grad() flagged', () => target() === '1.13' && bareFlagged());
    // Later lints (an edit, a settings change) reuse the answer.
    const edit = new vscode.WorkspaceEdit();
    edit.insert(doc.uri, new vscode.Position(0, 0), '# edited\n');
    await vscode.workspace.applyEdit(edit);
    bareLine += 1;
    await linted(api, doc);
    const restore = await setSetting('lint.ignore', ['MH999']);
    await restore();
    await linted(api, doc);
    assert.equal(target(), '1.13');
    assert.ok(bareFlagged());
    assert.equal(torch113.runs(), 1, 'the interpreter was probed once');
  });

  it('an explicit memhint.targetTorch wins over the interpreter', async () => {
    const restore = await setSetting('targetTorch', '2.1');
    try {
      await waitFor('target 2.1 (explicit), not flagged', () => target() === '2.1' && !bareFlagged());
    } finally {
      await restore();
    }
    await waitFor('the interpreter\'s torch 1.13 again', () => target() === '1.13' && bareFlagged());
  });

  it('the interpreter wins over the project pin, and the pin applies when the interpreter has no torch', async () => {
    const torch24 = fakeInterpreter('python-torch24', '2.4.1');
    undo.push(await setSetting('python', torch24.path));
    await waitFor('not flagged: the interpreter runs torch 2.4 although requirements.txt pins 1.13', () => target() === '2.4' && !bareFlagged());
    assert.equal(torch24.runs(), 1);

    const noTorch = fakeInterpreter('python-without-torch', null);
    undo.push(await setSetting('python', noTorch.path));
    await waitFor('the interpreter was probed', () => noTorch.runs() >= 1);
    // No torch to follow: the pin decides (without it the target would be unknown, null).
    await waitFor('target 1.13 from the pin, bare zero_grad() flagged', () => target() === '1.13' && bareFlagged());
  });
});
