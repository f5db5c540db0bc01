// MH004 retain-graph-true: `backward(retain_graph=True)` keeps the graph's saved activations after the
// backward pass. Flagged only when nothing can backpropagate through that graph again: no later
// backward in the scope or loop, no history shared across iterations, no graph handed elsewhere.
import { childByField, firstNamedChild, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import type { Rule, RuleFinding } from '../types';
import { enclosingLoops, keywordArgument } from '../analysis/context';
import { backwardTargets, forwardReceiver, keyOf } from '../analysis/models';
import { dominates, factsSignature, flowOf, scopeSignature, Taint, type Def, type ScopeFlow } from '../analysis/flow';
import { checkScopes, ScopeFindingsMemo } from '../analysis/unitcache';
import { nodesInScope } from '../analysis/scope-nodes';
import { callsNamed } from '../analysis/calls';
import { VersionMemo } from '../session';
import { discardedDetaches } from '../analysis/discarded-detach';

function retainGraphArgument(file: SourceFile, call: SyntaxNode): SyntaxNode | null {
  const args = childByField(call, 'arguments');
  for (const a of args?.children ?? []) {
    if (a.type !== 'keyword_argument') continue;
    const name = childByField(a, 'name');
    const value = childByField(a, 'value');
    if (name !== null && value !== null && file.textOf(name) === 'retain_graph' && file.textOf(value) === 'True') return a;
  }
  return null;
}

function within(outer: SyntaxNode, inner: SyntaxNode): boolean {
  return outer.start <= inner.start && inner.end <= outer.end;
}

/**
 * Another backward-like call that may run through this graph again: one after `call` in the scope, or
 * one earlier in a loop body around it unless neither graph carries history from one iteration into the
 * next (then the next iteration's earlier backward runs on a freshly built graph, as in a GAN's G step
 * before its D step).
 */
function anotherBackward(file: SourceFile, scope: SyntaxNode, call: SyntaxNode, loops: readonly SyntaxNode[]): boolean {
  const earlier: SyntaxNode[] = [];
  if (laterOrLoopBackward(file, scope, call, loops, earlier)) return true;
  if (earlier.length === 0) return false;
  const flow = flowOf(file, scope);
  const targets = backwardTargets(file, call) ?? [];
  const loop = loops[0];
  if (sharesHistoryAcrossIterations(flow, targets, loop)) return true;
  return earlier.some((other) => sharesHistoryAcrossIterations(flow, backwardTargets(file, other) ?? [], loop));
}

const backwardLikeMemo = new VersionMemo<readonly SyntaxNode[]>('MH004.backwardLikeCalls');

/** Every call that backwardTargets may accept (its callee ends in one of its names), in document order. */
function backwardLikeCalls(file: SourceFile): readonly SyntaxNode[] {
  return backwardLikeMemo.get(file, (f) => [...callsNamed(f, 'backward'), ...callsNamed(f, 'grad'), ...callsNamed(f, 'manual_backward')].sort((a, b) => a.start - b.start));
}

function laterOrLoopBackward(file: SourceFile, scope: SyntaxNode, call: SyntaxNode, loops: readonly SyntaxNode[], earlier: SyntaxNode[]): boolean {
  // Only the scope's backward-like calls: scanning every call of the scope per call is quadratic.
  const calls = backwardLikeCalls(file);
  for (let i = firstStartingAtOrAfter(calls, scope.start); i < calls.length; i++) {
    const other = calls[i];
    if (other === call) continue;
    if (other.start >= scope.end) break;
    if (backwardTargets(file, other) === null) continue;
    if (other.start > call.start && within(scope, other)) {
      // A later backward in the same pass whose graph shares nothing with this one (SAC's V, Q and
      // policy losses on separately computed, detached targets) cannot run through it.
      if (loops.length > 0 && within(childByField(loops[0], 'body') ?? loops[0], other) && disjointGraphs(file, scope, call, other)) continue;
      return true;
    }
    if (loops.length > 0 && within(childByField(loops[0], 'body') ?? loops[0], other)) {
      earlier.push(other);
      continue;
    }
    if (loops.some((l) => within(childByField(l, 'body') ?? l, other))) return true;
  }
  return false;
}

/**
 * What a backward's graph is made of, as far as this scope shows: the tainted definitions and forward
 * calls its target is computed from (not through `.detach()`), and the names of unknown origin it reads.
 */
function graphParts(flow: ScopeFlow, roots: readonly SyntaxNode[]): Set<unknown> | null {
  const file = flow.file;
  const parts = new Set<unknown>();
  const queue: SyntaxNode[] = [];
  const take = (expr: SyntaxNode): void => {
    queue.push(...flow.dataKeys(expr));
    const stack = [expr];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n.type === 'lambda' || n.type === 'function_definition') continue;
      if (n.type === 'call' && forwardReceiver(file, n) !== null) parts.add(n);
      stack.push(...n.children);
    }
  };
  roots.forEach(take);
  let steps = 0;
  while (queue.length > 0) {
    if (steps++ > 500) return null;
    const use = queue.pop()!;
    const key = keyOf(file, use);
    if (key === null || key === 'self' || key === 'cls' || detachedUse(flow, use)) continue;
    const defs = flow.reachingDefs(key, use).filter((d) => d.kind !== 'param');
    if (defs.length === 0) {
      if (flow.taintOf(use) !== Taint.Clean) parts.add(`?${key}`);
      continue;
    }
    for (const d of defs) {
      if (parts.has(d) || flow.taintOfDef(d) === Taint.Clean) continue;
      parts.add(d);
      if (d.value === null) parts.add(`?${key}`);
      else take(d.value);
    }
  }
  return parts;
}

