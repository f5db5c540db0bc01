import * as assert from 'node:assert/strict';
import type { Finding } from '../../../src/lint';
import { buildNotebookProgram, cellOfLine, findingsByCell, neutraliseMagics, programLineOf, type CellInput } from '../../../src/extension/lint/notebookProgram';
import { getLinter } from '../lint/harness';

function code(index: number, text: string, executionOrder?: number): CellInput {
  return { index, isCode: true, languageId: 'python', text, ...(executionOrder === undefined ? {} : { executionOrder }) };
}

const BUILD = 'import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2).cuda()\n';
const EVAL = 'for x in loader:\n    out = model(x.cuda())\n    print(out.sum().item())\n';

describe('extension/notebookProgram', () => {
  it('finds an eval loop without no_grad in cell 3 on cell 3, with its fix in cell 3 offsets', async () => {
    const cells: CellInput[] = [code(0, BUILD), { index: 1, isCode: false, languageId: 'markdown', text: '# Evaluate\n' }, code(2, EVAL)];
    const program = buildNotebookProgram(cells);
    assert.deepEqual(program.segments.map((s) => s.cell), [0, 2]);
    const found = findingsByCell(program, (await getLinter()).lintText(program.text));
    const mh001 = found.filter((f) => f.finding.code === 'MH001');
    assert.equal(mh001.length, 1);
    assert.equal(mh001[0].cell, 2);
    assert.equal(EVAL.slice(mh001[0].finding.start, mh001[0].finding.end), 'model(x.cuda())');
    // The fix (wrap in torch.no_grad()) needs cell 0's `import torch`; its edits land in cell 2's text.
    const fix = mh001[0].finding.fix;
    assert.ok(fix !== null);
    let fixed = EVAL;
    for (const e of [...fix.edits].sort((a, b) => b.start - a.start)) fixed = fixed.slice(0, e.start) + e.newText + fixed.slice(e.end);
    assert.match(fixed, /^with torch\.no_grad\(\):\n {4}for x in loader:\n {8}out = model/);
    // Alone, the cell has no import to use, and the rule offers no fix.
    const alone = (await getLinter()).lintText(EVAL).find((f) => f.code === 'MH001');
    assert.equal(alone?.fix ?? null, null);
  });

  it('orders cells by execution count, then cells not run in document order', () => {
    const program = buildNotebookProgram([code(0, 'a = 1', 3), code(1, 'b = 2'), code(2, 'c = 3', 1), code(3, 'd = 4')]);
    assert.deepEqual(program.segments.map((s) => s.cell), [2, 0, 1, 3]);
    assert.equal(program.text, 'c = 3\na = 1\nb = 2\nd = 4');
  });

  it('skips non-Python code cells', () => {
    const program = buildNotebookProgram([code(0, 'x = 1'), { index: 1, isCode: true, languageId: 'r', text: 'y <- 2' }]);
    assert.deepEqual(program.segments.map((s) => s.cell), [0]);
  });

  it('turns magics into comments of the same length, keeping the Python around them', () => {
    const text = '%matplotlib inline\n!pip install torch\nfiles = !ls\nmodel?\nx = 1  # why?\n    %time f()\ny = a == b\n';
    const out = neutraliseMagics(text);
    assert.equal(out, '#matplotlib inline\n#pip install torch\n#iles = !ls\n#odel?\nx = 1  # why?\n    #time f()\ny = a == b\n');
    assert.equal(out.length, text.length);
  });

  it('keeps a %%time body as Python and blanks a %%bash body', () => {
    assert.equal(neutraliseMagics('%%time\nx = f()\n'), '#%time\nx = f()\n');
    assert.equal(neutraliseMagics('%%bash\nls -la\necho hi\n'), '#%bash\n#s -la\n#cho hi\n');
  });

  it('maps program lines to cell lines and back', () => {
    const program = buildNotebookProgram([code(0, 'a = 1\nb = 2\n'), code(1, 'c = 3')]);
    // Cell 0 has 3 lines (the last empty), so cell 1 starts at program line 3.
    assert.deepEqual(cellOfLine(program, 1), { cell: 0, at: 1 });
    assert.deepEqual(cellOfLine(program, 3), { cell: 1, at: 0 });
    assert.equal(cellOfLine(program, 4), null);
    assert.equal(programLineOf(program, 1, 0), 3);
    assert.equal(programLineOf(program, 5, 0), null);
  });

  it('publishes a finding whose fix spans cells without the fix, and cuts its range at the cell end', () => {
    const program = buildNotebookProgram([code(0, 'a = 1'), code(1, 'b = 2')]);
    const finding: Finding = {
      code: 'MH001', name: 'missing-no-grad', severity: 'warning', message: 'm', start: 4, end: 9,
      fix: { title: 't', edits: [{ start: 4, end: 5, newText: '2' }, { start: 10, end: 11, newText: 'x' }] },
    };
    const [mapped] = findingsByCell(program, [finding]);
    assert.equal(mapped.cell, 0);
    assert.equal(mapped.finding.fix, null);
    assert.equal(mapped.fixDropped, true);
    assert.deepEqual([mapped.finding.start, mapped.finding.end], [4, 5]);
    const inCell = findingsByCell(program, [{ ...finding, start: 6, end: 11, fix: { title: 't', edits: [{ start: 10, end: 11, newText: 'x' }] } }]);
    assert.deepEqual(inCell[0].finding.fix?.edits, [{ start: 4, end: 5, newText: 'x' }]);
    assert.equal(inCell[0].cell, 1);
  });
});
