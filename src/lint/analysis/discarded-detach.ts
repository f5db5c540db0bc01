// `s.detach()` as a statement of its own, its result dropped (d2l's `for s in state: s.detach()`): `.detach()`
// returns a new tensor and leaves `s` as it was, so the state the author meant to cut keeps its history.
// (`s.detach_()` is the in-place form.) MH004 reads it as the reason for a `retain_graph=True` in the same loop.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { keyOf } from './keys';

/**
 * The keys whose `.detach()` a statement inside `body` discards: the receiver itself, or, for a receiver that
 * is the variable of a `for` over a name (`for s in state:`), that name. Nested functions are not looked into.
 */
export function discardedDetaches(file: SourceFile, body: SyntaxNode): Set<string> {
  const out = new Set<string>();
  const stack = [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') continue;
    if (n.type === 'expression_statement') {
      const call = namedChildren(n)[0];
      const fn = call?.type === 'call' ? childByField(call, 'function') : null;
      if (fn?.type === 'attribute' && file.textOf(childByField(fn, 'attribute') ?? fn) === 'detach' && namedChildren(n).length === 1) {
        const receiver = childByField(fn, 'object');
        const key = keyOf(file, receiver);
        if (key !== null) out.add(iteratedName(file, receiver!, key) ?? key);
      }
      continue;
    }
    stack.push(...namedChildren(n));
  }
  return out;
}

/** `s` bound by an enclosing `for s in state:` -> `state` (the container whose items are detached). */
function iteratedName(file: SourceFile, node: SyntaxNode, key: string): string | null {
  for (let p = node.parent; p !== null && p.type !== 'function_definition' && p.type !== 'module'; p = p.parent) {
    if (p.type !== 'for_statement') continue;
    const left = childByField(p, 'left');
    if (left === null || file.textOf(left) !== key) continue;
    return keyOf(file, childByField(p, 'right'));
  }
  return null;
}
