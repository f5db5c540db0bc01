import * as assert from 'node:assert/strict';
import type { LineHint } from '../../../src/extension/hints/model';
import { buildNotebookProgram, type CellInput } from '../../../src/extension/lint/notebookProgram';
import { errorInCells, hintsForCell, scriptLineOf, whyNotExportable } from '../../../src/extension/profile/notebookScript';

function code(index: number, text: string, executionOrder?: number): CellInput {
  return { index, isCode: true, languageId: 'python', text, ...(executionOrder === undefined ? {} : { executionOrder }) };
}

// cell 0: 2 lines + trailing empty; markdown cell 1; cell 2: the step.
const CELLS = [code(0, 'import torch\nmodel = torch.nn.Linear(4, 2)\n'), { index: 1, isCode: false, languageId: 'markdown', text: '# Step' }, code(2, 'def step(x):\n    loss = model(x).sum()\n    loss.backward()\n')];

describe('extension/notebookScript', () => {
  it('a step in a Python cell of a plain notebook can be exported', () => {
    const program = buildNotebookProgram(CELLS);
    assert.equal(whyNotExportable(CELLS, program, 2, 'profile'), null);
  });

  it('refuses in one line when a cell needs the kernel (%run, %store -r, get_ipython())', () => {
    for (const text of ['%run prepare.py', '%store -r model', 'ip = get_ipython()', '%%writefile data.py\nx = 1']) {
      const cells = [...CELLS, code(3, text)];
      const why = whyNotExportable(cells, buildNotebookProgram(cells), 2, 'profile');
      assert.ok(why !== null, text);
      assert.match(why, /^cannot profile a step in this notebook: cell 4 uses /);
      assert.ok(!why.includes('\n'));
    }
  });

  it('safe magics do not block the export', () => {
    const cells = [code(0, '%matplotlib inline\n!pip install torch'), ...CELLS.slice(1)];
    assert.equal(whyNotExportable(cells, buildNotebookProgram(cells), 2, 'profile'), null);
  });

  it('refuses a cell that is not part of the program', () => {
    assert.match(whyNotExportable(CELLS, buildNotebookProgram(CELLS), 1, 'profile') ?? '', /not a Python code cell/);
  });

  it("maps the script's hint lines back to the step's cell", () => {
    const program = buildNotebookProgram(CELLS);
    // Program lines: cell 0 is 0-2, cell 2 is 3-6. `loss = model(x).sum()` is script line 5 (0-based 4).
    const hint = (line: number) => ({ line, code: '', text: `h${line}` }) as unknown as LineHint;
    const mapped = hintsForCell([hint(1), hint(4), hint(5)], program, 2);
    assert.deepEqual(mapped.map((h) => [h.line, h.text]), [[1, 'h4'], [2, 'h5']]);
    assert.deepEqual(hintsForCell([hint(1), hint(4)], program, 0).map((h) => h.line), [1]);
    assert.equal(scriptLineOf(program, 2, 1), 5);
  });

  it('names cells, not the removed script, in an error', () => {
    const program = buildNotebookProgram(CELLS);
    const script = '/tmp/memhint-notebook-x1/train.py';
    assert.equal(errorInCells(`RuntimeError at ${script}:5: CUDA out of memory`, script, program), 'RuntimeError at cell 3, line 2: CUDA out of memory');
    assert.equal(errorInCells(`File "${script}", line 2, in <module>`, script, program), 'cell 1, line 2, in <module>');
  });
});
