// Inputs made with `volatile=True` (`Variable(x, volatile=True)`, helpers such as `to_var(x, volatile=True)`):
// before PyTorch 0.4 a volatile input made the whole forward pass record nothing. Since 0.4 the flag is
// ignored (a warning says "volatile was removed and now has no effect"), so a forward pass on such an input
// records a graph its author meant it not to: the author's own statement that this forward is inference.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { disablesGrad, keywordArgument, withItemCalls } from './context';
import { VersionMemo } from '../session';

const intentPossible = new VersionMemo<boolean>('volatile-inputs.possible');

/** Methods that keep a tensor what it was (moved, reshaped, cast): `Variable(x, volatile=True).cuda()` is still the volatile input. */
const KEEPING_METHODS = /^(cuda|cpu|to|float|double|half|long|view|reshape|unsqueeze|squeeze|contiguous|permute|transpose|type)$/;

/** Bound names are followed this many assignments back (`v = Variable(..., volatile=True)`; `v = v.cuda()`). */
const MAX_HOPS = 4;

/**
 * Some argument of the call (positional, keyword, or an element of a list/tuple argument) is an input its
 * author made to be graph-free in a way that no longer works: `volatile=True`, or a no_grad block that only
 * binds it (`'no-grad-binding'`). Null otherwise.
 */
export function graphFreeIntent(file: SourceFile, scope: SyntaxNode, call: SyntaxNode): 'volatile' | 'no-grad-binding' | null {
  // Most files have neither a `volatile` nor a no_grad block that only binds names: one pass per version
  // spares them the argument walk (a long script's every forward would walk its scope per argument).
  if (!intentPossible.get(file, (f) => f.text.includes('volatile') || f.nodesOfType('with_statement').some((w) => bindsOnly(f, w)))) return null;
  const args = childByField(call, 'arguments');
  if (args === null) return null;
  for (const arg of namedChildren(args)) {
    const value = arg.type === 'keyword_argument' ? childByField(arg, 'value') : arg;
    if (value === null) continue;
    const items = value.type === 'list' || value.type === 'tuple' ? namedChildren(value) : [value];
    for (const item of items) {
      const found = intentOf(file, scope, item, call.start, 0);
      if (found !== null) return found;
    }
  }
  return null;
}

type Intent = 'volatile' | 'no-grad-binding' | null;

function intentOf(file: SourceFile, scope: SyntaxNode, expr: SyntaxNode, before: number, hops: number): Intent {
  if (expr.type === 'parenthesized_expression') {
    const inner = namedChildren(expr)[0];
    return inner === undefined ? null : intentOf(file, scope, inner, before, hops);
  }
  if (expr.type === 'call') {
    const flag = keywordArgument(file, expr, 'volatile');
    if (flag !== null) return file.textOf(flag) === 'True' ? 'volatile' : null;
    const fn = childByField(expr, 'function');
    if (fn?.type !== 'attribute' || !KEEPING_METHODS.test(file.textOf(childByField(fn, 'attribute') ?? fn))) return null;
    const object = childByField(fn, 'object');
    return object === null ? null : intentOf(file, scope, object, before, hops);
  }
  if (expr.type === 'identifier' && hops < MAX_HOPS) {
    const value = latestAssignment(file, scope, file.textOf(expr), before);
    if (value === null) return null;
    if (boundUnderNoGradOnly(file, value.node, value.right, before)) return 'no-grad-binding';
    return intentOf(file, scope, value.right, value.start, hops + 1);
  }
  return null;
}

/**
 * `with torch.no_grad(): noisev = noise` (or `= Variable(noise)`), then `netG(noisev)` after the block: the
 * way `Variable(noise, volatile=True)` was often ported to 0.4. A block that only renames or wraps a tensor
 * computes nothing; its one effect the author can have wanted is a graph-free input, which a tensor does not
 * carry out of the block. A block that computes the value (`fake = netG(z)`, then `netD(fake)` to train the
 * critic) is an ordinary detached input, not this.
 */
