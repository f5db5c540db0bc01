// How long a hint may be so that it ends by a column. VS Code tells an extension nothing about an editor's
// width (no pixel or column width in the API; `visibleRanges` are lines), and an end-of-line decoration's
// text is a CSS pseudo-element that neither wraps with `editor.wordWrap` nor can be sized to the editor
// (its containing block is the line, as wide as the longest line, hint included). So the only edge a hint
// can be fitted to is a column: `memhint.hints.maxColumn`, or the column the user told the editor to wrap
// at (`editor.wordWrapColumn` with `editor.wordWrap` "wordWrapColumn" or "bounded"). No `vscode` here.

/**
 * A hint shortened to fit keeps at least this: an ellipsis, which says that the line has a hint (the hover
 * has every figure) without running past the column on a line that leaves no room.
 */
export const MIN_FITTED_LENGTH = 1;

/**
 * Columns the default gap before a hint takes: the decoration's left margin is 2em, and a monospace glyph
 * is about 0.6em wide (3.3 columns), rounded up so a fitted hint does not overshoot its column.
 */
export const DEFAULT_GAP_COLUMNS = 4;

export interface EditorWrap {
  /** `editor.wordWrap`: "off", "on", "wordWrapColumn" or "bounded". */
  readonly wordWrap: string;
  /** `editor.wordWrapColumn`. */
  readonly wordWrapColumn: number;
}

/**
 * The last column a hint may reach: `maxColumn` when set, else the editor's wrap column when the editor
 * wraps at one (with "on" it wraps at the viewport, whose width is not known); 0: no limit.
 */
export function endColumn(maxColumn: number, wrap: EditorWrap): number {
  if (maxColumn > 0) return maxColumn;
  if ((wrap.wordWrap === 'wordWrapColumn' || wrap.wordWrap === 'bounded') && wrap.wordWrapColumn > 0) return wrap.wordWrapColumn;
  return 0;
}

/**
 * Characters a hint may take after a line `lineWidth` columns wide and a `gap`-column margin so that it
 * ends by column `end` (1-based; 0: no limit), never more than `maxLength` (0: no limit) and never fewer
 * than MIN_FITTED_LENGTH (an ellipsis alone). 0 means no limit at all.
 */
export function hintBudget(maxLength: number, end: number, lineWidth: number, gap: number): number {
  if (end <= 0) return maxLength;
  const room = Math.max(MIN_FITTED_LENGTH, end - lineWidth - gap);
  return maxLength > 0 ? Math.min(maxLength, room) : room;
}
