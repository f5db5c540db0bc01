// Which forward passes feed a backward pass in their scope: following the data that a backward
// (or accelerator.backward, autograd.grad...) consumes back to the forward calls that produced it,
// without crossing `.detach()`, `.item()` and other history-free values. A forward in eval mode whose
// output is backpropagated (an attack, saliency, test-time adaptation) legitimately records a graph; a
// frozen teacher whose logits are only used detached does not need one.
import type { SourceFile, SyntaxNode } from '../syntax';
import { flowOf, Taint } from './flow';
import { backwardTargets, forwardReceiver, keyOf, scopeOf } from './models';

const cache = new WeakMap<SourceFile, Map<SyntaxNode, Set<SyntaxNode>>>();
const MAX_NODES = 20000;

export function forwardsFeedingBackward(file: SourceFile, scope: SyntaxNode): ReadonlySet<SyntaxNode> {
  let perFile = cache.get(file);
  if (perFile === undefined) {
    perFile = new Map();
    cache.set(file, perFile);
  }
  let found = perFile.get(scope);
  if (found !== undefined) return found;
  found = new Set();
  perFile.set(scope, found);
  const flow = flowOf(file, scope);
  const roots: SyntaxNode[] = [];
  for (const call of file.nodesOfType('call')) {
    if (call.start < scope.start) continue;
    if (call.start >= scope.end) break;
    const targets = backwardTargets(file, call);
    if (targets !== null && scopeOf(call) === scope) roots.push(...targets);
  }
  if (roots.length === 0) return found;
  const seenKeys = new Set<string>();
  const stack = [...roots];
  let budget = MAX_NODES;
  while (stack.length > 0 && budget-- > 0) {
    const n = stack.pop()!;
    if (n.type === 'lambda' || n.type === 'function_definition') continue;
    if (n.type === 'call') {
      if (forwardReceiver(file, n) !== null) found.add(n);
      else if (flow.taintOf(n) === Taint.Clean) continue; // `.detach()`, `.item()`: no history flows on
    }
    if (n.type === 'identifier' || n.type === 'attribute') {
      const key = keyOf(file, n);
      if (key !== null && !(n.field === 'function' && n.parent?.type === 'call')) {
        if (!seenKeys.has(key)) {
          seenKeys.add(key);
          for (const d of flow.defs.get(key) ?? []) if (d.value !== null) stack.push(d.value);
          const dot = key.lastIndexOf('.');
          if (dot >= 0) for (const d of flow.defs.get(key.slice(0, dot)) ?? []) if (d.value !== null) stack.push(d.value);
        }
        if (n.type === 'identifier') continue;
      }
    }
    for (const c of n.children) stack.push(c);
  }
  return found;
}
