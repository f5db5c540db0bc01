// Where MH002's quick fix may append `.detach()` / `.item()`: only to a value that is a tensor. A finding
// can rest on a coarse taint (a dict holding one loss is tainted as a whole, so is every entry read from
// it), and a fix on a dict, a list or a Python number raises AttributeError where the code used to run
// (issue #13: "`.detach()`/`.item()` only on values that are tensors"). The finding stays; only the
// automatic edit is withheld when the value may not be a tensor.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { keyOf } from '../analysis/models';
import { dominates, Taint, type ScopeFlow } from '../analysis/flow';

/** Expressions that are never a tensor: containers, literals, lambdas. */
const NEVER_A_TENSOR = new Set([
  'tuple', 'list', 'dictionary', 'set', 'list_comprehension', 'generator_expression', 'dictionary_comprehension', 'set_comprehension',
  'expression_list', 'list_splat', 'lambda', 'integer', 'float', 'string', 'concatenated_string', 'true', 'false', 'none',
]);
/** Calls that build a container rather than a tensor. */
const CONTAINER_CALL = /^(dict|list|tuple|set|OrderedDict|defaultdict|collections\.(OrderedDict|defaultdict))$/;
const MAX_DEPTH = 4;

/**
 * Whether `.detach()` / `.item()` may be appended to `expr` without changing a working program into a
 * failing one: false when its definitions show a container or a literal, or when it reads an entry of a
 * dict built here whose values under that key are not all tensors with history.
 */
export function mayAppendTensorMethod(file: SourceFile, flow: ScopeFlow, expr: SyntaxNode, depth = 0): boolean {
  if (depth > MAX_DEPTH) return true;
  if (NEVER_A_TENSOR.has(expr.type) || isContainerCall(file, expr)) return false;
  switch (expr.type) {
    case 'parenthesized_expression': {
      const inner = namedChildren(expr)[0];
      return inner === undefined || mayAppendTensorMethod(file, flow, inner, depth + 1);
    }
    case 'conditional_expression':
      return namedChildren(expr).slice(0, 3).filter((_, i) => i !== 1).every((branch) => mayAppendTensorMethod(file, flow, branch, depth + 1));
    case 'identifier': {
      // A name bound here to a container or a literal (`named_grads = {n: g for ...}`): no edit.
      // `loss = 0.` then `loss += batch_loss`: a number that tensors with history were added to is a tensor
      // once the loop ran, the accumulator MH002 is about.
      const defs = flow.reachingDefs(file.textOf(expr), expr);
      const accumulated = defs.some((d) => d.kind === 'aug' && flow.taintOf(d.value) === Taint.Tainted);
      return defs.every(
        (d) =>
          d.kind !== 'assign' ||
          d.value === null ||
          d.element !== undefined ||
          (accumulated && (d.value.type === 'integer' || d.value.type === 'float')) ||
          mayAppendTensorMethod(file, flow, d.value, depth + 1),
      );
    }
    case 'subscript':
      return entryMayBeTensor(file, flow, expr);
    default:
      return true;
  }
}

function isContainerCall(file: SourceFile, expr: SyntaxNode): boolean {
  if (expr.type !== 'call') return false;
  const fn = childByField(expr, 'function');
  return fn !== null && CONTAINER_CALL.test(file.textOf(fn));
}

/**
 * `best['epoch']` where `best = {'epoch': 0, 'loss': 0}` and `best['loss'] = avg_loss`: the dict is tainted
 * by its loss, its epoch is an int. An entry of a dict built in this scope is a tensor only if every value
 * that can be under that (constant) key at the read carries history: the writes of the key seen nearest
 * first, up to one that always runs before the read, or else the dict's literal. Other subscripts (`out[0]`,
 * `outputs['loss']` of a model call) are left as they were.
 */
function entryMayBeTensor(file: SourceFile, flow: ScopeFlow, expr: SyntaxNode): boolean {
  const container = childByField(expr, 'value');
  const index = childByField(expr, 'subscript');
  if (container?.type !== 'identifier' || index === null || index.type !== 'string') return true;
  const key = keyOf(file, container);
  if (key === null) return true;
  const wanted = file.textOf(index);
  const reaching: SyntaxNode[] = [];
  for (const d of flow.reachingDefs(key, expr)) {
    if (d.value === null) return true;
    if (d.kind === 'store') {
      const slot = storedSlot(d.stmt);
      if (slot === null || !sameStringKey(file.textOf(slot), wanted)) continue;
      reaching.push(d.value);
      if (dominates(d, expr)) break;
      continue;
    }
    if (d.kind !== 'assign') return true;
    if (d.value.type === 'dictionary') {
      const literal = literalEntry(file, d.value, wanted);
      if (literal !== null) reaching.push(literal);
      else if (reaching.length === 0) return true; // a key the literal does not have: not this dict's business
    } else if (!isContainerCall(file, d.value)) {
      return true; // bound to something else (a model's outputs, a call): leave it to the taint
    }
    if (dominates(d, expr)) break;
  }
  return reaching.length > 0 && reaching.every((v) => flow.taintOf(v) === Taint.Tainted);
}

/** `d["k"] = v` / `d["k"] += v`: the subscript's index. */
function storedSlot(stmt: SyntaxNode): SyntaxNode | null {
  const assignment = stmt.type === 'expression_statement' ? namedChildren(stmt)[0] : stmt;
  const left = assignment?.type === 'assignment' || assignment?.type === 'augmented_assignment' ? childByField(assignment, 'left') : null;
  return left?.type === 'subscript' ? childByField(left, 'subscript') : null;
}

/** The value under `key` in a dict literal, or null. */
function literalEntry(file: SourceFile, dict: SyntaxNode, key: string): SyntaxNode | null {
  for (const pair of namedChildren(dict)) {
    if (pair.type !== 'pair') continue;
    const k = childByField(pair, 'key');
    if (k !== null && sameStringKey(file.textOf(k), key)) return childByField(pair, 'value');
  }
  return null;
}

/** `'epoch'` and `"epoch"` name the same key. */
function sameStringKey(a: string, b: string): boolean {
  const bare = (s: string): string => (/^(['"])(.*)\1$/.test(s) ? s.slice(1, -1) : s);
  return bare(a) === bare(b);
}