function boundUnderNoGradOnly(file: SourceFile, assignment: SyntaxNode, right: SyntaxNode, callStart: number): boolean {
  if (!isPlainWrap(file, right)) return false;
  for (let p = assignment.parent; p !== null; p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'class_definition' || p.type === 'module') return false;
    if (p.type === 'with_statement' && p.end <= callStart && bindsOnly(file, p)) return true;
  }
  return false;
}

/** A no_grad block whose statements are all plain bindings (`with torch.no_grad(): noisev = noise`). */
function bindsOnly(file: SourceFile, withStmt: SyntaxNode): boolean {
  const body = childByField(withStmt, 'body');
  if (body === null || !withItemCalls(withStmt).some((c) => disablesGrad(file, c))) return false;
  return namedChildren(body).every((stmt) => {
    if (stmt.type === 'comment') return true;
    const assignment = stmt.type === 'expression_statement' ? namedChildren(stmt)[0] : null;
    const right = assignment?.type === 'assignment' ? childByField(assignment, 'right') : null;
    return right !== null && isPlainWrap(file, right);
  });
}

/** `noise`, `Variable(noise)`, `noise.cuda()`, `Variable(noise).to(device)`: the same tensor, renamed or moved. */
function isPlainWrap(file: SourceFile, expr: SyntaxNode): boolean {
  if (expr.type === 'identifier') return true;
  if (expr.type !== 'call') return false;
  const fn = childByField(expr, 'function');
  if (fn === null) return false;
  if (fn.type === 'attribute') {
    const object = childByField(fn, 'object');
    return KEEPING_METHODS.test(file.textOf(childByField(fn, 'attribute') ?? fn)) && object !== null && isPlainWrap(file, object);
  }
  const args = namedChildren(childByField(expr, 'arguments') ?? expr).filter((a) => a.type !== 'keyword_argument');
  return /^(autograd\.|torch\.autograd\.)?Variable$/.test(file.textOf(fn)) && args.length === 1 && isPlainWrap(file, args[0]);
}

/** A plain `name = ...` of a scope: the assignment, its right side and where it starts. */
interface PlainAssignment {
  readonly node: SyntaxNode;
  readonly right: SyntaxNode;
  readonly start: number;
}

/**
 * The plain `name = ...` assignments of each scope (not of nested functions, classes or lambdas) by name,
 * sorted by start: one walk of the scope per version, where a walk per identifier argument of every call
 * made a long script's module scope quadratic (16% of a 5 MB lint's CPU).
 */
const plainAssignmentsByName = new VersionMemo<ReadonlyMap<string, readonly PlainAssignment[]>>('volatile-inputs.assignments');

function plainAssignments(file: SourceFile, scope: SyntaxNode): ReadonlyMap<string, readonly PlainAssignment[]> {
  return plainAssignmentsByName.keyed(file, scope, () => {
    const byName = new Map<string, PlainAssignment[]>();
    const stack = [scope];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n !== scope && (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda')) continue;
      if (n.type === 'assignment') {
        const left = childByField(n, 'left');
        const right = childByField(n, 'right');
        if (left?.type === 'identifier' && right !== null) {
          const name = file.textOf(left);
          const list = byName.get(name);
          if (list === undefined) byName.set(name, [{ node: n, right, start: n.start }]);
          else list.push({ node: n, right, start: n.start });
        }
      }
      for (const c of n.children) stack.push(c);
    }
    // The walk pops the last child first; the search below wants document order.
    for (const list of byName.values()) list.sort((a, b) => a.start - b.start);
    return byName;
  });
}

/** The right side of the last plain `name = ...` of the scope (not of nested functions) ending by `before`. */
function latestAssignment(file: SourceFile, scope: SyntaxNode, name: string, before: number): PlainAssignment | null {
  const list = plainAssignments(file, scope).get(name);
  if (list === undefined) return null;
  // Assignments starting before `before`, the latest first: the first that also ends by it is the latest
  // such (no two assignments start at one offset; those still open at `before` hold the call).
  let hi = list.length;
  for (let lo = 0; lo < hi; ) {
    const mid = (lo + hi) >> 1;
    if (list[mid].start < before) lo = mid + 1;
    else hi = mid;
  }
  for (let i = hi - 1; i >= 0; i--) if (list[i].node.end <= before) return list[i];
  return null;
}
