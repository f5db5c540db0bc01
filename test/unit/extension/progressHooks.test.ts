import * as assert from 'node:assert/strict';
import { progressHooks } from '../../../src/extension/profile/progressHooks';

describe('progress of a side-car run (profile and predict)', () => {
  it('prefixes messages with the interpreter, never moves the bar back, and logs the script output by line', () => {
    const reports: Array<{ message?: string; increment?: number }> = [];
    const logged: string[] = [];
    const hooks = progressHooks(new AbortController().signal, { report: (v) => reports.push(v) }, 'python3 · torch 2.13', { info: (m) => logged.push(m) });
    hooks.onProgress('warmup 1 took 10 ms', 0.25);
    hooks.onProgress('step 1/3 took 9 ms', 0.5);
    hooks.onProgress('a late, smaller fraction', 0.4);
    hooks.onProgress('no fraction', null);
    hooks.onOutput('epoch 1\r\n\nloss 0.5\n');
    assert.deepEqual(reports, [
      { message: 'python3 · torch 2.13 · warmup 1 took 10 ms', increment: 25 },
      { message: 'python3 · torch 2.13 · step 1/3 took 9 ms', increment: 25 },
      { message: 'python3 · torch 2.13 · a late, smaller fraction', increment: 0 },
      { message: 'python3 · torch 2.13 · no fraction', increment: undefined },
    ]);
    assert.deepEqual(logged, ['[script] epoch 1', '[script] loss 0.5']);
  });
});
