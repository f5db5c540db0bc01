// MH002 retained-graph: a tensor with autograd history kept across iterations or stored, so every
// step's graph (and, before backward, its saved activations) stays alive.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import type { Fix, Rule, RuleFinding } from '../types';
import { enclosingLoops } from '../analysis/context';
import { keyOf, scopeOf } from '../analysis/models';
import { gradOffAt } from '../analysis/gradstate';
import { flowOf, Taint, type Def, type ScopeFlow } from '../analysis/flow';
import { isConsumedByBackward } from '../analysis/consumers';

const STORE_METHODS = new Set(['append', 'extend', 'insert', 'appendleft']);
/** Expressions that can take `.detach()` without parentheses. */
const PRIMARY = new Set(['identifier', 'attribute', 'subscript', 'call', 'parenthesized_expression']);
/** Containers and the like: `.detach()` does not apply to them, so no autofix. */
const NOT_A_TENSOR = new Set(['tuple', 'list', 'dictionary', 'set', 'list_comprehension', 'generator_expression', 'dictionary_comprehension', 'set_comprehension', 'expression_list', 'list_splat', 'conditional_expression', 'lambda']);

interface Sink {
  readonly node: SyntaxNode;
  readonly kind: 'accumulate' | 'append' | 'store';
  /** The container or accumulator. */
  readonly target: SyntaxNode;
  /** The stored value. */
  readonly value: SyntaxNode;
}

/** `history['loss']` -> `history`: the object that lives on. */
function containerKey(file: SourceFile, node: SyntaxNode | null): string | null {
  let n = node;
  while (n !== null && n.type === 'subscript') n = childByField(n, 'value');
  return keyOf(file, n);
}

function sinks(file: SourceFile): Sink[] {
  const out: Sink[] = [];
  for (const n of file.nodesOfType('augmented_assignment')) {
    const op = childByField(n, 'operator');
    const target = childByField(n, 'left');
    const value = childByField(n, 'right');
    if (target === null || value === null || op === null || !/^(\+|-|\*|\/)=$/.test(file.textOf(op))) continue;
    out.push({ node: n, kind: target.type === 'subscript' ? 'store' : 'accumulate', target, value });
  }
  for (const n of file.nodesOfType('assignment')) {
    const target = childByField(n, 'left');
    const right = childByField(n, 'right');
    if (target === null || right === null) continue;
    if (target.type === 'subscript') {
      out.push({ node: n, kind: 'store', target, value: right });
    } else if (right.type === 'binary_operator' && (target.type === 'identifier' || target.type === 'attribute')) {
      // `total = total + loss`
      const left = childByField(right, 'left');
      const operand = childByField(right, 'right');
      if (left !== null && operand !== null && file.textOf(left) === file.textOf(target)) out.push({ node: n, kind: 'accumulate', target, value: operand });
    }
  }
  for (const call of file.nodesOfType('call')) {
    const fn = childByField(call, 'function');
    if (fn?.type !== 'attribute') continue;
    const method = file.textOf(childByField(fn, 'attribute') ?? fn);
    if (!STORE_METHODS.has(method)) continue;
    const object = childByField(fn, 'object');
    const args = childByField(call, 'arguments');
    const values = args === null ? [] : args.children.filter((c) => c.named && c.type !== 'comment');
    const value = method === 'insert' ? values[1] : values[0];
    if (object === null || value === undefined || value.type === 'keyword_argument') continue;
    out.push({ node: call, kind: 'append', target: object, value });
  }
  return out;
}

/** The container outlives one iteration: defined before the innermost loop, or an attribute/global. */
function persists(flow: ScopeFlow, sink: Sink, key: string): boolean {
  const rebinding = flow.reachingDefs(key, sink.node).filter((d: Def) => d.kind !== 'store' && d.kind !== 'aug');
  const loops = enclosingLoops(sink.node);
  if (rebinding.length === 0) {
    // Never bound in this function: an attribute or a global that lives across calls.
    return flow.scope.type === 'function_definition' && (key.includes('.') || !flow.defs.has(key)) ? true : loops.length > 0;
  }
  if (loops.length === 0) return false;
  const loop = loops[0];
  if (rebinding.some((d) => d.kind === 'param')) return rebinding.every((d) => d.kind === 'param' || d.effective <= loop.start);
  return rebinding.every((d) => d.effective <= loop.start);
}

