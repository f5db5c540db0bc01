// Entries of a dict read by a literal key (`best["epoch"]`, `state['loss']`): which definitions of the dict
// can have put a value under that key. A dict that holds a loss beside an int epoch or a float accuracy
// holds history only under the loss's key; reading another key reads a number (issue #13, the fix audit's
// `.detach()` on `best['epoch']`). Used by flow.ts to taint per entry, not per container.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';

/** The key a subscript index names when it is a plain literal (`"loss"`, `'loss'`, `0`), else null. */
export function literalKeyOf(file: SourceFile, index: SyntaxNode | null): string | null {
  if (index === null) return null;
  if (index.type === 'integer') return file.textOf(index);
  if (index.type !== 'string') return null;
  // f-strings and implicit concatenations name a key computed at run time.
  const m = /^([rRuU]?)(['"])([^'"{}\\]*)\2$/.exec(file.textOf(index));
  return m === null ? null : `'${m[3]}'`;
}

/**
 * What a definition of the dict puts under `key`:
 * - `{'epoch': 0, 'loss': loss}`: the pair's value, or `'absent'` when the literal has no such key and no `**`;
 * - `d['loss'] = loss` (a store through another literal key): `'absent'`; through the same key: the stored value;
 * - anything else (a store by a computed key, `d.update(...)`, a call's result): `'whole'`, the definition as a whole.
 */
export function entryWrittenBy(file: SourceFile, kind: string, stmt: SyntaxNode, value: SyntaxNode | null, container: string, key: string): SyntaxNode | 'absent' | 'whole' {
  if (kind === 'assign' && value?.type === 'dictionary') {
    for (const pair of namedChildren(value)) {
      if (pair.type === 'dictionary_splat') return 'whole';
      if (pair.type !== 'pair') continue;
      if (literalKeyOf(file, childByField(pair, 'key')) === key) return childByField(pair, 'value') ?? 'whole';
    }
    return 'absent';
  }
  if (kind !== 'store') return 'whole';
  const n = stmt.type === 'expression_statement' ? namedChildren(stmt)[0] : stmt;
  if (n === undefined || (n.type !== 'assignment' && n.type !== 'augmented_assignment')) return 'whole';
  const left = childByField(n, 'left');
  if (left?.type !== 'subscript' || file.textOf(childByField(left, 'value') ?? left) !== container) return 'whole';
  const written = literalKeyOf(file, childByField(left, 'subscript'));
  if (written === null) return 'whole';
  return written === key ? 'whole' : 'absent';
}
