// The index-driven walks (walkSplittingFunctions with `types`, nodesInScope) against plain tree walks
// written here as the reference: same nodes, same order, on every fixture and after edits that reuse
// (and shift) part of the tree.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { getLinter, seededRandom } from './harness';
import { NodeMemo } from '../../../src/lint/session';
import { walkSplittingFunctions, type FunctionSplitWalk } from '../../../src/lint/analysis/unitcache';
import { beforeInReverseWalk, nodesInScope, subtreeNodesOfType } from '../../../src/lint/analysis/scope-nodes';
import type { SourceFile, SyntaxNode } from '../../../src/lint/syntax';

const root = path.resolve(__dirname, '../../../..');

function pyFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => (e.isDirectory() ? pyFiles(path.join(dir, e.name)) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : []));
}

const DEFINITIONS = new Set(['function_definition', 'class_definition', 'decorated_definition']);

/** Reference: a pre-order walk of the scope's body (or the module's own code) that skips definitions. */
function walkedInScope(scope: SyntaxNode, types: ReadonlySet<string>): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const roots = scope.type === 'module' ? scope.children.filter((c) => !DEFINITIONS.has(c.type)) : scope.children.filter((c) => c.field === 'body');
  const stack = [...roots].reverse();
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (DEFINITIONS.has(n.type)) continue;
    if (types.has(n.type)) out.push(n);
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
  return out;
}

/** Reference: every node of the types in the subtree, in document (pre-)order. */
function walkedOfTypes(unit: SyntaxNode, types: ReadonlySet<string>): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const stack = [unit];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (types.has(n.type)) out.push(n);
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
  return out;
}

/** Reference: a stack walk pushing children in order (last child popped first) of the scope's subtree. */
function reverseWalked(file: SourceFile, scope: SyntaxNode, types: ReadonlySet<string>): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const stack = scope.type === 'module' ? file.root.children.filter((c) => !DEFINITIONS.has(c.type)) : [scope];
  while (stack.length > 0) {
    const n = stack.pop()!;
    for (const c of n.children) stack.push(c);
    if (types.has(n.type)) out.push(n);
  }
  return out;
}

/** A typed walk that records what it visits, function bodies merged at their place. */
function recording(types: readonly string[]): FunctionSplitWalk<SyntaxNode[]> {
  const wanted = new Set(types);
  return {
    order: 'document',
    types,
    fresh: () => [],
    merge: (acc, part) => {
      for (const n of part) acc.push(n);
    },
    visit: (n, acc) => {
      if (wanted.has(n.type)) acc.push(n);
    },
  };
}

const TYPE_SETS: readonly (readonly string[])[] = [['call'], ['function_definition', 'assignment'], ['call', 'assignment', 'augmented_assignment'], ['return_statement', 'yield'], ['identifier', 'attribute']];

function check(file: SourceFile, memos: readonly NodeMemo<SyntaxNode[]>[], where: string): void {
  for (const [k, types] of TYPE_SETS.entries()) {
    const set = new Set(types);
    for (const unit of file.root.children) {
      const got = walkSplittingFunctions(file, memos[k], '', unit, recording(types));
      assert.deepEqual(got.map((n) => `${n.type}@${n.start}`), walkedOfTypes(unit, set).map((n) => `${n.type}@${n.start}`), `${where}: typed walk of ${types.join(',')}`);
    }
    const scopes = [file.root, ...file.nodesOfType('function_definition')];
    for (const scope of scopes) {
      const got = nodesInScope(file, scope, set);
      const want = walkedInScope(scope, set);
      assert.equal(got.length, want.length, `${where}: nodesInScope ${types.join(',')} of ${scope.type}@${scope.start}`);
      got.forEach((n, i) => assert.equal(n, want[i], `${where}: nodesInScope ${types.join(',')} #${i}`));
      const subtree = types.flatMap((t) => subtreeNodesOfType(file, scope, t)).sort(beforeInReverseWalk);
      const walked = reverseWalked(file, scope, set);
      assert.deepEqual(subtree.map((n) => `${n.type}@${n.start}`), walked.map((n) => `${n.type}@${n.start}`), `${where}: subtree of ${scope.type}@${scope.start}`);
      subtree.forEach((n, i) => assert.equal(n, walked[i]));
    }
  }
}

describe('index-driven walks match tree walks', function () {
  this.timeout(300_000);
  const files = [...pyFiles(path.join(root, 'test/fixtures')), ...pyFiles(path.join(root, 'examples'))];

  it('on every fixture and example', async () => {
    const linter = await getLinter();
    assert.ok(files.length > 50, `fixtures found: ${files.length}`);
    for (const f of files) {
      const doc = linter.open(fs.readFileSync(f, 'utf8'));
      try {
        check(doc.source, TYPE_SETS.map((_, k) => new NodeMemo<SyntaxNode[]>(`test.walk${k}`)), path.relative(root, f));
      } finally {
        doc.dispose();
      }
    }
  });

  it('after edits that reuse part of the tree (memoised function parts kept across versions)', async () => {
    const linter = await getLinter();
    const random = seededRandom(12);
    const snippets = ['x = f(y)\n', '    z = g(h(1))\n', 'def k(a):\n    return a(b)\n', ')', 'y', '\n', 'class C:\n    def m(self):\n        self.w = q()\n'];
    for (const f of files.filter((_, i) => i % 6 === 0)) {
      const text = fs.readFileSync(f, 'utf8');
      const doc = linter.open(text);
      const memos = TYPE_SETS.map((_, k) => new NodeMemo<SyntaxNode[]>(`test.walk${k}`));
      try {
        check(doc.source, memos, path.relative(root, f));
        for (let step = 0; step < 4; step++) {
          const at = Math.floor(random() * (doc.text.length + 1));
          const snippet = snippets[Math.floor(random() * snippets.length)];
          const remove = random() < 0.3 ? Math.min(3, doc.text.length - at) : 0;
          doc.update([{ rangeOffset: at, rangeLength: remove, text: snippet }]);
          check(doc.source, memos, `${path.relative(root, f)} after edit ${step}`);
        }
      } finally {
        doc.dispose();
      }
    }
  });
});
