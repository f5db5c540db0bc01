// MH002 retained-graph: a tensor with autograd history kept across iterations or stored, so every
// step's graph (and, before backward, its saved activations) stays alive.
import { childByField, contains, firstStartingAtOrAfter, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import type { Fix, Rule, RuleFinding } from '../types';
import { enclosingFunction, enclosingLoops } from '../analysis/context';
import { backwardTargets, forwardReceiver, hasTaintSource, keyOf, scopeOf } from '../analysis/models';
import { gradOffAt } from '../analysis/gradstate';
import { cleanReturningFunctions, dominates, factsSignature, flowOf, graphReturningFunctions, scopeSignature, Taint, tupleReturningFunctions, tupleReturningSignature, type Def, type ScopeFlow } from '../analysis/flow';
import { consumedSignature, isConsumedByBackward } from '../analysis/consumers';
import { checkScopes, combine, ScopeFindingsMemo } from '../analysis/unitcache';
import { nodesInScope } from '../analysis/scope-nodes';
import { meterSignature, retainedArguments } from '../analysis/meters';
import { VersionMemo } from '../session';
import { buildsOptimizer, learnedLeaves, learnedLeavesSignature } from '../analysis/learned-leaves';
import { calleeName } from '../analysis/imports';
import { localCallee, resolutionSignature } from '../analysis/indirect';
import { inferenceSignature, reachesGradients } from '../analysis/inference';
import { numberThroughProject } from '../analysis/project-number-returns';
import { isTestFunction } from './mh001-missing-no-grad';
import { isFrozenNetwork } from '../analysis/frozen-networks';
import { mayAppendTensorMethod } from './mh002-fix-targets';

const STORE_METHODS = new Set(['append', 'extend', 'insert', 'appendleft']);
/** Expressions that can take `.detach()` without parentheses. */
const PRIMARY = new Set(['identifier', 'attribute', 'subscript', 'call', 'parenthesized_expression']);
/** Containers and the like: `.detach()` does not apply to them, so no autofix. */
const NOT_A_TENSOR = new Set(['tuple', 'list', 'dictionary', 'set', 'list_comprehension', 'generator_expression', 'dictionary_comprehension', 'set_comprehension', 'expression_list', 'list_splat', 'conditional_expression', 'lambda']);

interface Sink {
  readonly node: SyntaxNode;
  readonly kind: 'accumulate' | 'append' | 'store' | 'meter';
  /** The container or accumulator. */
  readonly target: SyntaxNode;
  /** The stored value. */
  readonly value: SyntaxNode;
  /** For meters: the method treats the value as a tensor (so fix with .detach(), not .item()). */
  readonly asTensor?: boolean;
}

/** `history['loss']` -> `history`: the object that lives on. */
function containerKey(file: SourceFile, node: SyntaxNode | null): string | null {
  let n = node;
  while (n !== null && n.type === 'subscript') n = childByField(n, 'value');
  return keyOf(file, n);
}

const SINK_TYPES = new Set(['augmented_assignment', 'assignment', 'call']);

function sinks(file: SourceFile, scope: SyntaxNode): Sink[] {
  const out: Sink[] = [];
  const nodes = nodesInScope(file, scope, SINK_TYPES);
  for (const n of nodes) {
    if (n.type !== 'augmented_assignment') continue;
    const op = childByField(n, 'operator');
    const target = childByField(n, 'left');
    const value = childByField(n, 'right');
    if (target === null || value === null || op === null || !/^(\+|-|\*|\/)=$/.test(file.textOf(op))) continue;
    out.push({ node: n, kind: target.type === 'subscript' ? 'store' : 'accumulate', target, value });
  }
  for (const n of nodes) {
    if (n.type !== 'assignment') continue;
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
  for (const call of nodes) {
    if (call.type !== 'call') continue;
    const fn = childByField(call, 'function');
    if (fn?.type !== 'attribute') continue;
    const method = file.textOf(childByField(fn, 'attribute') ?? fn);
    for (const r of retainedArguments(file, call)) {
      out.push({ node: call, kind: 'meter', target: childByField(fn, 'object') ?? fn, value: r.arg, asTensor: r.param.usedAsTensor });
    }
    if (!STORE_METHODS.has(method)) continue;
    const object = childByField(fn, 'object');
    const args = childByField(call, 'arguments');
    const values = args === null ? [] : namedChildren(args);
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

/**
 * The scope hands the container itself to a function of this file that backpropagates or steps an
 * optimizer, directly or through its own calls (ACER's `_train(..., policies, Qs, Vs, ...)`, a
 * REINFORCE `finish_episode(log_probs)`): the history is kept for that update on purpose.
 */
function handedToTraining(file: SourceFile, scope: SyntaxNode, key: string): boolean {
  for (const call of nodesInScope(file, scope, CALL_TYPES)) {
    const args = childByField(call, 'arguments');
    if (args === null || !namedChildren(args).some((a) => file.textOf(a.type === 'keyword_argument' ? (childByField(a, 'value') ?? a) : a) === key)) continue;
    const callee = localCallee(file, call);
    if (callee !== null && reachesGradients(file, callee)) return true;
  }
  return false;
}

const CALL_TYPES = new Set(['call']);

const COMPREHENSIONS = new Set(['list_comprehension', 'generator_expression', 'set_comprehension', 'dictionary_comprehension']);

/**
 * The containers a comprehension variable stands for: `arr` in `[arr.append(el) for arr, el in
 * zip((policies, Qs, Vs), (policy, Q, V))]` is each of `policies`, `Qs`, `Vs` in turn. Null when `key` is
 * not a comprehension's variable; empty when it is but what it iterates is not a visible tuple or list of
 * names (then no container is known to outlive anything).
 */
function comprehensionContainers(file: SourceFile, node: SyntaxNode, key: string): string[] | null {
  for (let p = node.parent; p !== null && p.type !== 'function_definition' && p.type !== 'module'; p = p.parent) {
    if (!COMPREHENSIONS.has(p.type)) continue;
    for (const clause of namedChildren(p)) {
      if (clause.type !== 'for_in_clause') continue;
      const left = childByField(clause, 'left');
      const right = childByField(clause, 'right');
      if (left === null || right === null) continue;
      const targets = left.type === 'pattern_list' || left.type === 'tuple_pattern' ? namedChildren(left) : [left];
      const index = targets.findIndex((t) => file.textOf(t) === key);
      if (index < 0) continue;
      let source: SyntaxNode | undefined = targets.length === 1 ? right : undefined;
      if (targets.length > 1 && right.type === 'call' && file.textOf(childByField(right, 'function') ?? right) === 'zip') {
        source = namedChildren(childByField(right, 'arguments') ?? right)[index];
      }
      if (source === undefined || (source.type !== 'tuple' && source.type !== 'list')) return [];
      const keys = namedChildren(source).map((e) => keyOf(file, e));
      return keys.every((k): k is string => k !== null) ? keys : [];
    }
  }
  return null;
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

/** The scope calls a function of this file that returns a tensor with history (`loss = train_step(...)`, `loss, acc = step(...)`). */
function callsGraphReturning(file: SourceFile, scope: SyntaxNode): boolean {
  const names = new Set(graphReturningFunctions(file));
  for (const [name, shape] of tupleReturningFunctions(file)) if (shape.includes(Taint.Tainted)) names.add(name);
  if (names.size === 0) return false;
  const called = wordsBeforeParen(file, scope);
  for (const name of names) {
    // `\bname\s*\(` for a name of ASCII word characters is exactly "a maximal word before `(`".
    if (/^\w+$/.test(name) ? called.has(name) : new RegExp(`\\b${name}\\s*\\(`).test(file.textOf(scope))) return true;
  }
  return false;
}

const wordsBeforeParenMemo = new VersionMemo<ReadonlySet<string>>('MH002.wordsBeforeParen');

/** Every maximal run of word characters in the scope's text followed by `(` (one scan per scope, not one per name). */
function wordsBeforeParen(file: SourceFile, scope: SyntaxNode): ReadonlySet<string> {
  return wordsBeforeParenMemo.keyed(file, scope, () => new Set(Array.from(file.textOf(scope).matchAll(/\w+(?=\s*\()/g), (m) => m[0])));
}

/** The text of `node` after applying edits that lie inside it. */
function editedText(file: SourceFile, node: SyntaxNode, edits: readonly { start: number; end: number; newText: string }[]): string {
  let text = file.textOf(node);
  for (const e of [...edits].sort((a, b) => b.start - a.start)) {
    if (e.start < node.start || e.end > node.end) continue;
    text = text.slice(0, e.start - node.start) + e.newText + text.slice(e.end - node.start);
  }
  return text;
}

function shorten(text: string): string {
  return text.length > 48 ? `${text.slice(0, 45)}...` : text;
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

/**
 * `loss_dict["d"] = d_loss` in a loop: the same slot is rebound every iteration, so it keeps at most the
 * latest step's value (whose graph its backward has already freed), never a growing chain of graphs. Outside
 * any loop the slot is rebound on every call instead (`g.edata["a"] = attn` in a GNN layer's forward,
 * `self.stats["loss"] = loss` in a step method): at most the latest call's value, likewise.
 */
function isOverwrittenSlot(file: SourceFile, sink: Sink): boolean {
  if (sink.kind !== 'store' || sink.node.type !== 'assignment' || sink.target.type !== 'subscript') return false;
  const index = childByField(sink.target, 'subscript');
  if (index === null || (index.type !== 'string' && index.type !== 'integer') || file.textOf(index).includes('{')) return false;
  // `d["loss"] = d["loss"] + loss` accumulates into the slot.
  return !file.textOf(sink.value).includes(file.textOf(sink.target));
}

/**
 * `outs.clear()` (or `del outs[:]`, `outs[:] = []`) as a statement of the loop body itself, not under an
 * `if`: the container is emptied on every iteration, so like a container created inside the loop it holds
 * at most one iteration's values, never a growing chain of graphs. A clear every k steps (in a branch)
 * still keeps k steps' graphs and their activations, and stays reported.
 */
function emptiedEveryIteration(file: SourceFile, sink: Sink, key: string): boolean {
  const loop = enclosingLoops(sink.node)[0];
  const body = loop === undefined ? null : childByField(loop, 'body');
  if (body === null) return false;
  const statements = [...namedChildren(body)];
  for (let i = 0; i < statements.length; i++) {
    const s = statements[i];
    // `with timer():` / `with torch.no_grad():` bodies run whenever the statement does.
    if (s.type === 'with_statement') {
      const inner = childByField(s, 'body');
      if (inner !== null) statements.push(...namedChildren(inner));
      continue;
    }
    if (isEmptying(file, s, key)) return true;
  }
  return false;
}

/**
 * `outputs = []` in the body of a step loop, filled by an inner loop over the pieces of that step's batch
 * (`for data_chunk, target_chunk in zip(data_chunks, target_chunks)` with `data_chunks, target_chunks =
 * subdivide_batch(config, data, targets)`, `for xb in x.chunk(4)`): the container is rebound every outer
 * iteration and the inner loop runs over one batch, so it holds one step's pieces (gradient subdivision,
 * micro-batches), never a chain of steps. An inner loop over anything else (a loader in an epoch loop:
 * `for epoch ...: preds = []; for x, y in loader: preds.append(model(x))`) still grows over the epoch.
 */
function piecesOfOneStep(file: SourceFile, flow: ScopeFlow, sink: Sink, key: string): boolean {
  const [inner, outer] = enclosingLoops(sink.node);
  const outerBody = outer === undefined ? null : childByField(outer, 'body');
  if (outerBody === null || inner.type !== 'for_statement') return false;
  const rebinding = flow.reachingDefs(key, sink.node).filter((d: Def) => d.kind !== 'store' && d.kind !== 'aug');
  if (rebinding.length === 0 || !rebinding.every((d) => contains(outerBody, d.stmt) && d.effective <= inner.start)) return false;
  // The outer loop's batch: the names it binds, unless it counts (`for epoch in range(n)`: an epoch number is no batch).
  const outerIterable = outer.type === 'for_statement' ? childByField(outer, 'right') : null;
  const counts = outerIterable !== null && /^(enumerate\()?\s*(range|trange)\(/.test(file.textOf(outerIterable));
  const batchNames = outerIterable !== null && !counts ? identifiersIn(file, childByField(outer, 'left')) : new Set<string>();
  const iterable = childByField(inner, 'right');
  return iterable !== null && isPiecesOf(file, flow, iterable, outerBody, batchNames, inner, 0);
}

const SPLITTING = /^(chunk|split|tensor_split|unbind)$/;

function isPiecesOf(file: SourceFile, flow: ScopeFlow, expr: SyntaxNode, outerBody: SyntaxNode, batchNames: ReadonlySet<string>, at: SyntaxNode, depth: number): boolean {
  if (depth > 2) return false;
  if (expr.type === 'call') {
    const fn = childByField(expr, 'function');
    const name = fn === null ? '' : file.textOf(fn);
    const args = positionalArgs(expr);
    if (name === 'zip') return args.length > 0 && args.every((a) => isPiecesOf(file, flow, a, outerBody, batchNames, at, depth + 1));
    if (name === 'enumerate') return args.length > 0 && isPiecesOf(file, flow, args[0], outerBody, batchNames, at, depth + 1);
    const method = fn?.type === 'attribute' ? file.textOf(childByField(fn, 'attribute') ?? fn) : name.replace(/^torch\./, '');
    return SPLITTING.test(method);
  }
  if (expr.type !== 'identifier') return false;
  // A name the step computes from its own batch (`data_chunks = subdivide_batch(config, data, targets)`).
  const defs = flow.reachingDefs(file.textOf(expr), at);
  return (
    defs.length > 0 &&
    defs.every((d) => {
      if (d.kind !== 'assign' || d.value === null || !contains(outerBody, d.stmt)) return false;
      if (d.value.type === 'call' && isPiecesOf(file, flow, d.value, outerBody, batchNames, at, depth + 1)) return true;
      // Positional names only: `tqdm(loader, desc=f"epoch {epoch}")` is no piece of a batch.
      return d.value.type === 'call' && positionalArgs(d.value).some((a) => a.type === 'identifier' && batchNames.has(file.textOf(a)));
    })
  );
}

function positionalArgs(call: SyntaxNode): SyntaxNode[] {
  const args = childByField(call, 'arguments');
  return args === null ? [] : namedChildren(args).filter((a) => a.type !== 'keyword_argument' && a.type !== 'comment');
}

function identifiersIn(file: SourceFile, node: SyntaxNode | null): Set<string> {
  const out = new Set<string>();
  const stack = node === null ? [] : [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'identifier') out.add(file.textOf(n));
    stack.push(...namedChildren(n));
  }
  return out;
}

/** numpy calls that turn their argument into an array (and so every element into a number). */
const NUMPY_CONVERSION = /^numpy\.(array|asarray|mean|average|median|sum|std|var|max|min|stack|concatenate|save|savetxt)$/;

/**
 * The scope hands the container itself to numpy (`np.array(tr_loss)`, `np.save(path, np.array(losses))`,
 * `np.mean(accs)`): numpy raises on a tensor that requires grad ("Can't call numpy() on Tensor that requires
 * grad") and on a CUDA tensor, so in code that runs the container holds numbers (or detached CPU tensors),
 * whatever the call that produced them looks like (`metrics, g = self.fast_net.forward(task)` with a
 * `forward` of another file returning floats). An accumulator is judged by the containers it is stored in:
 * `tloss += trl` then `tr_loss.append(tloss / n)` with `np.array(tr_loss)`.
 */
function convertedByNumpy(file: SourceFile, scope: SyntaxNode, key: string): boolean {
  return nodesInScope(file, scope, CALL_TYPES).some(
    (call) => NUMPY_CONVERSION.test(calleeName(file, call) ?? '') && positionalArgs(call).some((a) => keyOf(file, a) === key),
  );
}

function storedOnlyIntoNumpy(file: SourceFile, scope: SyntaxNode, all: readonly Sink[], key: string): boolean {
  const stores = all.filter((s) => s.kind !== 'accumulate' && s.kind !== 'meter' && identifiersIn(file, s.value).has(key));
  return stores.length > 0 && stores.every((s) => {
    const container = containerKey(file, s.target);
    return container !== null && convertedByNumpy(file, scope, container);
  });
}

const WHOLE_SLICE = /^\[\s*:\s*\]$/;

function isEmptying(file: SourceFile, statement: SyntaxNode, key: string): boolean {
  return emptiedContainer(file, statement, false) === key;
}

/**
 * The key of the container a statement empties (`outs.clear()`, `del outs[:]`, `outs[:] = []`; with
 * `rebinding`, also `model.outs = []`), or null.
 */
function emptiedContainer(file: SourceFile, statement: SyntaxNode, rebinding: boolean): string | null {
  const n = statement.type === 'expression_statement' ? namedChildren(statement)[0] : statement;
  if (n === undefined) return null;
  if (n.type === 'call') {
    const fn = childByField(n, 'function');
    const args = childByField(n, 'arguments');
    return fn?.type === 'attribute' && file.textOf(childByField(fn, 'attribute') ?? fn) === 'clear' && (args === null || namedChildren(args).length === 0) ? keyOf(file, childByField(fn, 'object')) : null;
  }
  // `del outs[:]`
  if (n.type === 'delete_statement') {
    for (const t of namedChildren(n).flatMap((t) => (t.type === 'expression_list' ? namedChildren(t) : [t]))) {
      const whole = wholeSliceOf(file, t);
      if (whole !== null) return whole;
    }
    return null;
  }
  // `outs[:] = []`, or (rebinding) `model.outs = []`
  if (n.type === 'assignment') {
    const left = childByField(n, 'left');
    const right = childByField(n, 'right');
    if (left === null || right?.type !== 'list' || namedChildren(right).length > 0) return null;
    if (rebinding && left.type === 'attribute') return keyOf(file, left);
    return wholeSliceOf(file, left);
  }
  return null;
}

/** `outs[:]` -> the key of `outs`, the container it is the whole of; else null. */
function wholeSliceOf(file: SourceFile, n: SyntaxNode): string | null {
  if (n.type !== 'subscript') return null;
  const value = childByField(n, 'value');
  return value !== null && WHOLE_SLICE.test(file.textOf(n).slice(value.end - n.start).replace(/\s+/g, '')) ? keyOf(file, value) : null;
}

const LOOPS = ['for_statement', 'while_statement'];
const emptiedAttributesMemo = new VersionMemo<ReadonlySet<string>>('MH002.emptiedAttributes', true);

/**
 * The attribute names (`attn_maps` of `model.attn_maps.clear()`) that some loop of the file empties on
 * every iteration, by a statement of its body itself (not under an `if`; `with` bodies count).
 */
function attributesEmptiedEveryIteration(file: SourceFile): ReadonlySet<string> {
  return emptiedAttributesMemo.get(file, () => {
    const out = new Set<string>();
    for (const type of LOOPS) {
      for (const loop of file.nodesOfType(type)) {
        const body = childByField(loop, 'body');
        const statements = body === null ? [] : [...namedChildren(body)];
        for (let i = 0; i < statements.length; i++) {
          const st = statements[i];
          if (st.type === 'with_statement') {
            const inner = childByField(st, 'body');
            if (inner !== null) statements.push(...namedChildren(inner));
            continue;
          }
          const key = emptiedContainer(file, st, true);
          if (key !== null && key.includes('.')) out.add(key.slice(key.lastIndexOf('.') + 1));
        }
      }
    }
    return out;
  });
}

function emptiedAttributesSignature(file: SourceFile): string {
  return [...attributesEmptiedEveryIteration(file)].sort().join(',');
}

/**
 * `self.attn_maps.append(h)` in a module's method, while the training loop empties `model.attn_maps` on
 * every iteration (`model.attn_maps.clear()`, `model.aux_losses = []`): the attribute holds one step's
 * values, never a chain of steps (attention maps kept for one step's logging, MoE auxiliary losses). Matched
 * by the attribute's name: the loop holds the module under another name. Emptied every k steps (under an
 * `if`) still keeps k steps' graphs and stays reported.
 */
function attributeEmptiedByLoop(file: SourceFile, scope: SyntaxNode, key: string): boolean {
  if (!/^self\.\w+$/.test(key) || scope.type !== 'function_definition') return false;
  if (enclosingLoops(scope).length > 0) return false;
  return attributesEmptiedEveryIteration(file).has(key.slice('self.'.length));
}

/** The expression calls something (`step(x)[0]`, `model(x) * w`), not only names and indexes values. */
function hasCall(expr: SyntaxNode): boolean {
  const stack = [expr];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'call') return true;
    if (!LOOP_SCOPES.has(n.type)) stack.push(...n.children);
  }
  return false;
}

const LOOP_SCOPES = new Set(['function_definition', 'class_definition', 'lambda']);

/**
 * The innermost loop around the sink builds no graph of its own: no call in it (a forward pass, a
 * function returning a graph, a tensor op) and no arithmetic yields a value with history; it only indexes
 * and stores what was computed before it (`result[name] = {"img": img_gen[i], ...}` over the items of one
 * final forward pass). Whatever the number of iterations, that keeps the one graph the source already
 * holds, not one graph per step. Container methods (`append`) are moves, not graph ops.
 */
function loopBuildsNoGraph(file: SourceFile, flow: ScopeFlow, sink: Sink): boolean {
  const loop = enclosingLoops(sink.node)[0];
  const body = loop === undefined ? null : childByField(loop, 'body');
  if (body === null || /requires_grad|create_graph|backward/.test(file.textOf(body))) return false;
  const stack = [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    for (const c of n.children) if (!LOOP_SCOPES.has(c.type)) stack.push(c);
    if (n.type === 'call') {
      const fn = childByField(n, 'function');
      const method = fn?.type === 'attribute' ? childByField(fn, 'attribute') : null;
      if (method !== null && STORE_METHODS.has(file.textOf(method))) continue;
    } else if (n.type !== 'binary_operator' && n.type !== 'unary_operator') continue;
    if (flow.taintOf(n) === Taint.Tainted) return false;
  }
  // `loss, out = train_step(...)`: a tuple-returning call has no taint of its own, its elements do.
  for (const defs of flow.defs.values()) {
    for (const d of defs) {
      if (d.kind !== 'assign' || d.value === null || !contains(body, d.stmt) || !hasCall(d.value)) continue;
      if (flow.taintOfDef(d) === Taint.Tainted) return false;
    }
  }
  return true;
}

/**
 * A local container (bound in this function) outlives only loops that run no forward pass: no model call,
 * no function of the file returning a graph, no tensor made to require grad, no backward. What it stores
 * are pieces of graphs built before those loops (RetinaNet's per-class `finalResult[0].extend(scores[idx])`
 * over one forward's output; MAML's `fast_parameters = []` refilled each inner step from that step's
 * gradients, one entry per parameter), never one graph per step. A loop the container outlives that runs
 * a forward (the training loop around `per_class[i].append(out[:, i])`) still grows it; attributes,
 * globals and parameters live across calls and are left to the other tests.
 */
function outlivesOnlyGraphFreeLoops(file: SourceFile, flow: ScopeFlow, sink: Sink, key: string): boolean {
  if (key.includes('.')) return false;
  const rebinding = flow.reachingDefs(key, sink.node).filter((d: Def) => d.kind !== 'store' && d.kind !== 'aug');
  if (rebinding.length === 0 || rebinding.some((d) => d.kind === 'param' || d.kind === 'with')) return false;
  const outlived = enclosingLoops(sink.node).filter((l) => contains(flow.scope, l) && rebinding.every((d) => !contains(l, d.stmt)));
  if (outlived.length === 0) return false;
  const graphReturning = new Set(graphReturningFunctions(file));
  for (const [name, shape] of tupleReturningFunctions(file)) if (shape.includes(Taint.Tainted)) graphReturning.add(name);
  return outlived.every((loop) => {
    const body = childByField(loop, 'body');
    if (body === null || /requires_grad|create_graph|backward/.test(file.textOf(body))) return false;
    const stack = [body];
    while (stack.length > 0) {
      const n = stack.pop()!;
      for (const c of n.children) if (!LOOP_SCOPES.has(c.type)) stack.push(c);
      if (n.type !== 'call') continue;
      if (forwardReceiver(file, n) !== null) return false;
      const fn = childByField(n, 'function');
      if (fn?.type === 'identifier' && graphReturning.has(file.textOf(fn))) return false;
    }
    return true;
  });
}

/** Methods that switch history back on: their result is no frozen network's output any more. */
const RECORDING = /^(requires_grad_|retain_grad|backward)$/;

/**
 * The value is the output of a network the file freezes (`teacher.requires_grad_(False)`, `p.requires_grad
 * = False` over `encoder.parameters()`), run on inputs without history, or a piece or method result of one
 * (`t_out.logits`, `feats[0]`, `t.softmax(-1)`): no parameter and no input records, so autograd builds no
 * graph and storing it keeps none (a frozen teacher's targets, a frozen encoder's features). A frozen
 * network fed a value with history (`teacher(student(x))`) still carries the student's graph.
 */
function fromFrozenNetwork(file: SourceFile, flow: ScopeFlow, scope: SyntaxNode, expr: SyntaxNode, depth: number): boolean {
  if (depth > 4) return false;
  const argsClean = (call: SyntaxNode): boolean => {
    const args = childByField(call, 'arguments');
    return args === null || namedChildren(args).every((a) => a.type === 'comment' || flow.taintOf(a.type === 'keyword_argument' ? childByField(a, 'value') : a) !== Taint.Tainted);
  };
  switch (expr.type) {
    case 'parenthesized_expression': {
      const inner = namedChildren(expr)[0];
      return inner !== undefined && fromFrozenNetwork(file, flow, scope, inner, depth + 1);
    }
    case 'call': {
      const receiver = forwardReceiver(file, expr);
      if (receiver !== null) return isFrozenNetwork(file, receiver, scope) && argsClean(expr);
      const fn = childByField(expr, 'function');
      const object = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
      if (object === null || RECORDING.test(file.textOf(childByField(fn!, 'attribute') ?? fn!))) return false;
      return argsClean(expr) && fromFrozenNetwork(file, flow, scope, object, depth + 1);
    }
    case 'subscript': {
      const value = childByField(expr, 'value');
      return value !== null && fromFrozenNetwork(file, flow, scope, value, depth + 1);
    }
    case 'attribute': {
      const object = childByField(expr, 'object');
      return object !== null && fromFrozenNetwork(file, flow, scope, object, depth + 1);
    }
    case 'identifier': {
      const defs = flow.reachingDefs(file.textOf(expr), expr);
      return defs.length > 0 && defs.every((d) => d.kind === 'assign' && d.value !== null && fromFrozenNetwork(file, flow, scope, d.value, depth + 1));
    }
    default:
      return false;
  }
}

const findingsCache = new ScopeFindingsMemo('MH002');

function check(file: SourceFile): RuleFinding[] {
  const signature = combine(file, 'MH002', () => [factsSignature(file), consumedSignature(file), meterSignature(file), [...graphReturningFunctions(file)].join(','), [...cleanReturningFunctions(file)].join(','), tupleReturningSignature(file), learnedLeavesSignature(file), inferenceSignature(file), resolutionSignature(file), emptiedAttributesSignature(file), file.session.project?.lookup.stamp ?? '']);
  // A nested function's findings read its taints, which read grad state around the function node.
  return checkScopes(file, findingsCache, signature, (scope) => checkScope(file, scope), (scope) => scopeSignature(file, scope, ''));
}

/**
 * The scope is (or is nested in) a pytest/unittest function: it checks behaviour with small inputs, and a
 * list of a reference decoder's states kept until its asserts is the point of the test, not a leak
 * (MH001 and MH015 leave unit tests alone for the same reason).
 */
function inUnitTest(file: SourceFile, scope: SyntaxNode): boolean {
  for (let fn: SyntaxNode | null = scope.type === 'function_definition' ? scope : enclosingFunction(scope); fn !== null; fn = enclosingFunction(fn)) {
    if (isTestFunction(file, fn)) return true;
  }
  return false;
}

function checkScope(file: SourceFile, scope: SyntaxNode): RuleFinding[] {
  if (inUnitTest(file, scope)) return [];
  // An update method that only steps optimizers can still derive a value from a learned leaf.
  const findings: RuleFinding[] = derivedFromLearnedLeaf(file, scope);
  if (!hasTaintSource(file, scope) && !callsGraphReturning(file, scope)) return findings; // nothing here can carry history
  const allSinks = sinks(file, scope);
  for (const sink of allSinks) {
    if (gradOffAt(file, sink.node)) continue;
    const flow = flowOf(file, scope);
    if (flow.taintOf(sink.value) !== Taint.Tainted) continue;
    // `tloss += trl` with `trl` a float returned by a method of another module's class: no history.
    const tainted = taintedLeaves(flow, sink.value);
    if (tainted.length > 0 && tainted.every((l) => numberThroughProject(file, l) || fromFrozenNetwork(file, flow, scope, l, 0))) continue;
    const key = containerKey(file, sink.target);
    if (key === null) continue;
    // `[arr.append(el) for arr, el in zip((policies, Qs), (policy, Q))]`: the containers are the lists zipped in.
    const containers = comprehensionContainers(file, sink.node, key) ?? [key];
    if (!containers.some((k) => persists(flow, sink, k) && !isConsumedByBackward(file, scope, k) && !handedToTraining(file, scope, k))) continue;
    if (isOverwrittenSlot(file, sink)) continue;
    if ((sink.kind === 'append' || sink.kind === 'store') && containers.every((k) => emptiedEveryIteration(file, sink, k))) continue;
    // Appended outside any loop of this method, emptied every iteration by the file's loop that calls it.
    if ((sink.kind === 'append' || sink.kind === 'store') && enclosingLoops(sink.node).length === 0 && containers.every((k) => attributeEmptiedByLoop(file, scope, k))) continue;
    if (sink.kind !== 'meter' && containers.every((k) => piecesOfOneStep(file, flow, sink, k))) continue;
    if (sink.kind === 'accumulate' ? storedOnlyIntoNumpy(file, scope, allSinks, key) : sink.kind !== 'meter' && containers.every((k) => convertedByNumpy(file, scope, k))) continue;
    if (loopBuildsNoGraph(file, flow, sink)) continue;
    if (sink.kind !== 'meter' && containers.every((k) => outlivesOnlyGraphFreeLoops(file, flow, sink, k))) continue;
    const valueText = file.textOf(sink.value);
    const short = valueText.length > 40 ? `${valueText.slice(0, 37)}...` : valueText;
    const leaves = taintedLeaves(flow, sink.value);
    let message: string;
    let fix: Fix | null = null;
    if (sink.kind === 'accumulate') {
      const method = accumulatorMethod(file, flow, sink, key, leaves);
      const fixable = leaves.length > 0 && leaves.every((l) => !NOT_A_TENSOR.has(l.type) && mayAppendTensorMethod(file, flow, l));
      const edits = fixable ? leaves.map((l) => appendCall(file, l, method)) : [];
      // Show the value as the fix would leave it (`loss.item() * x.size(0)`), never `a * b.item()`.
      const suggested = fixable ? shorten(editedText(file, sink.value, edits)) : PRIMARY.has(sink.value.type) ? `${short}.item()` : `(${short}).item()`;
      message =
        `\`${file.textOf(sink.node).split('\n')[0]}\` adds a tensor with autograd history to \`${key}\`, which outlives the iteration: every step's graph stays linked and alive. ` +
        `Accumulate \`${suggested}\` (or \`.${method === 'item' ? 'detach' : 'item'}()\`) instead.`;
      if (fixable) fix = { title: `Accumulate with .${method}()`, edits };
    } else if (sink.kind === 'meter') {
      const method = sink.asTensor === true ? 'detach' : 'item';
      message =
        `\`${file.textOf(sink.node).split('\n')[0]}\` hands a tensor with autograd history to \`${key}\`, which keeps it across iterations: every step's graph stays alive. ` +
        `Pass \`${short}.${method}()\` instead.`;
      if (!NOT_A_TENSOR.has(sink.value.type) && mayAppendTensorMethod(file, flow, sink.value)) fix = { title: `Pass ${short}.${method}()`, edits: [appendCall(file, sink.value, method)] };
    } else {
      message =
        `Storing \`${short}\` in \`${key}\` keeps its autograd graph alive after the step (and its activations if no backward runs through it). ` +
        (NOT_A_TENSOR.has(sink.value.type)
          ? 'Store detached tensors in it (`.detach()`, or `.item()` for scalars).'
          : `Store \`${PRIMARY.has(sink.value.type) ? short : `(${short})`}.detach()\` (or \`.item()\` for a scalar).`);
      if (leaves.length > 0 && !NOT_A_TENSOR.has(sink.value.type) && mayAppendTensorMethod(file, flow, sink.value) && (sink.node.type !== 'call' || !/\.extend$/.test(file.textOf(childByField(sink.node, 'function') ?? sink.node)))) {
        fix = { title: 'Store a detached tensor', edits: [appendCall(file, sink.value, 'detach')] };
      }
    }
    findings.push({ start: sink.node.start, end: sink.node.end, message, fix });
  }
  findings.push(...carriedState(file, scope));
  return findings;
}

/** Conversions that leave no history (or `.data`, which shares storage without it). */
const NO_HISTORY = /\.(detach|item|tolist|numpy)\s*\(|\.data\b/;
/** Calls whose result is a Python number, without history: `float(self.log_alpha.exp())`. */
const TO_NUMBER = /^(float|int|bool|round|math\.\w+)$/;

/**
 * `self.alpha = self.log_alpha.exp()` in an update method, with `self.log_alpha` a tensor its optimizer
 * trains (learned-leaves.ts): the attribute keeps that op's graph until the next update recomputes it, and
 * every loss built from it meanwhile backpropagates into the leaf through that stale graph. `__init__` runs
 * once (its value is replaced by the first update); an alias (`self.a = self.log_alpha`) is the leaf itself.
 * No autofix: `.detach()` also stops the gradient those losses send into the leaf, which may be intended.
 */
function derivedFromLearnedLeaf(file: SourceFile, scope: SyntaxNode): RuleFinding[] {
  if (scope.type !== 'function_definition' || file.textOf(childByField(scope, 'name') ?? scope) === '__init__') return [];
  const leaves = learnedLeaves(file);
  if (leaves.size === 0) return [];
  const findings: RuleFinding[] = [];
  for (const asg of nodesInScope(file, scope, ASSIGNMENTS)) {
    const left = childByField(asg, 'left');
    const value = childByField(asg, 'right');
    const key = left?.type === 'attribute' ? keyOf(file, left) : null;
    if (key === null || value === null || leaves.has(key) || value.type === 'attribute' || value.type === 'identifier') continue;
    if (NO_HISTORY.test(file.textOf(value)) || gradOffAt(file, asg) || TO_NUMBER.test(calleeName(file, value) ?? '')) continue;
    // `self.optimizer_a = optim.Adam([self.alpha], lr=lr)` (in a set-up method other than `__init__`): the
    // optimizer holds the leaf itself, no value computed from it.
    if (buildsOptimizer(file, value)) continue;
    const leaf = leafIn(file, value, leaves);
    if (leaf === null) continue;
    const text = shorten(file.textOf(value));
    findings.push({
      start: asg.start,
      end: asg.end,
      message:
        `\`${key}\` keeps \`${text}\` with its autograd history until the next update recomputes it: the graph back to \`${leaf}\` (a tensor an optimizer trains) stays alive, ` +
        `and every loss built from \`${key}\` meanwhile backpropagates into \`${leaf}\` through it. Store \`(${text}).detach()\` (or \`.item()\`) when \`${key}\` is a coefficient, not a path for gradients.`,
      fix: null,
    });
  }
  return findings;
}

/** The first learned leaf the expression reads, or null. */
function leafIn(file: SourceFile, expr: SyntaxNode, leaves: ReadonlySet<string>): string | null {
  const stack = [expr];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'attribute' || n.type === 'identifier') {
      const key = keyOf(file, n);
      if (key !== null && leaves.has(key)) return key;
    }
    for (const c of n.children) stack.push(c);
  }
  return null;
}

/**
 * Recurrent state carried between per-step iterations with its history: `out, hidden = model(x, hidden)`
 * in a loop that backpropagates every step, with no detach in between. Each step's graph then links to
 * all the previous ones (and backward needs retain_graph=True to run at all). A loop without its own
 * backward is an unrolled sequence inside one graph (seq2seq decoders, time steps in forward): fine.
 */
const ASSIGNMENTS = new Set(['assignment']);

function carriedState(file: SourceFile, scope: SyntaxNode): RuleFinding[] {
  const findings: RuleFinding[] = [];
  for (const asg of nodesInScope(file, scope, ASSIGNMENTS)) {
    const value = childByField(asg, 'right');
    const left = childByField(asg, 'left');
    if (value === null || left === null || value.type !== 'call' || forwardReceiver(file, value) === null) continue;
    const loop = enclosingLoops(asg)[0];
    const body = loop === undefined ? null : childByField(loop, 'body');
    if (body === null || gradOffAt(file, asg)) continue;
    const flow = flowOf(file, scope);
    if (flow.taintOf(value) !== Taint.Tainted || !backwardInBody(file, body, scope)) continue;
    const targets = new Set(targetKeysOf(file, left));
    for (const use of flow.dataKeys(value)) {
      const key = keyOf(file, use);
      if (key === null || !targets.has(key)) continue;
      const defsInBody = (flow.defs.get(key) ?? []).filter((d) => d.stmt !== statementOf(asg) && (d.kind === 'for' ? d.stmt === loop : contains(body, d.stmt)));
      // Any detach of the state inside the loop (even every k steps) bounds the chain.
      if (defsInBody.some((d) => d.kind === 'for' || flow.taintOfDef(d) !== Taint.Tainted)) continue;
      if (defsInBody.some((d) => dominates(d, use) && d.effective <= use.start)) continue;
      findings.push({
        start: use.start,
        end: use.end,
        message:
          `\`${key}\` is carried into the next iteration with its autograd history: every step's graph stays linked to the previous ones, so memory grows for the whole loop (and backward needs retain_graph=True). ` +
          `Detach it at the start of each step (\`${key} = ${key}.detach()\`, or detach each tensor of a tuple).`,
        fix: null,
      });
      break;
    }
  }
  return findings;
}

function backwardInBody(file: SourceFile, body: SyntaxNode, scope: SyntaxNode): boolean {
  // Only the body's calls: starting the scan at the file's first call made each loop cost the file.
  const calls = file.nodesOfType('call');
  for (let i = firstStartingAtOrAfter(calls, body.start); i < calls.length; i++) {
    const call = calls[i];
    if (call.start >= body.end) break;
    if (backwardTargets(file, call) !== null && scopeOf(call) === scope) return true;
  }
  return false;
}

function statementOf(n: SyntaxNode): SyntaxNode {
  let s = n;
  while (s.parent !== null && s.parent.type !== 'block' && s.parent.type !== 'module') s = s.parent;
  return s;
}

function targetKeysOf(file: SourceFile, target: SyntaxNode): string[] {
  const key = keyOf(file, target);
  if (key !== null) return [key];
  return target.children.filter((c) => c.named).flatMap((c) => targetKeysOf(file, c));
}

export const retainedGraph: Rule = {
  code: 'MH002',
  name: 'retained-graph',
  severity: 'warning',
  summary: 'A tensor with autograd history accumulated or stored across iterations keeps every step\'s graph alive; use .item() or .detach().',
  check,
};

export const rule = retainedGraph;
