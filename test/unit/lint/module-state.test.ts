// src/lint keeps no module-level mutable state: every cache, index and memo lives in the document's
// AnalysisSession (see src/lint/session.ts). Built on the same analysis as scripts/count-module-state.mjs.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.resolve(__dirname, '../../../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { moduleState } = require(path.join(root, 'scripts/module-state.cjs')) as {
  moduleState: (files: string[], options?: { root?: string }) => { file: string; line: number; name: string; kind: string }[];
};

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** The one allowed exception: web-tree-sitter's wasm runtime is process-wide by its own design. */
const ALLOWED = ['src/lint/parser.ts runtime'];

describe('module-level state under src/lint', function () {
  this.timeout(120_000);

  it('finds none besides the wasm runtime', () => {
    const found = moduleState(tsFiles(path.join(root, 'src/lint')), { root });
    assert.deepEqual(
      found.map((f) => `${f.file.split(path.sep).join('/')} ${f.name}`),
      ALLOWED,
      found.map((f) => `${f.file}:${f.line} ${f.name}: ${f.kind}`).join('\n'),
    );
  });

  it('the analysis sees caches, mutable bindings and stateful instances, and not immutable tables', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-state-'));
    try {
      const file = path.join(dir, 'sample.ts');
      fs.writeFileSync(
        file,
        [
          "const NAMES = new Set(['a', 'b']);",
          'const cache = new Map<string, number>();',
          'let counter = 0;',
          'const recent: string[] = [];',
          'class Lru { private readonly entries = new Map<string, number>(); get(k: string): number | undefined { return this.entries.get(k); } }',
          'class Descriptor { constructor(readonly name: string) {} }',
          "const lru = new Lru();",
          "const memo = new Descriptor('x');",
          'const pair = [new Lru(), new Lru()];',
          'export function f(k: string): number { recent.push(k); cache.set(k, ++counter); return NAMES.has(k) ? (lru.get(k) ?? 0) : memo.name.length + pair.length; }',
        ].join('\n'),
      );
      const found = moduleState([file], { root: dir }).map((f) => f.name);
      assert.deepEqual(found.sort(), ['cache', 'counter', 'lru', 'pair', 'recent']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
