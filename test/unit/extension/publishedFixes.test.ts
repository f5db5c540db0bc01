import * as assert from 'node:assert/strict';
import type { Finding, TextChange } from '../../../src/lint';
import { findingsAt, mapRange } from '../../../src/extension/lint/publishedFixes';

/** Applies changes in order, as VS Code's content changes and PythonDocument.update do. */
function apply(text: string, changes: readonly TextChange[]): string {
  let out = text;
  for (const c of changes) out = out.slice(0, c.rangeOffset) + c.text + out.slice(c.rangeOffset + c.rangeLength);
  return out;
}

const published = 'import torch\nopt.zero_grad(set_to_none=False)\nx = 1\n';
const call = published.indexOf('opt.zero_grad');
const arg = published.indexOf('set_to_none=False');
const finding: Finding = {
  code: 'MH003',
  name: 'zero-grad-set-to-none',
  severity: 'warning',
  message: 'zero_grad keeps the gradients',
  start: call,
  end: published.indexOf('\n', call),
  fix: { title: 'Use set_to_none=True', edits: [{ start: arg, end: arg + 'set_to_none=False'.length, newText: 'set_to_none=True' }] },
};
const lineEnd = published.indexOf('\n', call);
const noqa = () => ({ start: lineEnd, end: lineEnd, newText: '  # noqa: MH003' });

describe('extension/publishedFixes', () => {
  it('answers at the published offsets when nothing changed since', () => {
    const [at] = findingsAt([finding], [], call + 3, call + 3, noqa);
    assert.equal(at.index, 0);
    assert.deepEqual([at.start, at.end], [finding.start, finding.end]);
    assert.deepEqual(at.fixEdits, finding.fix!.edits);
    assert.deepEqual(at.ignore, noqa());
  });

  it('carries the fix and the noqa comment past lines typed above, and the edits apply to the current text', () => {
    const changes = [{ rangeOffset: 0, rangeLength: 0, text: '# a\n' }, { rangeOffset: 4, rangeLength: 0, text: '# b\n' }];
    const current = apply(published, changes);
    const cursor = current.indexOf('zero_grad');
    const [at] = findingsAt([finding], changes, cursor, cursor, noqa);
    assert.ok(at, 'the finding is found at its new place');
    assert.equal(current.slice(at.start, at.end), published.slice(finding.start, finding.end));
    assert.equal(apply(current, at.fixEdits!.map((e) => ({ rangeOffset: e.start, rangeLength: e.end - e.start, text: e.newText }))), '# a\n# b\nimport torch\nopt.zero_grad(set_to_none=True)\nx = 1\n');
    const ignore = at.ignore!;
    assert.equal(current.slice(0, ignore.start) + ignore.newText + current.slice(ignore.end), '# a\n# b\nimport torch\nopt.zero_grad(set_to_none=False)  # noqa: MH003\nx = 1\n');
  });

  it('is not found at its old place once lines above moved it', () => {
    const changes = [{ rangeOffset: 0, rangeLength: 0, text: '# a\n# b\n# c\n' }];
    assert.deepEqual(findingsAt([finding], changes, call, call, noqa), [], 'the old offset is now in the line above it');
    assert.equal(findingsAt([finding], changes, call + 12, call + 12, noqa).length, 1);
  });

  it('leaves out a finding an edit overlaps (the re-lint will publish it again)', () => {
    const changes = [{ rangeOffset: arg, rangeLength: 5, text: '' }];
    assert.deepEqual(findingsAt([finding], changes, call, call, noqa), []);
  });

  it('keeps a finding whose line got text typed after it, but not the noqa insertion at that point', () => {
    const changes = [{ rangeOffset: lineEnd, rangeLength: 0, text: '  # later' }];
    const [at] = findingsAt([finding], changes, call, call, noqa);
    assert.deepEqual(at.fixEdits, finding.fix!.edits, 'edits before the change keep their offsets');
    assert.equal(at.ignore, null, 'a comment inserted before the typed text would swallow it');
  });

  it('edits below change nothing', () => {
    const changes = [{ rangeOffset: published.length - 2, rangeLength: 1, text: '42' }];
    const [at] = findingsAt([finding], changes, call, call, noqa);
    assert.deepEqual([at.start, at.end], [finding.start, finding.end]);
  });

  it('mapRange: insertions at the edges of a non-empty range stay outside; deletions before it shift it', () => {
    assert.deepEqual(mapRange(10, 20, [{ rangeOffset: 10, rangeLength: 0, text: 'ab' }]), { start: 12, end: 22 });
    assert.deepEqual(mapRange(10, 20, [{ rangeOffset: 20, rangeLength: 0, text: 'ab' }]), { start: 10, end: 20 });
    assert.deepEqual(mapRange(10, 20, [{ rangeOffset: 2, rangeLength: 8, text: '' }]), { start: 2, end: 12 });
    assert.equal(mapRange(10, 20, [{ rangeOffset: 19, rangeLength: 2, text: '' }]), null);
    assert.equal(mapRange(10, 10, [{ rangeOffset: 10, rangeLength: 0, text: 'x' }]), null);
  });
});
