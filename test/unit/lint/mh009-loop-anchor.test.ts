// MH009's per-loop memo inside a giant `def main():` (issue #12): it is anchored on the statement of
// main's body that holds the loop, with main's header (unitcache's enclosingPiece), and it holds the other
// statements of main its index reads reached (NodeMemo.getTrackedWithin). So an edit elsewhere in main
// that the loop did not read reuses the loop's result, and an edit of what it read (a parameter of main
// its loader comes from, the statement building the loader) recomputes it; either way the findings are a
// fresh linter's.
import * as assert from 'node:assert/strict';
import { lintFile, defaultSettings } from '../../../src/lint';
import { findingsView as view, getLinter, getOracle } from './harness';
import { countingMemo } from './memo-counting';

const MAIN = `import torch
from torch.utils.data import DataLoader


def main(pin=True, device='cuda'):
    dataset = make_dataset()
    lr = 0.1
    train_loader = DataLoader(dataset, batch_size=32, pin_memory=pin)
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(3):
        for x, y in train_loader:
            x = x.to(device)
            y = y.cuda()
            loss = model(x, y)
            loss.backward()
            optimizer.step()
    eval_loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    for x, y in eval_loader:
        x = x.to(device)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    print('done', 1)
`;

/** Runs `body` counting the computes of MH009's loop memo in `session`. */
function countingLoopComputes<T>(session: unknown, body: (count: () => number) => T): T {
  return countingMemo('MH009.loop', session, (counts) => body(() => counts().computes));
}