function disjointGraphs(file: SourceFile, scope: SyntaxNode, call: SyntaxNode, other: SyntaxNode): boolean {
  const flow = flowOf(file, scope);
  const a = graphParts(flow, backwardTargets(file, call) ?? []);
  const b = graphParts(flow, backwardTargets(file, other) ?? []);
  if (a === null || b === null || a.size === 0 || b.size === 0) return false;
  for (const x of a) if (b.has(x)) return false;
  return true;
}

/**
 * Does the backpropagated value depend on history from before this iteration: a tensor with history
 * computed before the loop, a value carried from the previous iteration, or an iterable of such tensors?
 */
function sharesHistoryAcrossIterations(flow: ScopeFlow, roots: readonly SyntaxNode[], loop: SyntaxNode): boolean {
  const file = flow.file;
  const body = childByField(loop, 'body');
  if (body === null) return true;
  const seen = new Set<Def>();
  const queue: SyntaxNode[] = roots.flatMap((r) => flow.dataKeys(r));
  let steps = 0;
  while (queue.length > 0 && steps++ < 500) {
    const use = queue.pop()!;
    const key = keyOf(file, use);
    if (key === null || detachedUse(flow, use)) continue;
    const all = flow.defs.get(key) ?? [];
    if (all.length === 0 || all.every((d) => d.kind === 'param')) {
      // `self.policy_net(...)`, `self.get_action(...)`: the receiver of a method is not data.
      if (key === 'self' || key === 'cls') continue;
      // A parameter, free name or attribute read as data in the loop: it may hold a graph built before it.
      if (isTensorOperand(file, use) && flow.taintOf(use) !== Taint.Clean) return true;
      continue;
    }
    const reaching = flow.reachingDefs(key, use);
    // Carried from the previous iteration: defined later in the loop body than this use.
    // (a def in a branch, `if step % k == 0: h = h.detach()`, does not cut the carry on every path).
    // The loop's own target is rebound every iteration.
    const reachesInBody = reaching.some((d) => (d.kind === 'for' ? d.stmt === loop : within(body, d.stmt) && d.kind !== 'store' && d.kind !== 'aug' && dominates(d, use)));
    if (!reachesInBody) {
      for (const d of all) {
        if (within(body, d.stmt) && d.effective > use.start && d.kind !== 'store' && flow.taintOfDef(d) !== Taint.Clean) return true;
      }
    }
    for (const d of reaching) {
      if (seen.has(d)) continue;
      seen.add(d);
      if (d.kind === 'for' && d.stmt === loop) {
        if (flow.taintOf(d.value) === Taint.Tainted) return true; // `for loss in losses:`
        continue;
      }
      if (!within(body, d.stmt)) {
        if (flow.taintOfDef(d) === Taint.Tainted) return true; // `feats = backbone(x)` before the loop
        continue;
      }
      if (flow.taintOfDef(d) === Taint.Clean) continue; // `hidden = hidden.detach()` cuts the history
      queue.push(...flow.dataKeys(d.value));
    }
  }
  return false;
}

