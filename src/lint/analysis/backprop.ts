// Which forward passes feed a backward pass in their scope: following the data that a backward
// (or accelerator.backward, autograd.grad...) consumes back to the forward calls that produced it,
// without crossing `.detach()`, `.item()` and other history-free values. A forward in eval mode whose
// output is backpropagated (an attack, saliency, test-time adaptation) legitimately records a graph; a
// frozen teacher whose logits are only used detached does not need one.
import { childByField, contains, type SourceFile, type SyntaxNode } from '../syntax';
import { enclosingLoops } from './context';
import { dominates, flowOf, Taint, type Def, type ScopeFlow } from './flow';
import { backwardTargets, forwardReceiver, keyOf, scopeOf } from './models';
import { VersionMemo } from '../session';

const cache = new VersionMemo<ReadonlySet<SyntaxNode>>('backprop.forwardsFeedingBackward');
const MAX_NODES = 20000;

/**
 * The definitions of `key` that can reach `use`: the ones up to a dominating definition (so a later
 * `outputs = model(batch)` in an eval loop is not what a training loop's backward consumes), plus later
 * ones that come round the back edge of a loop the dominating definition is outside of
 * (`out = model(next(it))` at the end of the body, consumed at the top of the next iteration). Every
 * definition when none dominates.
 */
function definitionsReaching(flow: ScopeFlow, key: string, use: SyntaxNode): readonly Def[] {
  const all = flow.defs.get(key) ?? [];
  const reaching = flow.reachingDefs(key, use);
  const dominating = reaching.find((d) => dominates(d, use));
  if (dominating === undefined) return all;
  const openLoops = enclosingLoops(use).filter((loop) => !contains(loop, dominating.stmt));
  if (openLoops.length === 0) return reaching;
  const carried = all.filter((d) => d.stmt.start > use.start && openLoops.some((loop) => contains(loop, d.stmt)));
  return carried.length === 0 ? reaching : [...reaching, ...carried];
}

export function forwardsFeedingBackward(file: SourceFile, scope: SyntaxNode): ReadonlySet<SyntaxNode> {
  // A recursive request while the set fills sees it as far as it got.
  const found = new Set<SyntaxNode>();
  return cache.keyed(file, scope, () => fillForwardsFeedingBackward(file, scope, found), found);
}

function fillForwardsFeedingBackward(file: SourceFile, scope: SyntaxNode, found: Set<SyntaxNode>): ReadonlySet<SyntaxNode> {
  const roots: SyntaxNode[] = [];
  for (const call of file.nodesOfType('call')) {
    if (call.start < scope.start) continue;
    if (call.start >= scope.end) break;
    const targets = backwardTargets(file, call);
    if (targets !== null && scopeOf(call) === scope) roots.push(...targets);
  }
  if (roots.length === 0) return found;
  traceForwards(file, flowOf(file, scope), roots, found);
  return found;
}

/**
 * Adds to `found` the forward passes whose outputs flow into `roots` (expressions of the flow's scope)
 * with autograd history: through assignments, arithmetic and forward passes, never across `.detach()`,
 * `.item()` or other history-free values. Forward passes under no_grad are found too (callers that care
 * check the grad mode). With `operands`, `reached` sees every call on those paths that is not behind a
 * forward pass's inputs (the trace stops at each forward pass: `hidden = enc.init_hidden()` fed to
 * `enc(x, hidden)` is an input, not a value the loss is computed from).
 */
export function traceForwards(
  file: SourceFile,
  flow: ScopeFlow,
  roots: readonly SyntaxNode[],
  found: Set<SyntaxNode>,
  operands?: { readonly reached: (call: SyntaxNode) => void },
): void {
  const seenDefs = new Set<Def>();
  const follow = (key: string, use: SyntaxNode): void => {
    for (const d of definitionsReaching(flow, key, use)) {
      const value = d.value ?? (d.kind === 'with' ? withContextOf(file, d.stmt, key) : null);
      if (value === null || seenDefs.has(d)) continue;
      seenDefs.add(d);
      stack.push(value);
    }
  };
  const stack = [...roots];
  let budget = MAX_NODES;
  while (stack.length > 0 && budget-- > 0) {
    const n = stack.pop()!;
    if (n.type === 'lambda' || n.type === 'function_definition') continue;
    // `Categorical(logits=x)`: the keyword's name is not a read of a variable `logits`.
    if (n.field === 'name' && n.parent?.type === 'keyword_argument') continue;
    if (n.type === 'call') {
      operands?.reached(n);
      if (forwardReceiver(file, n) !== null) {
        found.add(n);
        if (operands !== undefined) continue;
      } else if (flow.taintOf(n) === Taint.Clean) continue; // `.detach()`, `.item()`: no history flows on
    }
    if (n.type === 'identifier' || n.type === 'attribute') {
      const key = keyOf(file, n);
      if (key !== null && !(n.field === 'function' && n.parent?.type === 'call')) {
        follow(key, n);
        const dot = key.lastIndexOf('.');
        if (dot >= 0) follow(key.slice(0, dot), n);
        if (n.type === 'identifier') continue;
      }
    }
    for (const c of n.children) stack.push(c);
  }
}

/**
 * The context expression a `with` statement binds `key` to (`with amp.scale_loss(loss, opt) as scaled:`):
 * apex's and similar loss-scaling contexts hand back the scaled loss, so a backward of the alias is a
 * backward of the loss it was given. Null when no item binds `key`.
 */
function withContextOf(file: SourceFile, withStmt: SyntaxNode, key: string): SyntaxNode | null {
  const stack = [...withStmt.children.filter((c) => c.type === 'with_clause')];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'as_pattern') {
      const alias = childByField(n, 'alias');
      if (alias !== null && file.textOf(alias).replace(/[()\s]/g, '') === key) return n.children.find((c) => c.named && c !== alias) ?? null;
      continue;
    }
    for (const c of n.children) stack.push(c);
  }
  return null;
}
