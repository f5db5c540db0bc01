// Per-reader dependencies on the file-wide indexes (src/lint/session.ts): a merged list keeps its identity
// while its values are unchanged, and NodeMemo.getTracked reuses an entry exactly while every index key
// its compute read (directly, or through another memo that hit) keeps its list.
import * as assert from 'node:assert/strict';
import { getLinter } from './harness';
import { NodeMemo, VersionMemo } from '../../../src/lint/session';
import { callsNamed, callsWithKeyword } from '../../../src/lint/analysis/calls';
import type { SourceFile, SyntaxNode } from '../../../src/lint/syntax';

const TEXT = [
  'class Trainer:',
  '    def fit(self, opt):',
  '        for i in range(3):',
  '            opt.step()',
  '',
  '    def log(self, x):',
  '        print(x + 1)',
  '',
  '    def other(self):',
  '        return 2',
  '',
].join('\n');

/** The method named `name` of the file's one class. */
function method(file: SourceFile, name: string): SyntaxNode {
  const found = file.nodesOfType('function_definition').find((d) => file.textOf(d).startsWith(`def ${name}(`));
  assert.ok(found, name);
  return found;
}

describe('index reads: per-key dependencies instead of index stamps', () => {
  it('a key keeps its list while no edit changes its values, in a file that is one statement', async () => {
    const doc = (await getLinter()).open(TEXT);
    try {
      const steps = callsNamed(doc.source, 'step');
      const prints = callsNamed(doc.source, 'print');
      assert.equal(steps.length, 1);
      // An edit inside `log` (a digit of a call's argument) changes the class statement, not `step`'s calls.
      doc.update([{ rangeOffset: TEXT.indexOf('+ 1') + 2, rangeLength: 1, text: '2' }]);
      assert.equal(callsNamed(doc.source, 'step'), steps);
      // `print(x + 2)` is a new call node: its key gets a new list.
      assert.notEqual(callsNamed(doc.source, 'print'), prints);
      // A second `step` call: a new list with both.
      const at = doc.source.text.indexOf('return 2');
      doc.update([{ rangeOffset: at, rangeLength: 0, text: 'self.opt.step()\n        ' }]);
      assert.equal(callsNamed(doc.source, 'step').length, 2);
      assert.notEqual(callsNamed(doc.source, 'step'), steps);
    } finally {
      doc.dispose();
    }
  });

  it('getTracked reuses an entry while the keys it read (also through another memo) keep their lists', async () => {
    const doc = (await getLinter()).open(TEXT);
    try {
      const tracked = new NodeMemo<number>('test.tracked');
      // A per-version memo between the reader and the index: its read must still count as the reader's.
      const inner = new VersionMemo<number>('test.inner');
      let computes = 0;
      const ask = (): number =>
        tracked.getTracked(doc.source, method(doc.source, 'fit'), '', () => {
          computes++;
          return inner.get(doc.source, (f) => callsNamed(f, 'step').length);
        });
      // The inner memo is computed first, outside the tracked compute: the reader sees its read on the hit.
      assert.equal(inner.get(doc.source, (f) => callsNamed(f, 'step').length), 1);
      assert.equal(ask(), 1);
      assert.equal(computes, 1);
      doc.update([{ rangeOffset: TEXT.indexOf('+ 1') + 2, rangeLength: 1, text: '2' }]);
      assert.equal(ask(), 1);
      assert.equal(computes, 1, 'an edit in another method that leaves `step` alone reuses the entry');
      const at = doc.source.text.indexOf('return 2');
      doc.update([{ rangeOffset: at, rangeLength: 0, text: 'self.opt.step()\n        ' }]);
      assert.equal(ask(), 2, 'a new `step` call elsewhere is seen');
      assert.equal(computes, 2);
    } finally {
      doc.dispose();
    }
  });

  it('a whole-file read holds for its own version only', async () => {
    const doc = (await getLinter()).open(TEXT);
    try {
      const tracked = new NodeMemo<number>('test.whole');
      let computes = 0;
      const ask = (): number =>
        tracked.getTracked(doc.source, method(doc.source, 'fit'), '', (n) => {
          computes++;
          doc.source.session.noteWholeFileRead(doc.source);
          return n.start;
        });
      ask();
      ask();
      assert.equal(computes, 1);
      doc.update([{ rangeOffset: TEXT.indexOf('+ 1') + 2, rangeLength: 1, text: '2' }]);
      ask();
      assert.equal(computes, 2);
    } finally {
      doc.dispose();
    }
  });

  it('calls by keyword: one index key per keyword, in callsMatching order, kept while that keyword\'s calls are unchanged', async () => {
    // `x.to(device=1).cuda(device=2)`: both calls start at `x`; callsMatching orders calls sharing a start by
    // their callee group's first appearance in the statement (`to`, on the line before), not document order
    // (the enclosing `cuda` call first).
    const text = [
      'class Trainer:',
      '    def setup(self, x):',
      '        y = x.to(device=0)',
      '        return x.to(device=1).cuda(device=2)',
      '',
      '    def log(self, x):',
      '        print(x, end=3)',
      '',
    ].join('\n');
    const doc = (await getLinter()).open(text);
    try {
      const view = (): string[] => callsWithKeyword(doc.source, 'device').map((k) => `${k.method}=${doc.source.textOf(k.value)}`);
      assert.deepEqual(view(), ['to=0', 'to=1', 'cuda=2']);
      const devices = callsWithKeyword(doc.source, 'device');
      const ends = callsWithKeyword(doc.source, 'end');
      doc.update([{ rangeOffset: doc.source.text.indexOf('end=3') + 4, rangeLength: 1, text: '4' }]);
      assert.equal(callsWithKeyword(doc.source, 'device'), devices, 'an edit in another method keeps the list');
      assert.notEqual(callsWithKeyword(doc.source, 'end'), ends);
      assert.equal(doc.source.textOf(callsWithKeyword(doc.source, 'end')[0].value), '4');
      doc.update([{ rangeOffset: doc.source.text.indexOf('device=0') + 7, rangeLength: 1, text: '5' }]);
      assert.deepEqual(view(), ['to=5', 'to=1', 'cuda=2']);
    } finally {
      doc.dispose();
    }
  });
});
