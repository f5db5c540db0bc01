// The dotted keys that name a network in a file (`self.model`, `netG`, `model.encoder`), and the network a
// `requires_grad` switch applies to. Purely syntactic (a node's own text and its enclosing loops), so the
// per-statement walks of models.ts and grad-toggle-sites.ts can use them without the model facts.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { positionalArguments } from './context';

/** `self.model`, `model`, `model.encoder`: the dotted text of an identifier/attribute chain, or null. */
export function keyOf(file: SourceFile, node: SyntaxNode | null): string | null {
  if (node === null) return null;
  if (node.type === 'identifier') return file.textOf(node);
  if (node.type !== 'attribute') return null;
  const object = childByField(node, 'object');
  const attr = childByField(node, 'attribute');
  if (object === null || attr === null) return null;
  const base = keyOf(file, object);
  return base === null ? null : `${base}.${file.textOf(attr)}`;
}

/** The module a `requires_grad_(False)` receiver / `.requires_grad = False` object freezes (`p` over `X.parameters()` freezes X). */
export function frozenTarget(file: SourceFile, object: SyntaxNode | null): string | null {
  if (object === null) return null;
  if (object.type === 'identifier') {
    // A loop variable over `X.parameters()`: freezing it freezes X.
    const name = file.textOf(object);
    for (let p = object.parent; p !== null; p = p.parent) {
      if (p.type === 'function_definition') break;
      if (p.type !== 'for_statement') continue;
      const left = childByField(p, 'left');
      const right = childByField(p, 'right');
      if (left === null || right === null || !new RegExp(`\\b${name}\\b`).test(file.textOf(left))) continue;
      let it: SyntaxNode | null = right;
      if (it.type === 'call' && /^(enumerate|list|tuple)$/.test(file.textOf(childByField(it, 'function') ?? it))) it = positionalArguments(it)[0] ?? null;
      if (it?.type !== 'call') return null;
      const fn = childByField(it, 'function');
      if (fn?.type !== 'attribute') return null;
      const attr = childByField(fn, 'attribute');
      if (attr === null || !/^(parameters|named_parameters)$/.test(file.textOf(attr))) return null;
      return keyOf(file, childByField(fn, 'object'));
    }
  }
  return keyOf(file, object);
}
