// A long function's walk parts (models, calls, values, learned leaves, meters, filtered nodes: see
// walkSplittingFunctions and SPLIT_FUNCTION_LINES in analysis/unitcache.ts) are merged from per-statement
// parts of its body: in a giant `def main():` an edit of one statement walks that statement again, not the
// whole of main, and an edit of the statement holding a fact the rules read changes the verdict, as a
// fresh linter's does.
import * as assert from 'node:assert/strict';
import { lintFile, defaultSettings } from '../../../src/lint';
import { SPLIT_FUNCTION_LINES } from '../../../src/lint/analysis/unitcache';
import { assignedNames } from '../../../src/lint/analysis/values';
import { callsNamed } from '../../../src/lint/analysis/calls';
import { findingsView as view, getLinter } from './harness';
import { countingMemo, editingWithCounts, type CountedEdit } from './memo-counting';

/** The per-statement parts of the model facts' walk (where `net.eval()` is recorded). */
const DESCRIPTOR = 'models.statementParts';

const PADDING = Array.from({ length: SPLIT_FUNCTION_LINES + 10 }, (_, i) => `    log_${i} = ${i}\n`).join('');
/** Statements of main's body: three before the padding, the padding, three after. */
const BODY_STATEMENTS = 3 + SPLIT_FUNCTION_LINES + 10 + 3;

// `net(x)` runs after `net.eval()` (a statement far above it) outside no_grad: MH001.
const MAIN = `import torch
import torch.nn as nn


def main(steps=10):
    net = nn.Linear(4, 2)
    loader = [torch.randn(8, 4) for _ in range(steps)]
    net.eval()
${PADDING}    preds = []
    for x in loader:
        preds.append(net(x))
    return preds
`;

type View = ReturnType<typeof view>;

/** Opens `source` (MAIN unless given) and edits it, counting the model facts' statement parts. */
const editingMain = (body: (edit: CountedEdit, first: View) => void, source = MAIN): Promise<void> => editingWithCounts(source, DESCRIPTOR, body);

describe('walk parts of a long function kept per statement of its body', () => {
  it('an edit of one statement of a long main() walks that statement only', async () => {
    await editingMain((edit, first) => {
      assert.equal(first.filter((f) => f.includes('MH001')).length, 1, first.join('\n'));
      const { lookups, computes, findings } = edit('log_7 = 7', 'log_7 = 8');
      assert.equal(lookups, BODY_STATEMENTS, 'every statement of main looked up');
      assert.equal(computes, 1, 'only the edited statement walked');
      assert.deepEqual(findings, first);
    });
  });

  it('an edit of the statement holding the fact changes the verdict, as a fresh linter says', async () => {
    await editingMain((edit, first) => {
      assert.equal(first.filter((f) => f.includes('MH001')).length, 1, first.join('\n'));
      // Another statement first, so that every part is kept from an earlier version.
      edit('log_3 = 3', 'log_3 = 4');
      // (`edit` compares each version's findings with a fresh linter's first.)
      const off = edit('net.eval()', 'net.train()');
      assert.equal(off.findings.filter((f) => f.includes('MH001')).length, 0, off.findings.join('\n'));
      assert.equal(off.computes, 1);
      const on = edit('net.train()', 'net.eval()');
      assert.equal(on.findings.filter((f) => f.includes('MH001')).length, 1, on.findings.join('\n'));
    });
  });

  it("facts naming main's own scope are relocated to the new main node of each version", async () => {
    // A statement-level `set_grad_enabled(False)` of main (gradstate keys it by its scope, main) turns grad
    // off for the forward pass below it: no MH001 before or after an edit of another statement of main, as
    // a fresh linter says. Kept under the old main node, the fact would no longer apply after the edit.
    const gradOff = MAIN.replace('    net.eval()\n', '    net.eval()\n    torch.set_grad_enabled(False)\n');
    await editingMain((edit, first) => {
      assert.equal(first.filter((f) => f.includes('MH001')).length, 0, first.join('\n'));
      const other = edit('log_7 = 7', 'log_7 = 8');
      assert.equal(other.findings.filter((f) => f.includes('MH001')).length, 0, other.findings.join('\n'));
      assert.equal(other.computes, 1);
      const on = edit('torch.set_grad_enabled(False)', 'print(False)');
      assert.equal(on.findings.filter((f) => f.includes('MH001')).length, 1, on.findings.join('\n'));
    }, gradOff);
  });

  it('the file-wide facts merged from the parts follow an edit of the statement holding them', async () => {
    const linter = await getLinter();
    let text = MAIN;
    const doc = linter.open(text);
    const edit = (from: string, to: string): void => {
      const at = text.indexOf(from);
      doc.update([{ rangeOffset: at, rangeLength: from.length, text: to }]);
      text = text.slice(0, at) + to + text.slice(at + from.length);
    };
    const targets = (name: string): number => assignedNames(doc.source, name).length;
    try {
      assert.equal(targets('log_7'), 1);
      edit('log_3 = 3', 'log_3 = 4');
      assert.equal(targets('log_7'), 1);
      // Same place, same length: only the statement's new node tells its part apart.
      edit('log_7 = 7', 'lug_7 = 7');
      assert.equal(targets('log_7'), 0);
      assert.equal(targets('lug_7'), 1);
      assert.equal(callsNamed(doc.source, 'eval').length, 1);
      edit('net.eval()', 'net.cuda()');
      assert.equal(callsNamed(doc.source, 'eval').length, 0);
      assert.equal(callsNamed(doc.source, 'cuda').length, 1);
    } finally {
      doc.dispose();
    }
  });

  it('a short function is walked whole (no statement parts)', async () => {
    const linter = await getLinter();
    const short = MAIN.replace(PADDING, '');
    const doc = linter.open(short);
    try {
      countingMemo(DESCRIPTOR, doc.source.session, (counts) => {
        lintFile(doc.source, defaultSettings);
        assert.equal(counts().lookups, 0);
      });
    } finally {
      doc.dispose();
    }
  });
});
