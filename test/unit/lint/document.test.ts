import * as assert from 'node:assert/strict';
import { getLinter } from './harness';
import { walk, type SyntaxNode } from '../../../src/lint/syntax';

/** Structural dump of the mirror, to compare incremental and fresh parses. */
function dump(root: SyntaxNode): string {
  const parts: string[] = [];
  walk(root, (n) => {
    parts.push(`${n.type}@${n.start}-${n.end}${n.field ? ':' + n.field : ''}`);
  });
  return parts.join(' ');
}

describe('PythonDocument', () => {
  it('mirrors the tree with fields and UTF-16 offsets', async () => {
    const linter = await getLinter();
    const doc = linter.open('s = "é😀"\nx = loss.item()\n');
    const calls = doc.source.nodesOfType('call');
    assert.equal(calls.length, 1);
    assert.equal(doc.source.textOf(calls[0]), 'loss.item()');
    assert.deepEqual(doc.source.positionAt(calls[0].start), { line: 1, character: 4 });
    doc.dispose();
  });

  it('incremental edits give the same mirror as a fresh parse', async () => {
    const linter = await getLinter();
    let text = 'import torch\n\ndef f(x):\n    return x + 1\n\ndef g(y):\n    total = 0\n    total += y\n    return total\n';
    const doc = linter.open(text);
    const edits = [
      { rangeOffset: text.indexOf('x + 1') + 4, rangeLength: 1, text: '22' },
      { rangeOffset: 0, rangeLength: 0, text: '# header\n' },
      { rangeOffset: text.length, rangeLength: 0, text: 'def h(:\n' },
    ];
    for (const e of edits) {
      doc.update([e]);
      text = text.slice(0, e.rangeOffset) + e.text + text.slice(e.rangeOffset + e.rangeLength);
      const fresh = linter.open(text);
      assert.equal(doc.text, text);
      assert.equal(dump(doc.source.root), dump(fresh.source.root));
      assert.equal(doc.source.nodesOfType('identifier').length, fresh.source.nodesOfType('identifier').length);
      fresh.dispose();
    }
    doc.dispose();
  });
});
