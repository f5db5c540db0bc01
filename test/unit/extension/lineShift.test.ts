import * as assert from 'node:assert/strict';
import fc from 'fast-check';
import { realign, type LineChange } from '../../../src/extension/hints/lineShift';

/** Applies a VS Code-style change to lines of text. */
function apply(lines: string[], c: LineChange): string[] {
  const text = lines.join('\n');
  const offset = (l: number, ch: number): number => lines.slice(0, l).reduce((s, x) => s + x.length + 1, 0) + ch;
  const start = offset(c.startLine, c.startCharacter);
  const end = offset(c.endLine, c.endCharacter);
  return (text.slice(0, start) + c.text + text.slice(end)).split('\n');
}

function hintsOf(lines: string[], which: number[]): { line: number; code: string }[] {
  return which.map((line) => ({ line, code: lines[line].trim() }));
}

const doc = ['def train_step(x):', '    y = model(x)', '    loss = y.sum()', '    loss.backward()', '    return loss'];

function run(lines: string[], which: number[], change: LineChange): number[] {
  const after = apply(lines, change);
  return realign(hintsOf(lines, which), [change], (l) => after[l] ?? null).map((h) => h.line);
}

describe('extension/lineShift', () => {
  it('keeps lines above an edit and shifts lines below by the lines it added', () => {
    // Insert a new line after line 1.
    const change = { startLine: 1, startCharacter: doc[1].length, endLine: 1, endCharacter: doc[1].length, text: '\n    z = 1' };
    assert.deepEqual(run(doc, [0, 1, 2, 3], change), [0, 1, 3, 4]);
  });

  it('shifts up when lines above are deleted', () => {
    const change = { startLine: 1, startCharacter: 0, endLine: 2, endCharacter: 0, text: '' };
    assert.deepEqual(run(doc, [2, 3, 4], change), [1, 2, 3]);
  });

  it('clears the hint of an edited line', () => {
    const change = { startLine: 2, startCharacter: 11, endLine: 2, endCharacter: 12, text: 'z' };
    assert.deepEqual(run(doc, [1, 2, 3], change), [1, 3]);
  });

  it('keeps a line when a line is inserted at its start (Enter at column 0)', () => {
    const change = { startLine: 2, startCharacter: 0, endLine: 2, endCharacter: 0, text: '    pass\n' };
    assert.deepEqual(run(doc, [2], change), [3]);
  });

  it('applies several changes in order', () => {
    const c1 = { startLine: 3, startCharacter: 0, endLine: 4, endCharacter: 0, text: '' }; // delete line 3
    const c2 = { startLine: 0, startCharacter: 0, endLine: 0, endCharacter: 0, text: '# header\n' }; // add a line on top
    const after = apply(apply(doc, c1), c2);
    const out = realign(hintsOf(doc, [1, 2, 3, 4]), [c1, c2], (l) => after[l] ?? null).map((h) => h.line);
    assert.deepEqual(out, [2, 3, 4]);
  });

  it('property: every surviving hint sits on a line with its own text, and untouched lines survive', () => {
    const lineArb = fc.array(fc.constantFrom('a = 1', 'b = f(a)', 'c = b * 2', '', 'return c', '    x'), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(lineArb, fc.nat(), fc.nat(), fc.nat(), fc.nat(), fc.string({ maxLength: 12 }), (lines, a, b, ca, cb, insert) => {
        const l1 = a % lines.length;
        const l2 = l1 + (b % (lines.length - l1));
        const c1 = ca % (lines[l1].length + 1);
        const c2 = l1 === l2 ? c1 + (cb % (lines[l2].length - c1 + 1)) : cb % (lines[l2].length + 1);
        const change = { startLine: l1, startCharacter: c1, endLine: l2, endCharacter: c2, text: insert.replace(/\r/g, '') };
        const after = apply(lines, change);
        const all = lines.map((_, i) => i).filter((i) => lines[i].trim() !== '');
        const out = realign(hintsOf(lines, all), [change], (l) => after[l] ?? null);
        for (const h of out) assert.equal(after[h.line].trim(), h.code);
        const delta = (change.text.match(/\n/g) ?? []).length - (l2 - l1);
        for (const i of all) {
          if (i < l1) assert.ok(out.some((h) => h.line === i), `line ${i} above the edit survives`);
          if (i > l2) assert.ok(out.some((h) => h.line === i + delta), `line ${i} below the edit moves to ${i + delta}`);
        }
        assert.equal(new Set(out.map((h) => h.line)).size, out.length);
      }),
      { numRuns: 500 },
    );
  });
});