describe('MH009: per-loop results in a giant def main()', () => {
  it('reuses a loop after an edit elsewhere in main, recomputes it after an edit of what it read', async () => {
    const linter = await getLinter();
    const oracle = await getOracle();
    let text = MAIN;
    const doc = linter.open(text);
    try {
      countingLoopComputes(doc.source.session, (computes) => {
        const edit = (from: string, to: string): number => {
          const at = text.indexOf(from);
          assert.ok(at >= 0, from);
          const before = computes();
          doc.update([{ rangeOffset: at, rangeLength: from.length, text: to }]);
          text = text.slice(0, at) + to + text.slice(at + from.length);
          assert.deepEqual(view(lintFile(doc.source, defaultSettings)), view(oracle.lintText(text, defaultSettings)), `${from} -> ${to}`);
          return computes() - before;
        };
        const first = view(lintFile(doc.source, defaultSettings));
        assert.equal(first.filter((f) => f.startsWith('MH009@')).length, 3);
        assert.ok(computes() >= 2, 'both loops that copy are computed on the first lint');
        // Statements the loops do not read: a number, another statement's call.
        assert.equal(edit('lr = 0.1', 'lr = 0.2'), 0, 'an edit of a statement no loop read reuses every loop');
        assert.equal(edit("print('done', 1)", "print('done', 2)"), 0);
        // Main's parameter the first loop's loader takes pin_memory from: that loop is recomputed.
        assert.ok(edit('pin=True', 'pin=False') >= 1, 'an edit of a parameter of main the loop read recomputes it');
        assert.equal(view(lintFile(doc.source, defaultSettings)).filter((f) => f.startsWith('MH009@')).length, 2);
        // The statement that builds the second loop's loader (reached through the values index).
        assert.ok(edit('batch_size=64, pin_memory=True', 'batch_size=64') >= 1, 'an edit of the statement building the loader recomputes the loop');
        assert.equal(view(lintFile(doc.source, defaultSettings)).filter((f) => f.startsWith('MH009@')).length, 2);
      });
    } finally {
      doc.dispose();
    }
  });

  it('a statement the loop read through an index whose header changes (the index lists are unchanged)', async () => {
    const linter = await getLinter();
    const oracle = await getOracle();
    // The loop's loader is `train`'s parameter, passed `dl` by the call in `run`, whose own parameter `dl`
    // is passed the pinned loader. Renaming run's parameter rebuilds run's definition but reuses its body:
    // the calls' index lists keep their identity, and only the statement holding `train(dl)` (reached
    // through callsNamed) tells the loop's memo that `dl` no longer names a parameter.
    let text = `import torch
from torch.utils.data import DataLoader


def main():
    def train(loader, model, optimizer):
        for x, y in loader:
            x = x.cuda()
            loss = model(x, y)
            loss.backward()
            optimizer.step()

    def run(dl, model, optimizer):
        train(dl, model, optimizer)

    lr = 0.1
    train_loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    model = make_model()
    run(train_loader, model, torch.optim.SGD(model.parameters(), lr=lr))
`;
    const doc = linter.open(text);
    try {
      countingLoopComputes(doc.source.session, (computes) => {
        const counts: number[] = [view(lintFile(doc.source, defaultSettings)).filter((f) => f.startsWith('MH009@')).length];
        const edits: [string, string][] = [
          ['lr = 0.1', 'lr = 0.2'],
          ['def run(dl,', 'def run(dl2,'],
          ['def run(dl2,', 'def run(dl,'],
        ];
        const recomputed: number[] = [];
        for (const [from, to] of edits) {
          const at = text.indexOf(from);
          assert.ok(at >= 0, from);
          const before = computes();
          // As typed: only the characters that differ (an insertion of `2`), so the document reuses run's body.
          let prefix = 0;
          while (prefix < from.length && prefix < to.length && from[prefix] === to[prefix]) prefix++;
          let suffix = 0;
          while (suffix < from.length - prefix && suffix < to.length - prefix && from[from.length - 1 - suffix] === to[to.length - 1 - suffix]) suffix++;
          doc.update([{ rangeOffset: at + prefix, rangeLength: from.length - prefix - suffix, text: to.slice(prefix, to.length - suffix) }]);
          text = text.slice(0, at) + to + text.slice(at + from.length);
          const fresh = view(oracle.lintText(text, defaultSettings));
          assert.deepEqual(view(lintFile(doc.source, defaultSettings)), fresh, `${JSON.stringify(from)} -> ${JSON.stringify(to)}`);
          counts.push(fresh.filter((f) => f.startsWith('MH009@')).length);
          recomputed.push(computes() - before);
        }
        assert.deepEqual(counts, [1, 1, 0, 1], 'the copy is reported while `dl` is run\'s parameter');
        assert.equal(recomputed[0], 0, 'an edit of a statement the loop did not read reuses it');
      });
    } finally {
      doc.dispose();
    }
  });

  it('a device parameter rebound by another statement of main (keptCudaDefault reads the rebinding)', async () => {
    const linter = await getLinter();
    const oracle = await getOracle();
    // `device` keeps its CUDA default on some path (the TPU branch rebinds it) unless a statement of main's
    // body rebinds it outright: then the unpinned loader's batches are not known to go to CUDA.
    let text = `import torch
from torch.utils.data import DataLoader


def main(device='cuda'):
    if use_tpu:
        device = xla_device()
    dataset = make_dataset()
    lr = 0.1
    loader = DataLoader(dataset, batch_size=32)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for x, y in loader:
        loss = model(x.to(device), y.to(device))
        loss.backward()
        optimizer.step()
`;
    const doc = linter.open(text);
    try {
      const edits: [string, string][] = [
        ['    lr = 0.1\n', "    lr = 0.1\n    device = 'cpu'\n"],
        ["    device = 'cpu'\n", "    devices = 'cpu'\n"],
        ["    devices = 'cpu'\n", "    device = 'cpu'\n"],
        ["    device = 'cpu'\n", ''],
      ];
      const counts: number[] = [view(oracle.lintText(text, defaultSettings)).filter((f) => f.startsWith('MH009@')).length];
      for (const [from, to] of edits) {
        const at = text.indexOf(from);
        assert.ok(at >= 0, from);
        doc.update([{ rangeOffset: at, rangeLength: from.length, text: to }]);
        text = text.slice(0, at) + to + text.slice(at + from.length);
        const fresh = view(oracle.lintText(text, defaultSettings));
        assert.deepEqual(view(lintFile(doc.source, defaultSettings)), fresh, `${JSON.stringify(from)} -> ${JSON.stringify(to)}`);
        counts.push(fresh.filter((f) => f.startsWith('MH009@')).length);
      }
      assert.ok(new Set(counts).size > 1, `the rebinding should change some finding (${counts.join(', ')})`);
    } finally {
      doc.dispose();
    }
  });
});
