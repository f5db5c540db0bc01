import * as assert from 'node:assert/strict';
import { matchScript, scoreSplit, renderSplitTable, selectManifests, type Label, type ManifestEntry, type ReportedFinding } from '../../../src/eval/accuracy';

const f = (code: string, line: number): ReportedFinding => ({ code, line });
const at = (xs: readonly ReportedFinding[]): string[] => xs.map((x) => `${x.code}@${x.line}`);

describe('accuracy matcher', () => {
  it('matches a finding anywhere in a label range, and only with the same code', () => {
    const labels: Label[] = [{ code: 'MH001', line: 10, endLine: 14 }, { code: 'MH009', line: 30 }];
    const m = matchScript(labels, [f('MH001', 12), f('MH009', 31), f('MH002', 12)]);
    assert.deepEqual(m.matched.map((x) => `${x.finding.code}@${x.finding.line}->${x.label.line}`), ['MH001@12->10']);
    assert.deepEqual(at(m.falsePositives), ['MH002@12', 'MH009@31']);
    assert.deepEqual(m.misses, [labels[1]]);
  });

  it('uses each label at most once: a second finding in a matched range is a duplicate, not a second match', () => {
    const labels: Label[] = [{ code: 'MH009', line: 71 }];
    const m = matchScript(labels, [f('MH009', 71), f('MH009', 71), f('MH009', 72)]);
    assert.equal(m.matched.length, 1);
    assert.deepEqual(at(m.duplicates), ['MH009@71']);
    assert.deepEqual(at(m.falsePositives), ['MH009@72']);
    assert.deepEqual(m.misses, []);
  });

  it('two labels on one line need two findings', () => {
    const labels: Label[] = [{ code: 'MH008', line: 5 }, { code: 'MH008', line: 5 }];
    const one = matchScript(labels, [f('MH008', 5)]);
    assert.equal(one.matched.length, 1);
    assert.equal(one.misses.length, 1);
    const two = matchScript(labels, [f('MH008', 5), f('MH008', 5)]);
    assert.equal(two.matched.length, 2);
    assert.equal(two.misses.length, 0);
  });

  it('assigns overlapping ranges so that as many findings as possible match', () => {
    // A finding at 12 could take either label; taking the wide one would leave the finding at 20 unmatched.
    const labels: Label[] = [{ code: 'MH001', line: 10, endLine: 25 }, { code: 'MH001', line: 12, endLine: 13 }];
    const m = matchScript(labels, [f('MH001', 12), f('MH001', 20)]);
    assert.equal(m.matched.length, 2);
    assert.deepEqual(m.falsePositives, []);
    assert.deepEqual(m.misses, []);
  });

  it('scores per rule, keeps unimplemented rules out of the headline and reports them with recall 0', () => {
    const entry = (id: string, repo: string, labels: Label[]): ManifestEntry => ({
      id, file: `scripts/${id}.py`, repo, path: 'x.py', commit: null, url: '', license: 'MIT', kind: 'research', split: 'dev', labels,
    });
    const entries = [
      entry('a', 'o/a', [{ code: 'MH001', line: 3 }, { code: 'MH010', line: 8 }]),
      entry('b', 'o/b', [{ code: 'MH001', line: 4 }]),
      entry('c', 'o/b', []),
    ];
    const matches = new Map([
      ['a', matchScript(entries[0].labels, [f('MH001', 3), f('MH002', 9)])],
      ['b', matchScript(entries[1].labels, [])],
      ['c', matchScript(entries[2].labels, [f('MH001', 1)])],
    ]);
    const s = scoreSplit(entries, matches, new Set(['MH001', 'MH002']));
    assert.equal(s.scripts, 3);
    assert.equal(s.repos, 2);
    const mh001 = s.rules.find((r) => r.code === 'MH001')!;
    assert.deepEqual([mh001.labels, mh001.truePositives, mh001.falsePositives, mh001.misses], [2, 1, 1, 1]);
    assert.equal(mh001.precision, 0.5);
    assert.equal(mh001.recall, 0.5);
    const mh002 = s.rules.find((r) => r.code === 'MH002')!;
    assert.equal(mh002.precision, 0);
    assert.equal(mh002.recall, null);
    assert.deepEqual([s.implemented.truePositives, s.implemented.falsePositives, s.implemented.misses], [1, 2, 1]);
    assert.deepEqual(s.pending.map((r) => [r.code, r.labels, r.recall]), [['MH010', 1, 0]]);
    assert.deepEqual([s.allRules.labels, s.allRules.truePositives], [3, 1]);
    const table = renderSplitTable(s);
    assert.match(table, /\| MH010 \(not implemented\) \| 1 \| 0 \| 0 \| 0 \| 1 \| – \| 0\.00 \|/);
    assert.match(table, /\| \*\*implemented rules\*\* \| 2 \| 1 \| 2 \| 0 \| 1 \| 0\.33 \| 0\.50 \|/);
  });
});

describe('accuracy manifest selection', () => {
  const dir = ['README.md', 'manifest-b.json', 'manifest-a.json', 'manifest-c.json', 'manifest-c.json.bak', '.gitignore'];

  it('measures every manifest, in file order, when none is named', () => {
    assert.deepEqual(selectManifests(dir, []), ['manifest-a.json', 'manifest-b.json', 'manifest-c.json']);
  });

  it('accepts a manifest by suffix, stem or file name, and measures it alone', () => {
    for (const name of ['c', 'manifest-c', 'manifest-c.json']) assert.deepEqual(selectManifests(dir, [name]), ['manifest-c.json']);
  });

  it('keeps file order and drops repeats when several are named', () => {
    assert.deepEqual(selectManifests(dir, ['c', 'a', 'manifest-c.json']), ['manifest-a.json', 'manifest-c.json']);
  });

  it('refuses a name that matches no manifest instead of measuring nothing', () => {
    assert.throws(() => selectManifests(dir, ['d']), /no manifest named "d" \(known: a, b, c\)/);
    assert.throws(() => selectManifests(dir, ['manifest-c.json.bak']), /no manifest named/);
  });
});