/** Value sub-expressions that carry history, outermost first (`loss * n` -> [loss]). */
function taintedLeaves(flow: ScopeFlow, expr: SyntaxNode): SyntaxNode[] {
  if (expr.type === 'binary_operator') {
    const l = childByField(expr, 'left');
    const r = childByField(expr, 'right');
    const out: SyntaxNode[] = [];
    if (l !== null) out.push(...taintedLeaves(flow, l));
    if (r !== null) out.push(...taintedLeaves(flow, r));
    return out;
  }
  return flow.taintOf(expr) === Taint.Tainted ? [expr] : [];
}

function appendCall(file: SourceFile, expr: SyntaxNode, method: string): { start: number; end: number; newText: string } {
  const text = file.textOf(expr);
  return PRIMARY.has(expr.type)
    ? { start: expr.end, end: expr.end, newText: `.${method}()` }
    : { start: expr.start, end: expr.end, newText: `(${text}).${method}()` };
}

/** `.item()` when the accumulator is a Python number meant for logging, `.detach()` otherwise. */
function accumulatorMethod(file: SourceFile, flow: ScopeFlow, sink: Sink, key: string, leaves: readonly SyntaxNode[]): 'item' | 'detach' {
  const defs = flow.reachingDefs(key, sink.node).filter((d) => d.kind === 'assign');
  const numericInit = defs.length > 0 && defs.every((d) => d.value !== null && /^(0|0\.0?|0\.)$/.test(file.textOf(d.value)));
  if (!numericInit) return 'detach';
  // Used as a tensor later (`total.item()`, `total / n` is fine)? Then keep it a tensor.
  const scopeText = file.text.slice(flow.scope.start, flow.scope.end);
  if (new RegExp(`\\b${key.replace(/\./g, '\\.')}\\s*\\.\\s*[A-Za-z_]`).test(scopeText)) return 'detach';
  const scalarLike = leaves.every((l) => /loss|cost|err|nll|kl\b/i.test(file.textOf(l)) || /\.(mean|sum)\(\)$/.test(file.textOf(l)));
  return scalarLike ? 'item' : 'detach';
}

function check(file: SourceFile): RuleFinding[] {
  const findings: RuleFinding[] = [];
  for (const sink of sinks(file)) {
    const scope = scopeOf(sink.node);
    if (scope === null) continue;
    if (gradOffAt(file, sink.node)) continue;
    const flow = flowOf(file, scope);
    if (flow.taintOf(sink.value) !== Taint.Tainted) continue;
    const key = containerKey(file, sink.target);
    if (key === null || !persists(flow, sink, key)) continue;
    if (isConsumedByBackward(file, scope, key)) continue;
    const valueText = file.textOf(sink.value);
    const short = valueText.length > 40 ? `${valueText.slice(0, 37)}...` : valueText;
    const leaves = taintedLeaves(flow, sink.value);
    let message: string;
    let fix: Fix | null = null;
    if (sink.kind === 'accumulate') {
      const method = accumulatorMethod(file, flow, sink, key, leaves);
      message =
        `\`${file.textOf(sink.node).split('\n')[0]}\` adds a tensor with autograd history to \`${key}\`, which outlives the iteration: every step's graph stays linked and alive. ` +
        `Accumulate \`${short}.item()\` (or \`.detach()\`) instead.`;
      if (leaves.length > 0 && leaves.every((l) => !NOT_A_TENSOR.has(l.type))) fix = { title: `Accumulate with .${method}()`, edits: leaves.map((l) => appendCall(file, l, method)) };
    } else {
      message =
        `Storing \`${short}\` in \`${key}\` keeps its autograd graph alive after the step (and its activations if no backward runs through it). ` +
        `Store \`${short}.detach()\` (or \`.item()\` for a scalar).`;
      if (leaves.length > 0 && !NOT_A_TENSOR.has(sink.value.type) && (sink.node.type !== 'call' || !/\.extend$/.test(file.textOf(childByField(sink.node, 'function') ?? sink.node)))) {
        fix = { title: 'Store a detached tensor', edits: [appendCall(file, sink.value, 'detach')] };
      }
    }
    findings.push({ start: sink.node.start, end: sink.node.end, message, fix });
  }
  return findings;
}

export const retainedGraph: Rule = {
  code: 'MH002',
  name: 'retained-graph',
  severity: 'warning',
  summary: 'A tensor with autograd history accumulated or stored across iterations keeps every step\'s graph alive; use .item() or .detach().',
  check,
};

export const rule = retainedGraph;
