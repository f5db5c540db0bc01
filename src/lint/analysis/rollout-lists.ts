// MH001 rollouts (inference.ts): which reads after an acting loop still see the forward's history.
// PPO-style code runs the policy with autograd on, collects values and log-probabilities in lists
// (`val_buf.append(v)`, `log_probs.append(dist.log_prob(a))`), detaches every such list once the rollout is
// over (`torch.stack(logp_buf).detach()`, `values = torch.cat(values).detach()`) and recomputes the forward
// in the update: the rollout's graph was kept alive for nothing. REINFORCE reads its list with history
// (`torch.stack(log_probs).sum()`), so the graph is needed there. Flow is the text-order approximation of
// flow.ts; a read before the loop inside a loop around it (the next iteration) or a read no definition
// reaches counts as seeing the loop's values, so the answer errs towards "history kept".
import { childByField, contains, firstStartingAtOrAfter, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { enclosingLoops } from './context';
import { qualifiedName } from './imports';
import type { Def, ScopeFlow } from './flow';

/** Methods whose result carries no history (`dist.sample()`, `x.item()`, `x.detach()`). */
export const HISTORY_CUTS = new Set(['item', 'tolist', 'numpy', 'detach', 'sample', 'argmax', 'argmin']);

/** Calls that gather a list's tensors into one tensor with the same history. */
const GATHERING = /^torch\.(stack|cat|concat|concatenate|hstack|vstack)$/;
const TARGET_WRAPPERS = new Set(['pattern_list', 'tuple_pattern', 'list_pattern', 'tuple', 'list', 'parenthesized_expression']);

/** Identifiers of `scope`'s own code (nested definitions are other scopes) named `key`. */
function identifiersNamed(file: SourceFile, scope: SyntaxNode, key: string): SyntaxNode[] {
  const body = scope.type === 'module' ? scope : (childByField(scope, 'body') ?? scope);
  const ids = file.nodesOfType('identifier');
  const out: SyntaxNode[] = [];
  for (let i = firstStartingAtOrAfter(ids, body.start); i < ids.length && ids[i].start < body.end; i++) {
    const id = ids[i];
    if (file.textOf(id) !== key || !isRead(id) || nestedDefinition(id, scope)) continue;
    out.push(id);
  }
  return out;
}

function nestedDefinition(id: SyntaxNode, scope: SyntaxNode): boolean {
  for (let n = id.parent; n !== null && n !== scope; n = n.parent) {
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') return true;
  }
  return false;
}

/**
 * The identifier reads a variable: not a target of `=`/`for` (`for value, r in ...` binds anew), not an
 * attribute's name (`x.value`) and not a keyword argument's name (`f(value=1)`).
 */
function isRead(id: SyntaxNode): boolean {
  const parent = id.parent;
  if (parent === null) return true;
  if (parent.type === 'attribute' && childByField(parent, 'attribute') === id) return false;
  if (parent.type === 'keyword_argument' && childByField(parent, 'name') === id) return false;
  let n = id;
  while (n.parent !== null && TARGET_WRAPPERS.has(n.parent.type)) n = n.parent;
  const owner = n.parent;
  return !((owner?.type === 'assignment' || owner?.type === 'for_statement') && childByField(owner, 'left') === n);
}

/**
 * The read may see a value bound inside `region`: one of its reaching definitions lies there, none
 * reaches it at all, or it comes before the region inside a loop around it (the next iteration).
 */
function seesRegion(flow: ScopeFlow, region: SyntaxNode, key: string, id: SyntaxNode, inRegion: (d: Def) => boolean): boolean {
  if (id.start < region.start && enclosingLoops(region).some((l) => contains(l, id))) return true;
  const defs = flow.reachingDefs(key, id);
  return defs.length === 0 || defs.some(inRegion);
}

/**
 * Some read of a name bound in `region` from the forward's history, outside the region, may see that
 * binding (`logits` of the rollout read again after the loop). Later rebindings (`logits, value =
 * net(states)` in the update, `for value in values`) hide it.
 */
export function derivedReadOutside(file: SourceFile, flow: ScopeFlow, scope: SyntaxNode, region: SyntaxNode, names: ReadonlySet<string>): boolean {
  for (const key of names) {
    for (const id of identifiersNamed(file, scope, key)) {
      if (contains(region, id)) continue;
      if (seesRegion(flow, region, key, id, (d) => contains(region, d.stmt))) return true;
    }
  }
  return false;
}

/** `xs = []`, `xs = list()`, `a, b = [], []` (each target gets its own `[]`). */
function freshList(file: SourceFile, d: Def): boolean {
  if (d.kind !== 'assign' || d.element !== undefined || d.value === null) return false;
  if (d.value.type === 'list') return namedChildren(d.value).length === 0;
  if (d.value.type !== 'call') return false;
  const fn = childByField(d.value, 'function');
  const args = childByField(d.value, 'arguments');
  return fn?.type === 'identifier' && file.textOf(fn) === 'list' && (args === null || namedChildren(args).length === 0);
}

/** `torch.stack(xs).detach()`, `torch.cat(xs, 0).item()`, `len(xs)`: a read of the list that keeps no history. */
function cutRead(file: SourceFile, id: SyntaxNode): boolean {
  const args = id.parent;
  const call = args?.type === 'argument_list' ? args.parent : null;
  if (args === null || call === null || call.type !== 'call') return false;
  const fn = childByField(call, 'function');
  if (fn === null) return false;
  if (fn.type === 'identifier' && file.textOf(fn) === 'len') return true;
  // The list must be the gathered tensors, not `dim=`/`out=` or a later argument.
  if (namedChildren(args)[0] !== id || !GATHERING.test(qualifiedName(file, fn) ?? '')) return false;
  const attr = call.parent;
  if (attr?.type !== 'attribute' || childByField(attr, 'object') !== call) return false;
  const name = childByField(attr, 'attribute');
  return name !== null && HISTORY_CUTS.has(file.textOf(name)) && attr.parent?.type === 'call' && childByField(attr.parent, 'function') === attr;
}

/** The identifier is the list of an `xs.append(...)`-style call (adding to it, not reading what it holds). */
function addsTo(id: SyntaxNode, adding: ReadonlySet<string>, file: SourceFile): boolean {
  const attr = id.parent;
  if (attr?.type !== 'attribute' || childByField(attr, 'object') !== id) return false;
  const name = childByField(attr, 'attribute');
  return name !== null && adding.has(file.textOf(name)) && attr.parent?.type === 'call';
}

/**
 * Every list the loop in `region` fills with the forward's history (`lists`: the list's identifier at
 * each such append) is a fresh local list (`xs = []`) whose every read that may see those elements is
 * cut from the history (`torch.stack(xs).detach()`, `len(xs)`). Appends themselves are not reads.
 */
export function listsCutAfter(file: SourceFile, flow: ScopeFlow, scope: SyntaxNode, region: SyntaxNode, lists: readonly SyntaxNode[], adding: ReadonlySet<string>): boolean {
  for (const list of lists) {
    if (list.type !== 'identifier') return false;
    const key = file.textOf(list);
    const bindings = flow.reachingDefs(key, list).filter((d) => d.kind !== 'store');
    if (bindings.length === 0 || !bindings.every((d) => freshList(file, d))) return false;
    const holdsHistory = (d: Def): boolean => bindings.includes(d) || (d.kind === 'store' && contains(region, d.stmt));
    for (const id of identifiersNamed(file, scope, key)) {
      if (addsTo(id, adding, file)) continue;
      if (!seesRegion(flow, region, key, id, holdsHistory)) continue;
      if (!cutRead(file, id)) return false;
    }
  }
  return true;
}