/**
 * A name the loop body tries to detach with a dropped result (`for s in state: s.detach()`) while the body
 * rebinds it with history from a forward pass (`output, state = model(X, state)`): the carried state the
 * author meant to cut. Null when there is none.
 */
function carriedDespiteDetach(flow: ScopeFlow, loop: SyntaxNode): string | null {
  const body = childByField(loop, 'body');
  if (body === null) return null;
  for (const key of discardedDetaches(flow.file, body)) {
    const rebound = (flow.defs.get(key) ?? []).some((d) => d.kind === 'assign' && within(body, d.stmt) && d.value !== null && d.value.type === 'call' && forwardReceiver(flow.file, d.value) !== null && flow.taintOfDef(d) === Taint.Tainted);
    if (rebound) return key;
  }
  return null;
}

/** A name read only through a history-free call on it or on arithmetic it is part of: `target.detach()`, `x.item()`, `(a * b).detach()`. */
function detachedUse(flow: ScopeFlow, use: SyntaxNode): boolean {
  let n = use;
  for (let i = 0; i < 8 && n.parent !== null; i++) {
    const p: SyntaxNode = n.parent;
    if (p.type === 'attribute' && n.field === 'object') {
      const call = p.parent;
      if (call !== null && call.type === 'call' && p.field === 'function') {
        if (flow.taintOf(call) === Taint.Clean) return true;
        n = call;
        continue;
      }
      n = p;
      continue;
    }
    // `(log_prob - target).detach()`: every operand of the detached arithmetic is detached.
    if (p.type === 'parenthesized_expression' || p.type === 'binary_operator' || p.type === 'unary_operator') {
      n = p;
      continue;
    }
    return false;
  }
  return false;
}

// Arguments that configure a conversion rather than feed data: `x.to(device)`, `x.view(n, -1)`.
const CONFIG_METHODS = new Set(['to', 'cuda', 'cpu', 'type', 'view', 'reshape', 'expand', 'repeat', 'permute', 'size', 'narrow', 'float', 'long', 'half', 'contiguous', 'unsqueeze', 'squeeze', 'flatten', 'transpose']);

function isTensorOperand(file: SourceFile, use: SyntaxNode): boolean {
  const parent = use.parent;
  if (parent === null) return true;
  if (parent.type === 'keyword_argument') return false;
  if (parent.type === 'argument_list') {
    const fn = parent.parent === null ? null : childByField(parent.parent, 'function');
    if (fn?.type === 'attribute' && CONFIG_METHODS.has(file.textOf(childByField(fn, 'attribute') ?? fn))) return false;
  }
  return true;
}

/**
 * Outside loops: can a later backward elsewhere reach this graph? When it was built from attributes or
 * free variables (`self.fake_B`), or the function hands a tensor with history out (return, attribute,
 * container), another backward (in a caller, another method) may reuse it.
 */
