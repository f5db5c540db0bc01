// The noqa injection grammar, tokenized by VS Code's own TextMate engine over VS Code's Python grammar
// (both from the code-server that scripts/setup-e2e.sh installs; skipped with a reason where it is absent).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(__dirname, '../../../..');
const grammarPath = path.join(root, 'syntaxes/noqa.injection.json');
const vscodeDir = path.join(root, '.e2e/tools/code-server/node_modules/code-server/lib/vscode');

interface Token {
  text: string;
  scopes: string[];
}

describe('syntaxes/noqa.injection.json', () => {
  const grammar = JSON.parse(fs.readFileSync(grammarPath, 'utf8')) as { scopeName: string; injectionSelector: string };

  it('is the grammar package.json contributes, injected into Python comments', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { contributes: { grammars: { scopeName: string; path: string; injectTo: string[] }[] } };
    const entry = pkg.contributes.grammars.find((g) => g.scopeName === grammar.scopeName);
    assert.ok(entry);
    assert.equal(path.resolve(root, entry.path), grammarPath);
    assert.deepEqual(entry.injectTo, ['source.python']);
    assert.match(grammar.injectionSelector, /comment\.line\.number-sign\.python/);
  });

  it('highlights `noqa` and the codes in comments only', async function () {
    if (!fs.existsSync(path.join(vscodeDir, 'node_modules/vscode-textmate'))) this.skip(); // needs bash scripts/setup-e2e.sh
    /* eslint-disable @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return */
    const tm = require(path.join(vscodeDir, 'node_modules/vscode-textmate'));
    const onig = require(path.join(vscodeDir, 'node_modules/vscode-oniguruma'));
    await onig.loadWASM(fs.readFileSync(path.join(vscodeDir, 'node_modules/vscode-oniguruma/release/onig.wasm')).buffer);
    const registry = new tm.Registry({
      onigLib: Promise.resolve({ createOnigScanner: (p: string[]) => new onig.OnigScanner(p), createOnigString: (s: string) => new onig.OnigString(s) }),
      loadGrammar: (scope: string) => {
        if (scope === 'source.python') return tm.parseRawGrammar(fs.readFileSync(path.join(vscodeDir, 'extensions/python/syntaxes/MagicPython.tmLanguage.json'), 'utf8'), 'python.json');
        if (scope === grammar.scopeName) return tm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), 'noqa.json');
        return null;
      },
      getInjections: (scope: string) => (scope === 'source.python' ? [grammar.scopeName] : []),
    });
    const python = await registry.loadGrammar('source.python');
    const tokenize = (line: string): Token[] =>
      python.tokenizeLine(line, tm.INITIAL).tokens.map((t: { startIndex: number; endIndex: number; scopes: string[] }) => ({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes }));
    /* eslint-enable */
    const scopeOf = (tokens: Token[], text: string): string | undefined => tokens.find((t) => t.text === text)?.scopes.at(-1);

    const line = tokenize('total += loss  # noqa: MH002, MH005');
    assert.equal(scopeOf(line, 'noqa'), 'keyword.other.noqa.memhint');
    assert.equal(scopeOf(line, 'MH002'), 'constant.other.rule-code.memhint');
    assert.equal(scopeOf(line, 'MH005'), 'constant.other.rule-code.memhint');
    const mixed = tokenize('y = 2  # running sum  # NOQA:MH001 retained-graph');
    assert.equal(scopeOf(mixed, 'NOQA'), 'keyword.other.noqa.memhint');
    assert.equal(scopeOf(mixed, 'retained-graph'), 'constant.other.rule-name.memhint');
    const inString = tokenize('s = "# noqa: MH002"');
    assert.ok(inString.every((t) => !t.scopes.some((s) => s.endsWith('.memhint'))), 'not inside strings');
    const prose = tokenize('# we talk about noqa-style comments here');
    assert.ok(!prose.some((t) => t.scopes.some((s) => s.endsWith('.memhint'))), 'only a `# noqa` directive, as the linter reads it');
  });
});
