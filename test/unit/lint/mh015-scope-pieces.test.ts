// MH015's identifiers of a scope are kept per statement of the scope's body (rules/mh015-scope-names.ts):
// in a giant `def main():` an edit of one statement of main walks that statement again, not the whole of
// main, and an edit of the statement that reads the tensor's gradient changes the verdict, as a fresh
// linter's does.
import * as assert from 'node:assert/strict';
import type { findingsView as view } from './harness';
import { editingWithCounts } from './memo-counting';

const DESCRIPTOR = 'MH015.statementNames';

// `x` requires grad for the saliency map a later statement of main reads (`x.grad`); `z` is unused noise.
// `y` is read in an edit below.
const MAIN = `import torch
import torch.nn as nn


def main(steps=10, nz=64):
    net = nn.Sequential(nn.Linear(nz, 128), nn.ReLU(), nn.Linear(128, 10))
    y = torch.randn(32, nz)
    x = torch.randn(32, nz, requires_grad=True)
    score = net(x).max(dim=1).values.sum()
    score.backward()
    saliency = x.grad.abs()
    print('ready', 1)
    for step in range(steps):
        z = torch.randn(32, nz, requires_grad=True)
        net(z).sum().backward()
    print(float(saliency.mean()))
`;

type View = ReturnType<typeof view>;

const mh015 = (findings: View): number => findings.filter((f) => f.startsWith('MH015')).length;

describe('MH015: scope identifiers kept per statement of a giant def main()', () => {
  it('an edit of another statement of main walks that statement only', async () => {
    await editingWithCounts(MAIN, DESCRIPTOR, (edit, first) => {
      assert.equal(mh015(first), 1, 'z only');
      const other = edit("print('ready', 1)", "print('ready', 2)");
      assert.equal(other.lookups, 9, "one lookup per statement of main's body");
      assert.equal(other.computes, 1, 'only the edited statement walked again');
      assert.equal(mh015(other.findings), 1);
    });
  });

  it('an edit of the statement that reads the gradient changes the finding', async () => {
    await editingWithCounts(MAIN, DESCRIPTOR, (edit) => {
      // The statement reads another tensor's gradient: x is unused too (a part kept for the old statement
      // still lists x there, with its old parent `x.grad`).
      const read = edit('saliency = x.grad.abs()', 'saliency = y.grad.abs()');
      assert.equal(mh015(read.findings), 2, 'x and z');
      // And back: the read returns, x is used again.
      const back = edit('saliency = y.grad.abs()', 'saliency = x.grad.abs()');
      assert.equal(mh015(back.findings), 1, 'z only');
    });
  });
});
