// How a hint looks: the theme colour (by size for measured figures, one colour of its own for predicted
// ones) and the weight. Predicted figures are styled apart so that a glance never reads an estimate as a
// measurement; within them a large line is bold, so the size still shows. Pure; no `vscode` here.
import type { HintSize } from './model';

/** Theme colour ids contributed in package.json (`contributes.colors`). */
export const HINT_COLORS: Readonly<Record<HintSize, string>> = {
  small: 'memhint.hint.small',
  medium: 'memhint.hint.medium',
  large: 'memhint.hint.large',
};
export const PREDICTED_HINT_COLOR = 'memhint.predictedHintForeground';

export interface HintStyle {
  /** A theme colour id. */
  readonly color: string;
  readonly fontWeight: 'normal' | 'bold';
}

/**
 * A stale hint (an earlier run's figures, a later run failed) gets the quiet colour whatever it is,
 * predicted or not: neither its size nor its kind should draw the eye.
 */
export function hintStyle(hint: { readonly size: HintSize; readonly predicted: boolean; readonly stale: boolean }): HintStyle {
  if (hint.stale) return { color: HINT_COLORS.small, fontWeight: 'normal' };
  if (hint.predicted) return { color: PREDICTED_HINT_COLOR, fontWeight: hint.size === 'large' ? 'bold' : 'normal' };
  return { color: HINT_COLORS[hint.size], fontWeight: 'normal' };
}
