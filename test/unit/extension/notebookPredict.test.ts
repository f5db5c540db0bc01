// Prediction from a notebook cell: the program without the statements that train, and the predicted
// report's lines back on their cells.
import * as assert from 'node:assert/strict';
import { hintsForFile } from '../../../src/extension/hints/model';
import { buildNotebookProgram, type CellInput } from '../../../src/extension/lint/notebookProgram';
import { errorInCells, hintsForCell, predictionProgram } from '../../../src/extension/profile/notebookScript';
import { getLinter } from '../lint/harness';
import { counters, line, predictedReport, report } from './reportFixture';

function code(index: number, text: string, executionOrder?: number): CellInput {
  return { index, isCode: true, languageId: 'python', text, ...(executionOrder === undefined ? {} : { executionOrder }) };
}

const CELLS: CellInput[] = [
  code(0, 'import torch\nmodel = torch.nn.Linear(256, 1024)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)'),
  code(1, 'def train_step(x):\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n    return loss'),
  { index: 2, isCode: false, languageId: 'markdown', text: '## Train' },
  code(3, 'losses = []\nfor _ in range(100):\n    losses.append(train_step(torch.randn(64, 256)).item())\nprint(losses[-1])'),
  code(4, 'import math\n\ndef make_inputs(batch=64):\n    return (torch.randn(batch, 256),)'),
  code(5, 'print(math.log(losses[0]))'),
];

async function parse(text: string) {
  return (await getLinter()).open(text).source;
}

describe('extension/notebook prediction', () => {
  it('leaves out the training cell and what reads its results, keeps later definitions, line for line', async () => {
    const program = buildNotebookProgram(CELLS);
    const { program: out, leftOut } = predictionProgram(program, await parse(program.text), 'train_step');
    assert.deepEqual(leftOut, [3, 5]);
    const lines = out.text.split('\n');
    assert.equal(lines.length, program.text.split('\n').length, 'every line stays where it was');
    // From the first statement that calls the step on: `losses = []` before it runs, harmlessly.
    assert.deepEqual(lines.slice(9, 13), ['losses = []', '# for _ in range(100):', '#     losses.append(train_step(torch.randn(64, 256)).item())', '# print(losses[-1])']);
    assert.ok(out.text.includes('\nimport math\n\ndef make_inputs(batch=64):\n    return (torch.randn(batch, 256),)\n'), 'a definition after the loop is kept');
    assert.ok(out.text.endsWith('# print(math.log(losses[0]))'));
    assert.ok(out.text.startsWith('import torch\nmodel = torch.nn.Linear(256, 1024)\n'), 'what builds the model before the loop runs');
    // The segments still slice each cell out of the new text.
    for (const s of out.segments) assert.equal(out.text.slice(s.start, s.start + s.length).split('\n').length, s.lineCount);
    // What is left parses: it runs as the module prediction imports.
    assert.equal((await parse(out.text)).nodesOfType('ERROR').length, 0);
  });

  it('also leaves out a call through a function of the notebook that reaches the step', async () => {
    const cells = [CELLS[0], CELLS[1], code(2, 'def fit(n):\n    for _ in range(n):\n        train_step(torch.randn(8, 256))'), code(3, 'x = 1\nfit(10)\ny = 2')];
    const program = buildNotebookProgram(cells);
    const { program: out, leftOut } = predictionProgram(program, await parse(program.text), 'train_step');
    assert.deepEqual(leftOut, [3]);
    assert.ok(out.text.endsWith('\nx = 1\n# fit(10)\n# y = 2'), out.text);
  });

  it('changes nothing in a notebook that never calls the step', async () => {
    const cells = [CELLS[0], CELLS[1], CELLS[4]];
    const program = buildNotebookProgram(cells);
    const result = predictionProgram(program, await parse(program.text), 'train_step');
    assert.deepEqual(result.leftOut, []);
    assert.equal(result.program, program);
  });

  it("puts the predicted report's lines on the step's cell, marked predicted", async () => {
    const program = buildNotebookProgram(CELLS);
    const { program: out } = predictionProgram(program, await parse(program.text), 'train_step');
    const script = '/tmp/memhint-notebook-x/nb.py';
    // Script line 6 (1-based) is `loss = model(x).sum()`: cell 1's line 2 (0-based 2).
    const predicted = { ...predictedReport(), files: [script], lines: [{ ...line(6, 'loss = model(x).sum()', { calls: 1, inclusive: counters(4 * 1024 ** 2, 0, 4 * 1024 ** 2) }), file: script }] };
    const hints = hintsForCell(hintsForFile(predicted, [script]), out, 1);
    assert.deepEqual(hints.map((h) => h.line), [2]);
    assert.match(hints[0].text, /^predicted /);
    assert.deepEqual(hintsForCell(hintsForFile(predicted, [script]), out, 0), [], 'no hint on another cell');
    // The same report, measured, says nothing of prediction: the two are told apart on the cell.
    const measured = { ...report(), files: [script], lines: predicted.lines };
    assert.doesNotMatch(hintsForCell(hintsForFile(measured, [script]), out, 1)[0].text, /predicted/);
  });

  it("names the cell in the prediction's error", async () => {
    const program = buildNotebookProgram(CELLS);
    const { program: out } = predictionProgram(program, await parse(program.text), 'train_step');
    const script = '/tmp/memhint-notebook-x/nb.py';
    assert.equal(errorInCells(`NameError: name 'torch' is not defined (${script}:17)`, script, out), "NameError: name 'torch' is not defined (cell 5, line 4)");
  });
});
