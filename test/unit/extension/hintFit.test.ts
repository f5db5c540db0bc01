import * as assert from 'node:assert/strict';
import { clip } from '../../../src/extension/hints/model';
import { DEFAULT_GAP_COLUMNS, endColumn, hintBudget, MIN_FITTED_LENGTH } from '../../../src/extension/hints/fit';

describe('extension/hintFit', () => {
  it('ends a hint by the column: the line, the gap and the hint fit within it', () => {
    // A 50-column line, a 4-column gap, column 80: 26 characters of hint.
    assert.equal(hintBudget(80, 80, 50, DEFAULT_GAP_COLUMNS), 26);
    const text = 'x4 +48 MiB, peak 24 MiB/call, backward 96 MiB';
    const fitted = clip(text, hintBudget(80, 80, 50, DEFAULT_GAP_COLUMNS));
    assert.equal(fitted.length, 26);
    assert.ok(fitted.endsWith('…'));
    assert.ok(50 + DEFAULT_GAP_COLUMNS + fitted.length <= 80, 'ends at or before column 80');
  });

  it('never makes a hint longer than maxLength; a line with no room left keeps only an ellipsis', () => {
    assert.equal(hintBudget(14, 120, 20, 2), 14, 'maxLength is the tighter limit');
    assert.equal(hintBudget(80, 80, 79, 4), MIN_FITTED_LENGTH);
    assert.equal(clip('x4 +48 MiB, peak 24 MiB/call', MIN_FITTED_LENGTH), '…', 'the hover has the figures');
    assert.equal(clip('x4 +48 MiB', 2), 'x…');
    assert.equal(hintBudget(0, 80, 40, 4), 36, 'no maxLength: the column alone');
  });

  it('has no limit without an end column', () => {
    assert.equal(hintBudget(80, 0, 200, 4), 80);
    assert.equal(hintBudget(0, 0, 200, 4), 0);
  });

  it('takes memhint.hints.maxColumn first, else the column the editor wraps at, never the viewport', () => {
    assert.equal(endColumn(100, { wordWrap: 'wordWrapColumn', wordWrapColumn: 80 }), 100);
    assert.equal(endColumn(0, { wordWrap: 'wordWrapColumn', wordWrapColumn: 88 }), 88);
    assert.equal(endColumn(0, { wordWrap: 'bounded', wordWrapColumn: 120 }), 120);
    // "on" wraps at the viewport, whose width an extension cannot know; "off" does not wrap.
    assert.equal(endColumn(0, { wordWrap: 'on', wordWrapColumn: 80 }), 0);
    assert.equal(endColumn(0, { wordWrap: 'off', wordWrapColumn: 80 }), 0);
  });
});
