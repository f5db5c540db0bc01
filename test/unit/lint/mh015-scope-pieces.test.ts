// MH015's identifiers of a scope are kept per statement of the scope's body (rules/mh015-scope-names.ts):
// in a giant `def main():` an edit of one statement of main walks that statement again, not the whole of
// main, and an edit of the statement that reads the tensor's gradient changes the verdict, as a fresh
// linter's does.
import * as assert from 'node:assert/strict';
import { lintFile, defaultSettings } from '../../../src/lint';
import { findingsView as view, getLinter, getOracle } from './harness';
import { countingMemo } from './memo-counting';

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
type Edit = (from: string, to: string) => { lookups: number; computes: number; findings: View };

/** Opens MAIN, checks it against a fresh linter, and runs `body` with an `edit` that does the same after each edit. */
async function editingMain(body: (edit: Edit, first: View) => void): Promise<void> {
  const linter = await getLinter();
  const oracle = await getOracle();
  let text = MAIN;
  const doc = linter.open(text);
  try {
    const first = view(lintFile(doc.source, defaultSettings));
    assert.deepEqual(first, view(oracle.lintText(text, defaultSettings)), 'before any edit');
    countingMemo(DESCRIPTOR, doc.source.session, (counts) => {
      body((from, to) => {
        const at = text.indexOf(from);
        assert.ok(at >= 0, `no ${JSON.stringify(from)} to edit`);
        doc.update([{ rangeOffset: at, rangeLength: from.length, text: to }]);
        text = text.slice(0, at) + to + text.slice(at + from.length);
        const before = counts();
        const findings = view(lintFile(doc.source, defaultSettings));
        assert.deepEqual(findings, view(oracle.lintText(text, defaultSettings)), `after ${JSON.stringify(from)} -> ${JSON.stringify(to)}`);
        const after = counts();
        return { lookups: after.lookups - before.lookups, computes: after.computes - before.computes, findings };
      }, first);
    });
  } finally {
    doc.dispose();
  }
}

const mh015 = (findings: View): number => findings.filter((f) => f.startsWith('MH015')).length;

describe('MH015: scope identifiers kept per statement of a giant def main()', () => {
  it('an edit of another statement of main walks that statement only', async () => {
    await editingMain((edit, first) => {
      assert.equal(mh015(first), 1, 'z only');
      const other = edit("print('ready', 1)", "print('ready', 2)");
      assert.equal(other.lookups, 9, "one lookup per statement of main's body");
      assert.equal(other.computes, 1, 'only the edited statement walked again');
      assert.equal(mh015(other.findings), 1);
    });
  });

  it('an edit of the statement that reads the gradient changes the finding', async () => {
    await editingMain((edit) => {
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
