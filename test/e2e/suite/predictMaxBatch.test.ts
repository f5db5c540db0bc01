// "Largest batch that fits" end to end in the extension host: real predictions (torch 2.x on meta
// tensors) through the editor's runner, the answer's report in the store. Needs the torch 2 venv.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { PredictCommandResult } from '../../../src/extension/predict/controller';
import { memhint, openCopy, setSetting } from './util';

const torch2Python = process.env.MEMHINT_TEST_TORCH2_PYTHON ?? path.resolve(__dirname, '../../../../.venv-torch2/bin/python');

describe('predict: largest batch that fits', function () {
  this.timeout(300_000);

  // One real prediction keeps it within the suite's time (each is a child Python importing torch); the
  // bisection itself is unit-tested (test/unit/extension/maxBatch.test.ts).
  it('runs the search through the editor\'s runner and says when not even the smallest value fits', async function () {
    if (!fs.existsSync(torch2Python)) this.skip();
    await memhint();
    const undo = await setSetting('python', torch2Python);
    try {
      const editor = await openCopy('e2e_predict.py', 'max_batch_predict.py');
      // e2e_predict.py reserves 20 MiB at batch 1 (AdamW state of a 1M-parameter MLP): nothing fits 1 MiB.
      const result = await vscode.commands.executeCommand<PredictCommandResult>('memhint.predict', editor.document.uri, 'train_step', {
        setup: 'make_inputs', whatIf: { batch: { arg: 'batch', value: 1 } }, maxBatch: true, device: '1MiB',
      });
      assert.equal(result.status, 'done', result.error);
      assert.equal(result.maxBatch?.best, null, JSON.stringify(result.maxBatch));
      assert.deepEqual(result.maxBatch?.curve.map((p) => [p.value, p.fits]), [[1, false]]);
      assert.deepEqual(result.report?.prediction.setupArgs, { batch: 1 }, 'the smallest tried value\'s report is kept');
      assert.equal(result.report?.prediction.fits, false);
    } finally {
      await undo();
    }
  });
});
