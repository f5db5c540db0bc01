// Values that another module of the project proves to be plain numbers: `metrics, g = self.fast_net.forward(task)`
// where `fast_net` is an instance of a class of `inner_loop.py` whose `forward` returns `(tr_loss, tr_acc, ...)`
// built from `evaluate(...)` of `score.py`, which returns `float(loss) / len(loader)`. Within one file such a
// call is a forward pass (its result carries history as far as the flow can tell); reading the callee's
// returns, position by position, through local definitions and further project calls, can show that the
// value used is a Python number or a converted tensor instead. Only positive proofs count: anything not
// seen (a library call, a parameter, a loop variable, a return with another shape) leaves the flow's answer.
import { resolveImport } from '../project/resolve';
import { childByField, firstNamedChild, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { classMethods } from './context';
import { flowOf, Taint, type Def } from './flow';
import { importedClassOf } from './imported-method-forwards';
import { keyOf, scopeOf } from './models';
import { returnsOf } from './values';

/** Definitions and returns followed per question: the proofs seen in real code take about twenty. */
const MAX_STEPS = 60;
const LITERALS = new Set(['integer', 'float', 'true', 'false', 'none', 'string']);
const PATTERNS = new Set(['pattern_list', 'tuple_pattern', 'list_pattern']);
const SEQUENCES = new Set(['tuple', 'expression_list', 'list']);

interface Walk {
  steps: number;
  /** The proof went through another module (else the file's own flow has already judged the value). */
  usedProject: boolean;
  /** Definitions already being proven: a loop's `acc += x` reaches itself; the other paths decide. */
  readonly seen: Set<Def>;
}

/**
 * True when `expr` (a value of `file` that the flow says carries history) is shown to hold none through
 * the returns of a function or method defined in another module of the project. False without a project.
 */
export function numberThroughProject(file: SourceFile, expr: SyntaxNode): boolean {
  if (file.session.project === null) return false;
  const walk: Walk = { steps: 0, usedProject: false, seen: new Set() };
  return proven(file, expr, [], walk) && walk.usedProject;
}

/** `expr` with the positions `path` taken in turn (`[0, 1]`: the second item of its first item) holds no autograd history. */
function proven(file: SourceFile, node: SyntaxNode, path: readonly number[], walk: Walk): boolean {
  if (++walk.steps > MAX_STEPS) return false;
  let expr: SyntaxNode | null = node;
  while (expr?.type === 'parenthesized_expression') expr = firstNamedChild(expr);
  if (expr === null) return false;
  if (SEQUENCES.has(expr.type) && path.length > 0) {
    const items = namedChildren(expr).filter((c) => c.type !== 'comment');
    if (items.some((c) => c.type === 'list_splat')) return false;
    const item = items[path[0]];
    return item !== undefined && proven(file, item, path.slice(1), walk);
  }
  if (LITERALS.has(expr.type)) return path.length === 0;
  const scope = scopeOf(expr);
  if (scope === null) return false;
  const flow = flowOf(file, scope);
  // The flow already knows (`float(x)`, `.item()`, `.detach()`, a number): clean as a whole, clean in every position.
  if (flow.taintOf(expr) === Taint.Clean) return true;
  switch (expr.type) {
    case 'binary_operator': {
      const left = childByField(expr, 'left');
      const right = childByField(expr, 'right');
      return path.length === 0 && left !== null && right !== null && proven(file, left, [], walk) && proven(file, right, [], walk);
    }
    case 'identifier':
    case 'attribute': {
      const key = keyOf(file, expr);
      if (key === null) return false;
      const defs = flow.reachingDefs(key, expr);
      return defs.length > 0 && defs.every((d) => provenDef(file, flow, d, path, walk));
    }
    case 'call':
      return provenCall(file, expr, path, walk);
    default:
      return false;
  }
}

function provenDef(file: SourceFile, flow: ReturnType<typeof flowOf>, d: Def, path: readonly number[], walk: Walk): boolean {
  if (walk.seen.has(d)) return true;
  walk.seen.add(d);
  if (d.value === null) return false;
  if (d.kind === 'aug') {
    // `acc += x`: what acc held before and x, both numbers.
    const before = flow.reachingDefs(d.key, d.stmt, d.stmt.start);
    return path.length === 0 && before.length > 0 && proven(file, d.value, [], walk) && before.every((b) => provenDef(file, flow, b, [], walk));
  }
  if (d.kind !== 'assign') return false;
  if (d.element !== undefined) return proven(file, d.value, [d.element, ...path], walk);
  const position = unpackedPosition(file, d);
  if (position === undefined) return false;
  return proven(file, d.value, position === null ? path : [position, ...path], walk);
}

/**
 * Where the definition's key sits in its assignment's target: null for a plain target (`x = ...`) or an
 * item the flow already picked (`a, b = 0.0, x`), the index in an unpacking (`a, b = call()` with the whole call as value), undefined when not known (nested
 * patterns, starred targets, chained assignments).
 */
function unpackedPosition(file: SourceFile, d: Def): number | null | undefined {
  const assignment = d.stmt.type === 'assignment' ? d.stmt : d.stmt.children.find((c) => c.type === 'assignment');
  if (assignment === undefined) return undefined;
  const right = childByField(assignment, 'right');
  // `a, b = 0.0, x`: the flow already gave each target its own item.
  if (right !== d.value) return right !== null && d.value?.parent === right && SEQUENCES.has(right.type) ? null : undefined;
  const left = childByField(assignment, 'left');
  if (left === null) return undefined;
  if (!PATTERNS.has(left.type)) return keyOf(file, left) === d.key ? null : undefined;
  const targets = namedChildren(left).filter((c) => c.type !== 'comment');
  if (targets.some((t) => t.type === 'list_splat_pattern')) return undefined;
  const index = targets.findIndex((t) => keyOf(file, t) === d.key);
  return index < 0 ? undefined : index;
}

/**
 * A call of a function imported from another module (`evaluate(net, loader)`), or of a method of an
 * instance of a class of another module (`self.fast_net.forward(task)`, `net(x)` for its `forward`):
 * every return of the callee is proven in its own module, at the same positions.
 */
function provenCall(file: SourceFile, call: SyntaxNode, path: readonly number[], walk: Walk): boolean {
  const fn = childByField(call, 'function');
  if (fn === null) return false;
  let callee: { file: SourceFile; def: SyntaxNode } | null = null;
  if (fn.type === 'identifier' || fn.type === 'attribute') {
    const resolved = resolveImport(file, file.textOf(fn).replace(/\s+/g, ''));
    if (resolved !== null && resolved.kind === 'function' && resolved.node !== null) callee = { file: resolved.module.file, def: resolved.node };
  }
  // `net(x)`: the instance called, its `forward`; `net.evaluate(x)`: that method.
  const receivers: Array<[SyntaxNode | null, string]> = [[fn, 'forward']];
  if (fn.type === 'attribute') receivers.push([childByField(fn, 'object'), file.textOf(childByField(fn, 'attribute') ?? fn)]);
  for (const [object, method] of receivers) {
    if (callee !== null || object === null || (object.type !== 'identifier' && object.type !== 'attribute')) continue;
    const cls = importedClassOf(file, object);
    const def = cls === null ? null : (classMethods(cls.node).find((m) => cls.module.file.textOf(childByField(m, 'name') ?? m) === method) ?? null);
    if (cls !== null && def !== null) callee = { file: cls.module.file, def };
  }
  if (callee === null) return false;
  const returns = returnsOf(callee.def);
  if (returns.length === 0) return false;
  walk.usedProject = true;
  return returns.every((r) => {
    const value = firstNamedChild(r);
    return value !== null && proven(callee.file, value, path, walk);
  });
}
