// Which stored values are consumed by a backward pass: keeping a graph alive on purpose (REINFORCE's
// saved log-probs, a multi-task `loss += head_loss`, sub-losses stacked and backpropagated) is not
// a leak. Computed once per file: the data dependencies of every backward-like call, and of the
// returned values of functions that do not backpropagate themselves (their caller may).
import type { SourceFile, SyntaxNode } from '../syntax';
import { flowOf, flowSignature, scopeSignature, Taint, type ScopeFlow } from './flow';
import { combine, scopesOf } from './unitcache';
import { nodesInScope } from './scope-nodes';
import { ModuleCodeMemo, NodeMemo, VersionMemo } from '../session';
import { backwardTargets, callsByScope, computesGradients, hasTaintSource, keyOf } from './models';

interface Consumed {
  /** Keys reached from a backward (or a returned value), per scope. */
  readonly byScope: Map<SyntaxNode, Set<string>>;
  /** Last segments of attribute keys reached anywhere (`saved_log_probs` for `self.saved_log_probs`). */
  readonly attributes: Set<string>;
  /** Names reached without a definition in their scope (module-level or free variables). */
  readonly free: Set<string>;
}

interface ScopeConsumption {
  readonly keys: Set<string>;
  readonly attributes: Set<string>;
  readonly free: Set<string>;
}

const cache = new VersionMemo<Consumed>('consumers.consumed');
const scopeCache = new NodeMemo<ScopeConsumption>('consumers.scope');
const moduleCache = new ModuleCodeMemo<ScopeConsumption>('consumers.module');
const MAX_KEYS = 4000;
const RETURNS = new Set(['return_statement', 'yield']);

/** What one scope's backward calls (and, if it does not backpropagate, its returns) consume. */
function scopeConsumption(file: SourceFile, scope: SyntaxNode): ScopeConsumption {
  const compute = (): ScopeConsumption => {
    const c: ScopeConsumption = { keys: new Set(), attributes: new Set(), free: new Set() };
    const flow = flowOf(file, scope);
    for (const call of callsByScope(file).get(scope)?.backwards ?? []) trace(c, flow, backwardTargets(file, call) ?? []);
    if (scope.type === 'function_definition' && hasTaintSource(file, scope) && !computesGradients(file, scope)) {
      for (const ret of nodesInScope(file, scope, RETURNS)) {
        const value = ret.children.find((n) => n.named && n.type !== 'comment');
        // Only a returned value that may carry history can be backpropagated by the caller.
        if (value !== undefined && flow.taintOf(value) !== Taint.Clean) trace(c, flow, [value]);
      }
    }
    return c;
  };
  return scope.type === 'module' ? moduleCache.get(file, flowSignature(file), compute) : scopeCache.get(file, scope, scopeSignature(file, scope, flowSignature(file)), compute);
}

function consumed(file: SourceFile): Consumed {
  return cache.get(file, computeConsumed);
}

function computeConsumed(file: SourceFile): Consumed {
  const c: Consumed = { byScope: new Map(), attributes: new Set(), free: new Set() };
  for (const scope of scopesOf(file)) {
    const part = scopeConsumption(file, scope);
    if (part.keys.size > 0) c.byScope.set(scope, part.keys);
    for (const a of part.attributes) c.attributes.add(a);
    for (const f of part.free) c.free.add(f);
  }
  return c;
}

/** Changes whenever what is consumed across scopes (attributes, globals, module-level keys) changes. */
export function consumedSignature(file: SourceFile): string {
  return combine(file, 'consumed', () => {
    const c = consumed(file);
    const list = (set: ReadonlySet<string> | undefined): string => [...(set ?? [])].sort().join(',');
    return [list(c.attributes), list(c.free), list(c.byScope.get(file.root))];
  });
}

function trace(c: ScopeConsumption, flow: ScopeFlow, roots: readonly SyntaxNode[]): void {
  const file = flow.file;
  const seen = c.keys;
  const queue: string[] = [];
  const push = (key: string): void => {
    if (seen.has(key) || seen.size > MAX_KEYS) return;
    seen.add(key);
    queue.push(key);
    const dot = key.lastIndexOf('.');
    if (dot >= 0) {
      c.attributes.add(key.slice(dot + 1));
      push(key.slice(0, dot)); // `outputs.loss` depends on `outputs`
    }
  };
  const pushExpr = (expr: SyntaxNode | null): void => {
    for (const n of flow.dataKeys(expr)) {
      const key = keyOf(file, n);
      if (key !== null) push(key);
    }
  };
  for (const r of roots) pushExpr(r);
  while (queue.length > 0) {
    const key = queue.pop()!;
    const defs = flow.defs.get(key);
    if (defs === undefined || defs.every((d) => d.kind === 'param')) {
      if (!key.includes('.')) c.free.add(key);
      continue;
    }
    for (const d of defs) pushExpr(d.value);
  }
}

/**
 * True when what `container` holds in `scope` feeds a backward pass (or is returned by a function that
 * does not backpropagate itself), so keeping its history is intended.
 */
export function isConsumedByBackward(file: SourceFile, scope: SyntaxNode, container: string): boolean {
  const c = consumed(file);
  if (c.byScope.get(scope)?.has(container) === true) return true;
  const dot = container.lastIndexOf('.');
  if (dot >= 0) return c.attributes.has(container.slice(dot + 1));
  const defs = flowOf(file, scope).defs.get(container);
  if (scope.type === 'module' || defs === undefined) return c.free.has(container) || (c.byScope.get(moduleOf(scope))?.has(container) ?? false);
  return false;
}

function moduleOf(node: SyntaxNode): SyntaxNode {
  let n = node;
  while (n.parent !== null) n = n.parent;
  return n;
}
