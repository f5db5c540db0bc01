// Precision test on realistic training code (test/fixtures/corpus): every file is linted with all rules and
// the findings must be exactly its `# expect:` annotations, which mark only genuine memory problems.
// A failure prints, per file, the unexpected findings (false positives) and the missing ones (false
// negatives) with the source line, and an aggregate per-rule table at the end of the run.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expectations, lint, summarize } from './harness';

const root = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'corpus');
const python = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

interface Tally {
  truePositives: number;
  falsePositives: string[];
  falseNegatives: string[];
}

function corpusFiles(): string[] {
  return fs.existsSync(root) ? fs.readdirSync(root).filter((f) => f.endsWith('.py')).sort() : [];
}

/** Elements of `a` not in `b`, as a multiset difference. */
function minus(a: readonly string[], b: readonly string[]): string[] {
  const left = [...b];
  return a.filter((x) => {
    const i = left.indexOf(x);
    if (i < 0) return true;
    left.splice(i, 1);
    return false;
  });
}

function describeEntry(file: string, lines: readonly string[], entry: string): string {
  const [line, code] = entry.split(':');
  return `  ${code} ${file}:${line}  ${lines[Number(line) - 1]?.trim() ?? ''}`;
}

describe('lint corpus (precision on realistic training code)', () => {
  const files = corpusFiles();
  const tallies = new Map<string, Tally>();
  const tally = (code: string): Tally => {
    let t = tallies.get(code);
    if (!t) tallies.set(code, (t = { truePositives: 0, falsePositives: [], falseNegatives: [] }));
    return t;
  };

  it('has a corpus of at least 20 files and 6,000 lines', () => {
    const lines = files.reduce((n, f) => n + fs.readFileSync(path.join(root, f), 'utf8').split('\n').length, 0);
    assert.ok(files.length >= 20, `only ${files.length} corpus files`);
    assert.ok(lines >= 6000, `only ${lines} corpus lines`);
  });

  it('is valid Python 3 (ast.parse by the test interpreter)', function () {
    if (!fs.existsSync(python)) this.skip();
    const script = 'import ast, sys\nfor f in sys.argv[1:]:\n    ast.parse(open(f, encoding="utf-8").read(), f)\n';
    execFileSync(python, ['-c', script, ...files.map((f) => path.join(root, f))], { stdio: 'pipe' });
  });

  for (const file of files) {
    it(file, async () => {
      const source = fs.readFileSync(path.join(root, file), 'utf8');
      const lines = source.split(/\r?\n/);
      // Per-line comparison: several findings of one code on one line count as one location.
      const actual = [...new Set(summarize(source, await lint(source)))].sort();
      const expected = [...new Set(expectations(source))].sort();
      const unexpected = minus(actual, expected);
      const missing = minus(expected, actual);
      for (const e of minus(actual, unexpected)) tally(e.split(':')[1]).truePositives++;
      for (const e of unexpected) tally(e.split(':')[1]).falsePositives.push(`${file}:${e.split(':')[0]}`);
      for (const e of missing) tally(e.split(':')[1]).falseNegatives.push(`${file}:${e.split(':')[0]}`);
      if (unexpected.length || missing.length) {
        const report = [
          ...(unexpected.length ? ['unexpected (false positives):', ...unexpected.map((e) => describeEntry(file, lines, e))] : []),
          ...(missing.length ? ['missing (false negatives):', ...missing.map((e) => describeEntry(file, lines, e))] : []),
        ].join('\n');
        assert.fail(`${file}\n${report}`);
      }
    });
  }

  after(() => {
    if (tallies.size === 0) return;
    const pct = (num: number, den: number): string => (den === 0 ? '  n/a' : `${((100 * num) / den).toFixed(0).padStart(4)}%`);
    const rows = [...tallies.entries()].sort(([a], [b]) => a.localeCompare(b));
    const text = rows
      .map(([code, t]) => {
        const tp = t.truePositives;
        const fp = t.falsePositives.length;
        const fn = t.falseNegatives.length;
        const head = `  ${code}: TP ${tp}, FP ${fp}, FN ${fn}; precision ${pct(tp, tp + fp)}, recall ${pct(tp, tp + fn)}`;
        const details = [
          ...t.falsePositives.map((where) => `      FP ${where}`),
          ...t.falseNegatives.map((where) => `      FN ${where}`),
        ];
        return [head, ...details].join('\n');
      })
      .join('\n');
    process.stdout.write(`\ncorpus precision by rule (per line):\n${text}\n`);
  });
});
