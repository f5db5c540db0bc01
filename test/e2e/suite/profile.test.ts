// "memhint: Profile This Step" end to end on the CPU backend with a real torch (MEMHINT_TEST_PYTHON,
// default /usr/bin/python3): report, inline hints, hovers, status bar, clear, cancel, and the MH002
// finding confirmed by what the profiler measured.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { ProfileCommandResult } from '../../../src/extension/profile/controller';
import { codeOf, documentState, linted, lineOf, memhint, memhintDiagnostics, openPython, setSetting, testPython, waitFor, type MemhintApi } from './util';

const MiB = 1024 * 1024;

/** Puts the cursor inside `def name` and runs the command the way the palette does (no arguments). */
async function profileAtCursor(editor: vscode.TextEditor, defLine: string): Promise<ProfileCommandResult> {
  const line = lineOf(editor.document, defLine) + 1;
  editor.selection = new vscode.Selection(line, 4, line, 4);
  const outcome = await vscode.commands.executeCommand<ProfileCommandResult>('memhint.profileStep');
  assert.ok(outcome, 'the command returns its outcome');
  lastReport = outcome.report;
  return outcome;
}

describe('profile this step (CPU backend, real torch)', function () {
  this.timeout(180_000);
  let api: MemhintApi;
  const undo: (() => Promise<void>)[] = [];

  before(async () => {
    assert.ok(fs.existsSync(testPython), `${testPython} exists (set MEMHINT_TEST_PYTHON)`);
    api = await memhint();
    undo.push(await setSetting('python', testPython));
    undo.push(await setSetting('profile.backend', 'cpu'));
    undo.push(await setSetting('profile.steps', 2));
    undo.push(await setSetting('profile.warmup', 1));
  });

  after(async () => {
    for (const u of undo.reverse()) await u();
  });

  it('profiles examples/train.py::train_step and reports figures that match the model', async () => {
    const editor = await openPython('train.py');
    const outcome = await profileAtCursor(editor, 'def train_step(');
    assert.equal(outcome.status, 'done', outcome.error);
    const report = outcome.report!;
    assert.equal(report.environment.backend, 'cpu');
    assert.equal(report.target.function, 'train_step');
    assert.equal(report.steps.length, 2);
    // Independent check: with zero_grad(set_to_none=True) backward allocates every parameter's gradient
    // afresh each step; MLP(512, 2048, 10) has (512*2048+2048 + 2048*2048+2048 + 2048*10+10) float32s.
    const paramBytes = (512 * 2048 + 2048 + 2048 * 2048 + 2048 + 2048 * 10 + 10) * 4;
    const backward = report.lines.find((l) => l.file === editor.document.uri.fsPath && l.code === 'loss.backward()');
    assert.ok(backward, 'loss.backward() has a line entry');
    const perStep = backward.inclusive.allocated / report.steps.length;
    assert.ok(perStep >= paramBytes, `backward allocates ≥ the gradients (${perStep} vs ${paramBytes})`);
    assert.ok(perStep < paramBytes + 40 * MiB, `and not wildly more (${perStep})`);
    const state = api.state();
    assert.equal(state.profile.lastStatus, 'done');
    assert.equal(state.report?.steps, 2);
  });

  it('shows inline hints on the step\'s lines, a peak in the status bar, and hovers with the figures', async () => {
    const editor = await openPython('train.py');
    const doc = editor.document;
    const hints = await waitFor('hints for train.py', () => {
      const h = documentState(api, doc.uri)?.hints ?? [];
      return h.length > 0 ? h : false;
    });
    const backwardLine = lineOf(doc, 'loss.backward()');
    const hint = hints.find((h) => h.line === backwardLine);
    assert.ok(hint, `a hint on loss.backward() among ${JSON.stringify(hints)}`);
    assert.match(hint.text, /\d+(\.\d+)? (B|KiB|MiB|GiB)/);
    // Every hint belongs to a line the report measured (the step's lines, and its callers' with callees).
    const measured = new Set(profiledLines(doc.uri));
    assert.deepEqual(hints.filter((h) => !measured.has(h.line + 1)).map((h) => h.line), [], 'hints only on measured lines');
    assert.match(api.state().statusBar ?? '', /peak \d/);

    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, new vscode.Position(backwardLine, 6));
    const text = hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : ''))).join('\n');
    assert.match(text, /\*\*memhint\*\*/);
    for (const word of ['allocated', 'freed', 'net', 'peak', 'in backward']) assert.ok(text.includes(word), `hover has "${word}"`);
    assert.match(text, /\*\*measured\*\* on the cpu backend/); // not predicted: the hover says which
  });

  it('keeps hints aligned when lines are inserted above, and "Clear Memory Hints" removes them', async () => {
    const editor = await openPython('train.py');
    const doc = editor.document;
    const before = lineOf(doc, 'loss.backward()');
    await editor.edit((e) => e.insert(new vscode.Position(lineOf(doc, 'def train_step('), 0), '# inserted\n'));
    await waitFor('hint moved with its line', () => documentState(api, doc.uri)?.hints.some((h) => h.line === before + 1));
    await vscode.commands.executeCommand('undo');
    await vscode.commands.executeCommand('memhint.clearHints');
    await waitFor('hints cleared', () => (documentState(api, doc.uri)?.hints.length ?? 0) === 0 && api.state().statusBar === null);
    assert.ok(api.state().report, 'the report itself stays for the summary');
  });

  it('confirms the MH002 finding with the bytes the profiler saw it keep', async () => {
    const editor = await openPython('e2e_loop.py');
    const doc = editor.document;
    const accumulate = lineOf(doc, 'total_loss += loss');
    const first = (await linted(api, doc)).find((d) => codeOf(d) === 'MH002' && d.range.start.line === accumulate);
    assert.ok(first);
    assert.doesNotMatch(first.message, /Measured by memhint/);
    const outcome = await profileAtCursor(editor, 'def train_step(');
    assert.equal(outcome.status, 'done', outcome.error);
    assert.ok(outcome.report!.leaks.length > 0, 'history.append(loss) keeps each step\'s graph: a leak');
    const confirmed = await waitFor('MH002 message with the measurement', () =>
      memhintDiagnostics(doc.uri).find((d) => codeOf(d) === 'MH002' && d.range.start.line === accumulate && /Measured by memhint profile/.test(d.message)));
    assert.match(confirmed.message, /(keeps \d|graph node|live at the peak)/);
    assert.doesNotMatch(confirmed.message, /keeps \d+ B per step/, 'a scalar\'s bytes are not the cost of the graph it keeps');
    // No lint rule fires on `history.append(loss)`; the measured leak it causes becomes a diagnostic there.
    const append = lineOf(doc, 'history.append(loss)');
    assert.ok(!(await linted(api, doc)).some((d) => codeOf(d) !== 'measured' && d.range.start.line === append), 'no lint finding on the append');
    const measured = await waitFor('a measured diagnostic on history.append(loss)', () =>
      memhintDiagnostics(doc.uri).find((d) => codeOf(d) === 'measured' && d.range.start.line === append));
    // Storage, or (where the harness counts the graph a kept tensor reaches) the autograd nodes first.
    assert.match(measured.message, /What line \d+ allocates \(`loss = F\.mse_loss\(hidden, y\)`\) (outlives each step: \d+(\.\d+)? (KiB|MiB) more per step|keeps \d+ autograd graph nodes? per step alive .*per step), held by `history`/);
    assert.equal(measured.severity, vscode.DiagnosticSeverity.Warning);
  });

  it('Cancel kills the child process', async () => {
    // train.py's main() calls train_step 20 times; asking for 1000 steps keeps the run busy until it is cancelled.
    const editor = await openPython('train.py');
    const undoSteps = await setSetting('profile.steps', 1000);
    try {
      const line = lineOf(editor.document, 'def train_step(') + 1;
      editor.selection = new vscode.Selection(line, 4, line, 4);
      const running = vscode.commands.executeCommand<ProfileCommandResult>('memhint.profileStep');
      await waitFor('profile running', () => api.state().profile.running, 30_000);
      const child = await waitFor('the harness process', () => harnessPids(editor.document.uri.fsPath)[0], 30_000);
      await vscode.commands.executeCommand('memhint.cancelProfile');
      const outcome = await running;
      assert.equal(outcome.status, 'cancelled');
      await waitFor(`process ${child} gone`, () => !isAlive(child), 10_000);
    } finally {
      await undoSteps();
    }
  });
});

let lastReport: import('../../../src/profiler/report').ProfileReport | undefined;

/** 1-based lines of `uri` that the last profile measured. */
function profiledLines(uri: vscode.Uri): number[] {
  return (lastReport?.lines ?? []).filter((l) => l.file === uri.fsPath).map((l) => l.line);
}

/** Pids of harness processes (python -m memhint_harness ... --script FILE) profiling `script`. */
function harnessPids(script: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd.includes('memhint_harness') && cmd.includes(script)) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie has exited
  } catch {
    return false;
  }
}
