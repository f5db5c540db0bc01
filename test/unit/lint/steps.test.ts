// The shared "per-step loop" notion (src/lint/analysis/steps.ts) that MH005/MH006/MH007/MH009 rely on.
import * as assert from 'node:assert/strict';
import { isPerStepLoop, isTrainingLoop } from '../../../src/lint/analysis/steps';
import type { SourceFile, SyntaxNode } from '../../../src/lint/syntax';
import { getLinter } from './harness';

/** Per-step verdict for each loop, keyed by the loop header's text. */
async function verdicts(src: string): Promise<Record<string, boolean>> {
  const doc = (await getLinter()).open(src);
  try {
    const file: SourceFile = doc.source;
    const loops: SyntaxNode[] = [...file.nodesOfType('for_statement'), ...file.nodesOfType('while_statement')];
    const out: Record<string, boolean> = {};
    for (const l of loops) out[file.lineText(file.lineOf(l.start)).trim()] = isPerStepLoop(file, l);
    return out;
  } finally {
    doc.dispose();
  }
}

describe('per-step loop analysis', () => {
  it('epoch loop no, batch loop yes', async () => {
    const v = await verdicts('for epoch in range(E):\n    for x, y in train_loader:\n        loss = criterion(model(x), y)\n        loss.backward()\n        opt.step()\n    scheduler.step()\n');
    assert.deepEqual(v, { 'for epoch in range(E):': false, 'for x, y in train_loader:': true });
  });

  it('an epoch loop that calls a local train function is not per-step; a loop calling a step function is', async () => {
    const src = [
      'def train_epoch(model, loader, opt):',
      '    for b in loader:',
      '        model(b).backward()',
      '        opt.step()',
      'def train_step(model, b, opt):',
      '    model(b).backward()',
      '    opt.step()',
      'for epoch in range(3):',
      '    train_epoch(model, loader, opt)',
      'for step in range(1000):',
      '    batch = next(it)',
      '    do_step(model, batch, opt)',
      'for b in stream:',
      '    train_step(model, b, opt)',
      '',
    ].join('\n');
    const v = await verdicts(src);
    assert.equal(v['for epoch in range(3):'], false);
    assert.equal(v['for b in loader:'], true);
    assert.equal(v['for b in stream:'], true);
    // do_step is unknown: a fetched batch alone is not a forward pass
    assert.equal(v['for step in range(1000):'], false);
  });

  it('nanoGPT: the while loop and its micro-step loop are both per-step', async () => {
    const src = 'while True:\n    for micro_step in range(accum):\n        logits, loss = model(X, Y)\n        X, Y = get_batch("train")\n        scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n';
    assert.deepEqual(await verdicts(src), { 'while True:': true, 'for micro_step in range(accum):': true });
  });

  it('eval loops over loaders and get_batch loops are per-step; file and sweep loops are not', async () => {
    const src = [
      'for x, y in val_loader:',
      '    out = model(x)',
      'for k in range(eval_iters):',
      '    X, Y = get_batch(split)',
      '    logits, loss = model(X, Y)',
      'for path in paths:',
      '    preds.append(model(load(path)))',
      'for lr in lrs:',
      '    run_trial(lr)',
      'for loader in loaders:',
      '    print(len(loader))',
      'for env_step in range(T):',
      '    state, r, done, _ = env.step(action)',
      'for i in range(10):',
      '    lr_scheduler.step()',
      '',
    ].join('\n');
    assert.deepEqual(await verdicts(src), {
      'for x, y in val_loader:': true,
      'for k in range(eval_iters):': true,
      'for path in paths:': false,
      'for lr in lrs:': false,
      'for loader in loaders:': false,
      'for env_step in range(T):': false,
      'for i in range(10):': false,
    });
  });

  it('training loops need an optimisation step somewhere inside', async () => {
    const doc = (await getLinter()).open('for x in loader:\n    model(x)\nfor x in loader:\n    for _ in range(2):\n        model(x).backward()\n');
    try {
      const [a, b] = doc.source.nodesOfType('for_statement');
      assert.equal(isTrainingLoop(doc.source, a), false);
      assert.equal(isTrainingLoop(doc.source, b), true);
    } finally {
      doc.dispose();
    }
  });

  it('does not recurse forever on mutually recursive local functions', async () => {
    const v = await verdicts('def f():\n    g()\ndef g():\n    f()\nfor x in data:\n    f()\n');
    assert.deepEqual(v, { 'for x in data:': false });
  });
});
