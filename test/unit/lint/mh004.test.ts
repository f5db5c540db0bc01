// MH004 reports the `retain_graph=True` argument itself and offers no autofix: whether the graph is
// needed again cannot be proven locally in general.
import * as assert from 'node:assert/strict';
import { lint } from './harness';
import { only } from './autograd-fix-helpers';

describe('MH004 retain-graph-true', () => {
  it('marks the keyword argument and has no fix', async () => {
    const text = 'def step(model, x, opt):\n    loss = model(x).sum()\n    loss.backward(retain_graph=True)\n    opt.step()\n';
    const [f] = only(await lint(text), 'MH004');
    assert.ok(f);
    assert.equal(text.slice(f.start, f.end), 'retain_graph=True');
    assert.equal(f.fix, null);
    assert.equal(f.name, 'retain-graph-true');
  });

  it('stays quiet for retain_graph=False, a variable, or create_graph', async () => {
    for (const arg of ['retain_graph=False', 'retain_graph=keep', 'retain_graph=True, create_graph=True']) {
      const text = `def step(model, x, opt, keep):\n    loss = model(x).sum()\n    loss.backward(${arg})\n    opt.step()\n`;
      assert.deepEqual(only(await lint(text), 'MH004'), [], arg);
    }
  });

  it('survives broken code', async () => {
    const text = 'def step(model, x:\n    loss = model(x\n    loss.backward(retain_graph=True)\n    for\n';
    await lint(text);
  });
});
