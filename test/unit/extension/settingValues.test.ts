import * as assert from 'node:assert/strict';
import { SettingValues } from '../../../src/extension/settingValues';

/** Reads from a settings.json-like object, collecting problems. */
function reader(settings: Record<string, unknown>): { values: SettingValues; problems: string[] } {
  const problems: string[] = [];
  return { values: new SettingValues((key) => settings[key], 'memhint', problems), problems };
}

describe('setting values: half-written settings.json', () => {
  it('valid values pass through without problems', () => {
    const { values, problems } = reader({ 'lint.enable': false, targetTorch: ' 2.1 ', 'lint.delay': 300, 'profile.backend': 'cpu', 'lint.ignore': ['MH003 '] });
    assert.equal(values.boolean('lint.enable', true), false);
    assert.equal(values.string('targetTorch'), '2.1');
    assert.equal(values.integer('lint.delay', 150, 0, 5000), 300);
    assert.equal(values.choice('profile.backend', ['auto', 'cpu', 'cuda'], 'auto'), 'cpu');
    assert.deepEqual(values.stringList('lint.ignore'), ['MH003']);
    assert.deepEqual(problems, []);
  });

  it('unset and JSON null read as the default, silently', () => {
    const { values, problems } = reader({ 'lint.select': null, 'hints.thresholds': null });
    assert.equal(values.boolean('lint.enable', true), true);
    assert.equal(values.string('python'), '');
    assert.equal(values.stringList('lint.select'), null);
    assert.deepEqual(values.object('hints.thresholds'), {});
    assert.deepEqual(problems, []);
  });

  it('a wrong type falls back to the default and says which setting, what it holds and what is used', () => {
    const { values, problems } = reader({
      'lint.enable': 'false', // a string "false" is truthy: reading it as-is would lint although the user meant off
      targetTorch: 2.1, // 2.10 written as a number reads as 2.1: refuse rather than guess
      'lint.delay': '300',
      'profile.backend': 'gpu',
      'lint.ignore': 'MH003',
      'hints.thresholds': '64 MiB',
    });
    assert.equal(values.boolean('lint.enable', true), true);
    assert.equal(values.string('targetTorch'), '');
    assert.equal(values.integer('lint.delay', 150, 0, 5000), 150);
    assert.equal(values.choice('profile.backend', ['auto', 'cpu', 'cuda'], 'auto'), 'auto');
    assert.equal(values.stringList('lint.ignore'), null);
    assert.deepEqual(values.object('hints.thresholds'), {});
    assert.deepEqual(problems, [
      'memhint.lint.enable is "false", not true or false; using true',
      'memhint.targetTorch is 2.1, not text (in quotes); using no value',
      'memhint.lint.delay is "300", not a number; using 150',
      'memhint.profile.backend is "gpu", not one of "auto", "cpu", "cuda"; using "auto"',
      'memhint.lint.ignore is "MH003", not a list such as ["MH003"]; using no value',
      'memhint.hints.thresholds is "64 MiB", not an object such as {"medium": "64 MiB"}; using the defaults',
    ]);
  });

  it('numbers out of range are clamped and fractions rounded, with a note', () => {
    const { values, problems } = reader({ 'lint.delay': 99_999, 'profile.steps': 4.6, 'profile.warmup': Number.NaN });
    assert.equal(values.integer('lint.delay', 150, 0, 5000), 5000);
    assert.equal(values.integer('profile.steps', 3, 1, 1000), 5);
    assert.equal(values.integer('profile.warmup', 1, 0, 1000), 1);
    assert.equal(problems.length, 3);
    assert.match(problems[0], /memhint\.lint\.delay is 99999; using 5000 \(a whole number from 0 to 5000\)/);
  });

  it('a list keeps its text entries and names the others', () => {
    const { values, problems } = reader({ 'lint.select': ['MH001', 3, null, ' '] });
    assert.deepEqual(values.stringList('lint.select'), ['MH001']);
    assert.deepEqual(problems, ['memhint.lint.select has entries that are not text (3, null); they are ignored']);
  });
});