function graphEscapes(flow: ScopeFlow, roots: readonly SyntaxNode[]): boolean {
  const file = flow.file;
  const seenKeys = new Set<string>();
  const queue: SyntaxNode[] = roots.flatMap((r) => flow.dataKeys(r));
  let steps = 0;
  while (queue.length > 0 && steps++ < 500) {
    const use = queue.pop()!;
    const key = keyOf(file, use);
    if (key === null || seenKeys.has(key)) continue;
    seenKeys.add(key);
    const defs = flow.reachingDefs(key, use);
    if (defs.length === 0) {
      if (flow.taintOf(use) !== Taint.Clean) return true;
      continue;
    }
    for (const d of defs) if (d.kind !== 'param' && flow.taintOfDef(d) !== Taint.Clean) queue.push(...flow.dataKeys(d.value));
  }
  // Tensors with history handed out of the function.
  const body = flow.scope.type === 'function_definition' ? childByField(flow.scope, 'body') : flow.scope;
  const stack = body === null ? [] : [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') continue;
    if ((n.type === 'return_statement' || n.type === 'yield') && flow.scope.type === 'function_definition') {
      const value = firstNamedChild(n);
      if (value !== null && flow.taintOf(value) === Taint.Tainted) return true;
    }
    if (n.type === 'assignment') {
      const left = childByField(n, 'left');
      if ((left?.type === 'attribute' || left?.type === 'subscript') && flow.taintOf(childByField(n, 'right')) === Taint.Tainted) return true;
    }
    for (const c of n.children) stack.push(c);
  }
  for (const defs of flow.defs.values()) for (const d of defs) if (d.kind === 'store' && flow.taintOfDef(d) === Taint.Tainted) return true;
  return false;
}

const findingsCache = new ScopeFindingsMemo('MH004');
const CALLS = new Set(['call']);

function check(file: SourceFile): RuleFinding[] {
  if (!file.text.includes('retain_graph')) return [];
  // A nested function's checks read its taints, which read grad state around the function node.
  return checkScopes(file, findingsCache, factsSignature(file), (scope) => checkScope(file, scope), (scope) => scopeSignature(file, scope, ''));
}

function checkScope(file: SourceFile, scope: SyntaxNode): RuleFinding[] {
  const findings: RuleFinding[] = [];
  if (!file.textOf(scope).includes('retain_graph')) return findings;
  for (const call of nodesInScope(file, scope, CALLS)) {
    const argument = retainGraphArgument(file, call);
    if (argument === null) continue;
    const targets = backwardTargets(file, call);
    if (targets === null || targets.length === 0) continue;
    const createGraph = keywordArgument(file, call, 'create_graph');
    if (createGraph !== null && file.textOf(createGraph) !== 'False') continue;
    const loops = enclosingLoops(call);
    if (anotherBackward(file, scope, call, loops)) continue;
    const flow = flowOf(file, scope);
    if (loops.length > 0 ? sharesHistoryAcrossIterations(flow, targets, loops[0]) : graphEscapes(flow, targets)) {
      // The history is shared only because a detach meant to cut it drops its result: the retain silences the
      // error that says so, and keeps every iteration's graph alive.
      const state = loops.length > 0 ? carriedDespiteDetach(flow, loops[0]) : null;
      if (state !== null) {
        findings.push({
          start: argument.start,
          end: argument.end,
          message:
            `\`retain_graph=True\` is needed here only because \`${state}\` is carried into the next iteration with its history: the \`.detach()\` on it discards its result (it returns a new tensor), ` +
            `so every iteration's graph and activations stay alive for the whole loop. Detach the state for real (\`${state} = ${state}.detach()\`, or \`.detach_()\` on each tensor) and remove \`retain_graph=True\`.`,
          fix: null,
        });
      }
      continue;
    }
    findings.push({
      start: argument.start,
      end: argument.end,
      message:
        '`retain_graph=True` keeps this graph and its saved activations allocated after backward, but nothing backpropagates through it again. ' +
        'Remove it; if it silenced "Trying to backward through the graph a second time", detach the state carried between iterations instead.',
      fix: null,
    });
  }
  return findings;
}

export const retainGraphTrue: Rule = {
  code: 'MH004',
  name: 'retain-graph-true',
  severity: 'warning',
  summary: 'backward(retain_graph=True) with no later backward through the same graph keeps its activations alive.',
  check,
};

export const rule = retainGraphTrue;
