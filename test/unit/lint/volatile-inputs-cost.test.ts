// The cost of MH001's graph-free-intent question (analysis/volatile-inputs.ts) must grow linearly with a
// scope's size: it follows each identifier argument of a forward to the scope's latest plain binding of
// the name, and searching the scope per argument made a long script's module scope quadratic (16% of a
// 5 MB lint's CPU). Counted, not timed: the calls of `childByField` the analysis makes over every call
// of a script twice as long must be about twice as many.
import * as assert from 'node:assert/strict';
import * as syntax from '../../../src/lint/syntax';
import { graphFreeIntent } from '../../../src/lint/analysis/volatile-inputs';
import { getLinter } from './harness';

/** A module-scope script of `blocks` bindings each read by a forward; `volatile` opens the analysis's gate. */
function script(blocks: number): string {
  const lines = ['import torch', 'from torch.autograd import Variable', 'netG = torch.load("g.pt")', 'z = Variable(torch.randn(1, 100), volatile=True)'];
  for (let i = 0; i < blocks; i++) lines.push(`x${i} = torch.randn(8, 100)`, `y${i} = netG(x${i}, scale=x${i})`);
  return lines.join('\n') + '\n';
}

/** `childByField` calls made while asking graphFreeIntent of every call of the script (module scope). */
async function childByFieldCalls(blocks: number): Promise<{ calls: number; volatile: number }> {
  const doc = (await getLinter()).open(script(blocks), { oneShot: true });
  const file = doc.source;
  const exports = syntax as unknown as { childByField: typeof syntax.childByField };
  const original = exports.childByField;
  let calls = 0;
  exports.childByField = (node, field) => {
    calls++;
    return original(node, field);
  };
  let volatile = 0;
  try {
    for (const call of file.nodesOfType('call')) if (graphFreeIntent(file, file.root, call) === 'volatile') volatile++;
  } finally {
    exports.childByField = original;
  }
  return { calls, volatile };
}

describe('graph-free intent (volatile inputs): cost', () => {
  it('grows linearly with the length of a module-scope script', async () => {
    const small = await childByFieldCalls(150);
    const large = await childByFieldCalls(300);
    // The count must see the analysis at all (the gate is open, every forward's arguments are followed).
    assert.ok(small.calls > 150 * 4, `only ${small.calls} childByField calls for 150 forwards`);
    assert.equal(small.volatile + large.volatile, 0);
    // Linear: 2.00x (2,861 -> 5,711 calls); a walk of the scope per argument gave 3.91x (94,057 -> 368,107).
    const ratio = large.calls / small.calls;
    assert.ok(ratio < 2.5, `twice the script took ${ratio.toFixed(2)}x the childByField calls (${small.calls} -> ${large.calls})`);
  });
});
