// exclude / per-file-ignores globs: gitignore-like semantics, matched in linear time.
import * as assert from 'node:assert/strict';
import fc from 'fast-check';
import { compileGlob, type GlobStats } from '../../../src/lint/glob';

/** The former translation to a RegExp (exponential on some patterns): the oracle for small inputs. */
function oracle(glob: string): RegExp {
  let re = '';
  const g = glob.replace(/^\.\//, '');
  for (let i = 0; i < g.length; i++) {
    const ch = g[i];
    if (ch === '*') {
      if (g[i + 1] === '*') {
        i++;
        if (g[i + 1] === '/') {
          i++;
          re += '(?:.*/)?';
        } else re += '.*';
      } else re += '[^/]*';
    } else if (ch === '?') re += '[^/]';
    else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  const anchored = g.includes('/') ? `^${re}` : `^(?:.*/)?${re}`;
  return new RegExp(`${anchored}(?:/.*)?$`);
}

describe('glob matcher', () => {
  it('keeps the documented gitignore-like semantics', () => {
    const cases: Array<[string, string, boolean]> = [
      ['tests/*.py', 'tests/a.py', true],
      ['tests/*.py', 'tests/x/a.py', false],
      ['**/test_*.py', 'a/b/test_x.py', true],
      ['**/test_*.py', 'test_x.py', true],
      ['scripts', 'scripts/run.py', true],
      ['scripts', 'src/scripts/run.py', true],
      ['scripts', 'scriptsx/run.py', false],
      ['*.py', 'deep/down/file.py', true],
      ['third_party/**', 'third_party/a/b.py', true],
      ['third_party/**', 'src/third_party/a.py', false],
      ['./legacy/*.py', 'legacy/a.py', true],
      ['a?c.py', 'abc.py', true],
      ['a?c.py', 'a/c.py', false],
      ['src/**/gen_*.py', 'src/gen_a.py', true],
      ['src/**/gen_*.py', 'src/x/y/gen_a.py', true],
      ['a.py', 'a_py', false], // '.' is literal
      ['[ab].py', '[ab].py', true], // no character classes: literal
      ['[ab].py', 'a.py', false],
    ];
    for (const [glob, p, want] of cases) assert.equal(compileGlob(glob).test(p), want, `${glob} vs ${p}`);
  });

  it('agrees with the former RegExp translation on random small globs and paths', () => {
    const globChar = fc.constantFrom('a', 'b', '/', '*', '**', '**/', '?', '.');
    const pathChar = fc.constantFrom('a', 'b', '/', '.');
    fc.assert(
      fc.property(fc.array(globChar, { maxLength: 7 }), fc.array(pathChar, { maxLength: 10 }), (g, p) => {
        const glob = g.join('');
        const path = p.join('');
        assert.equal(compileGlob(glob).test(path), oracle(glob).test(path), `${glob} vs ${path}`);
      }),
      { numRuns: 3000 },
    );
  });

  it('matches *a*a*a*a*a*a*a*a*a*a*a*a*b in linear steps (a RegExp backtracks for minutes on this)', () => {
    const glob = '*a*a*a*a*a*a*a*a*a*a*a*a*b';
    const matcher = compileGlob(glob);
    const steps = (length: number): number => {
      const stats: GlobStats = { steps: 0 };
      assert.equal(matcher.test('a'.repeat(length) + '.py', stats), false);
      return stats.steps;
    };
    const tokens = glob.length + 1; // at most one token per character, plus the implicit leading **/
    const s1 = steps(1000);
    const s2 = steps(2000);
    // Each path character visits each live state once and closes each new state once.
    assert.ok(s1 <= 2 * (tokens + 2) * 1004, `steps ${s1}`);
    assert.ok(s2 <= 2.1 * s1, `steps grew from ${s1} to ${s2} for twice the input`);
    assert.equal(matcher.test('aaaaaaaaaaaaab'), true);
  });
});
