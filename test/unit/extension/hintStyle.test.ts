import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hintsForFile, hoverMarkdown } from '../../../src/extension/hints/model';
import { HINT_COLORS, hintStyle, PREDICTED_HINT_COLOR } from '../../../src/extension/hints/style';
import { counters, FILE, line, predictedReport, report } from './reportFixture';

const MiB = 1024 ** 2;

describe('extension/hintStyle', () => {
  it('colours measured hints by size, predicted ones in their own colour (large ones bold)', () => {
    const measured = hintsForFile(report({ lines: [line(4, 'y = f(x)', { inclusive: counters(3 * 300 * MiB, 0, 300 * MiB) })] }), [FILE]);
    assert.deepEqual(measured.map((h) => [h.predicted, h.size, hintStyle(h)]), [[false, 'large', { color: 'memhint.hint.large', fontWeight: 'normal' }]]);
    const predicted = hintsForFile(predictedReport(), [FILE]);
    assert.equal(predicted.length, 1);
    assert.equal(predicted[0].predicted, true);
    assert.deepEqual(hintStyle(predicted[0]), { color: PREDICTED_HINT_COLOR, fontWeight: 'normal' });
    assert.deepEqual(hintStyle({ ...predicted[0], size: 'large' }), { color: PREDICTED_HINT_COLOR, fontWeight: 'bold' });
  });

  it('stale hints are quiet whatever they are', () => {
    for (const predicted of [false, true]) {
      assert.deepEqual(hintStyle({ size: 'large', predicted, stale: true }), { color: HINT_COLORS.small, fontWeight: 'normal' });
    }
  });

  it('every colour it uses is contributed, for dark, light and both high-contrast themes', () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../../../package.json'), 'utf8')) as { contributes: { colors: { id: string; defaults: Record<string, string> }[] } };
    const contributed = new Map(manifest.contributes.colors.map((c) => [c.id, c.defaults]));
    for (const id of [...Object.values(HINT_COLORS), PREDICTED_HINT_COLOR]) {
      const defaults = contributed.get(id);
      assert.ok(defaults, `${id} is in contributes.colors`);
      for (const theme of ['dark', 'light', 'highContrast', 'highContrastLight']) assert.match(defaults[theme] ?? '', /^#[0-9a-f]{6}$/i, `${id} ${theme}`);
    }
    // Apart from every size colour, in every theme kind.
    for (const theme of ['dark', 'light', 'highContrast', 'highContrastLight']) {
      const predicted = contributed.get(PREDICTED_HINT_COLOR)![theme];
      for (const id of Object.values(HINT_COLORS)) assert.notEqual(contributed.get(id)![theme].toLowerCase(), predicted.toLowerCase(), `${id} vs predicted in ${theme}`);
    }
  });

  it('the hover says whether the figures were predicted or measured', () => {
    const r = report({ lines: [line(4, 'y = f(x)', { inclusive: counters(3 * 300 * MiB, 0, 300 * MiB) })] });
    assert.match(hoverMarkdown(hintsForFile(r, [FILE])[0], r), /\*\*measured\*\* on the cpu backend/);
    const p = predictedReport();
    const md = hoverMarkdown(hintsForFile(p, [FILE])[0], p);
    assert.match(md, /\*\*predicted\*\* for CUDA on meta tensors, not measured/);
    assert.doesNotMatch(md, /\*\*measured\*\*/);
  });
});
