// MH010: networks written as plain functions over hand-made weight tensors, as early GAN tutorials do
// (`def G(z): h = relu(z @ Wzh + bzh); return sigmoid(h @ Whx + bhx)`). A module-level function of the file
// is such a network when its body reads module-level tensors that an optimizer of the file trains
// (`G_solver = optim.Adam(G_params)` with `G_params = [Wzh, bzh, Whx, bhx]`, or `Adam([Wzh, bzh])`): its
// output then has history through those weights, like a module's forward pass. Only MH010 asks. The other
// rules keep treating such calls as ordinary calls. For MH001 the labeller judged the `G(z).data` sampling
// lines of such scripts ambiguous.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { keywordArgument, positionalArguments } from './context';
import { calleeName, importBindings } from './imports';
import { callsMatching } from './calls';
import { VersionMemo } from '../session';
import { isTorchOptimizerName } from './vocabulary';

/** How far `params = G_params + D_params` / `G_params = [W, b]` chains are followed. */
const MAX_DEPTH = 4;

// Signed: its readers put functionNetworksSignature (the value itself) in their deps.
const memo = new VersionMemo<ReadonlySet<string>>('function-networks', true);

/** Names of the module-level functions of the file that compute with optimizer-trained module-level tensors. */
export function functionNetworks(file: SourceFile): ReadonlySet<string> {
  return memo.get(file, compute);
}

/** Changes whenever the set of function networks does (for callers' caches). */
export function functionNetworksSignature(file: SourceFile): string {
  return [...functionNetworks(file)].sort().join(',');
}

/** The called function network's name (`G` for `G(z)`), or null when the call is not one. */
export function functionNetworkCalled(file: SourceFile, call: SyntaxNode): string | null {
  const fn = childByField(call, 'function');
  if (fn?.type !== 'identifier') return null;
  const name = file.textOf(fn);
  return functionNetworks(file).has(name) ? name : null;
}

function compute(file: SourceFile): ReadonlySet<string> {
  const bindings = moduleBindings(file);
  const trained = new Set<string>();
  // Only the calls whose callee's last name (or the import it aliases) is an optimizer's, from the
  // per-statement call groups: a scan of every call of the file ran on every version.
  const imports = importBindings(file);
  const maybeOptimizer = (method: string): boolean => isTorchOptimizerName(method) || isTorchOptimizerName(imports.get(method)?.qualified ?? '');
  for (const call of callsMatching(file, maybeOptimizer)) {
    if (!isTorchOptimizerName(calleeName(file, call) ?? '')) continue;
    const params = positionalArguments(call)[0] ?? keywordArgument(file, call, 'params');
    if (params !== null && params !== undefined) collectTensors(file, params, bindings, trained, 0);
  }
  const out = new Set<string>();
  if (trained.size === 0) return out;
  for (const stmt of file.root.children) {
    const def = stmt.type === 'decorated_definition' ? childByField(stmt, 'definition') : stmt;
    if (def?.type !== 'function_definition') continue;
    const name = childByField(def, 'name');
    if (name !== null && readsGlobal(file, def, trained)) out.add(file.textOf(name));
  }
  return out;
}

/** Module-level `name = value` assignments (the lists of weights an optimizer is handed). */
function moduleBindings(file: SourceFile): Map<string, SyntaxNode[]> {
  const out = new Map<string, SyntaxNode[]>();
  for (const stmt of file.root.children) {
    const a = stmt.type === 'expression_statement' ? stmt.children[0] : null;
    if (a?.type !== 'assignment') continue;
    const left = childByField(a, 'left');
    const right = childByField(a, 'right');
    if (left?.type !== 'identifier' || right === null) continue;
    const key = file.textOf(left);
    const list = out.get(key);
    if (list === undefined) out.set(key, [right]);
    else list.push(right);
  }
  return out;
}

/** The names of tensors an optimizer's `params` expression lists: list items, `a + b` of lists, names bound to lists. */
function collectTensors(file: SourceFile, expr: SyntaxNode, bindings: ReadonlyMap<string, readonly SyntaxNode[]>, out: Set<string>, depth: number): void {
  if (depth > MAX_DEPTH) return;
  if (expr.type === 'list' || expr.type === 'tuple') {
    for (const item of namedChildren(expr)) {
      if (item.type === 'identifier') out.add(file.textOf(item));
      else collectTensors(file, item, bindings, out, depth + 1);
    }
  } else if (expr.type === 'binary_operator') {
    for (const side of [childByField(expr, 'left'), childByField(expr, 'right')]) if (side !== null) collectTensors(file, side, bindings, out, depth + 1);
  } else if (expr.type === 'parenthesized_expression') {
    for (const c of namedChildren(expr)) collectTensors(file, c, bindings, out, depth + 1);
  } else if (expr.type === 'identifier') {
    for (const value of bindings.get(file.textOf(expr)) ?? []) collectTensors(file, value, bindings, out, depth + 1);
  }
}

/** The function reads one of `names` as a module-level variable (not a parameter or local of its own). */
function readsGlobal(file: SourceFile, def: SyntaxNode, names: ReadonlySet<string>): boolean {
  const locals = new Set<string>();
  const params = childByField(def, 'parameters');
  for (const p of params?.children ?? []) {
    const id = p.type === 'identifier' ? p : p.children.find((c) => c.type === 'identifier');
    if (id !== undefined) locals.add(file.textOf(id));
  }
  const body = childByField(def, 'body');
  if (body === null) return false;
  const reads: string[] = [];
  const stack = [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') continue;
    if (n.type === 'assignment' || n.type === 'augmented_assignment') {
      const left = childByField(n, 'left');
      if (left?.type === 'identifier') locals.add(file.textOf(left));
    }
    if (n.type === 'identifier' && names.has(file.textOf(n))) reads.push(file.textOf(n));
    for (const c of n.children) stack.push(c);
  }
  return reads.some((r) => !locals.has(r));
}
