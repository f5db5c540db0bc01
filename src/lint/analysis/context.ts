// Where a node runs: inside which loop, function, and whether autograd is recording there.
import { childByField, firstNamedChild, type SourceFile, type SyntaxNode } from '../syntax';
import { qualifiedName } from './imports';

const FUNCTION_TYPES = new Set(['function_definition', 'lambda', 'class_definition']);
const LOOP_TYPES = new Set(['for_statement', 'while_statement']);

/** The function a node belongs to (nearest def), or null at module level. */
export function enclosingFunction(node: SyntaxNode): SyntaxNode | null {
  for (let p = node.parent; p !== null; p = p.parent) {
    if (p.type === 'function_definition') return p;
    if (p.type === 'class_definition') return null;
  }
  return null;
}

/** The methods defined directly in a class's body, in order (decorated ones looked through to their def). */
export function classMethods(cls: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (const member of childByField(cls, 'body')?.children ?? []) {
    const def = member.type === 'decorated_definition' ? childByField(member, 'definition') : member;
    if (def?.type === 'function_definition') out.push(def);
  }
  return out;
}

/** Function definitions enclosing a node, nearest first. */
export function enclosingFunctions(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let p = node.parent; p !== null; p = p.parent) if (p.type === 'function_definition') out.push(p);
  return out;
}

/** Name of a function_definition. */
export function functionName(file: SourceFile, fn: SyntaxNode): string {
  const name = childByField(fn, 'name');
  return name === null ? '' : file.textOf(name);
}

/**
 * Loops whose body contains the node, nearest first, without crossing a function boundary
 * (a def inside a loop runs when called, not per iteration). Iterables and else-clauses excluded.
 */
export function enclosingLoops(node: SyntaxNode): SyntaxNode[] {
  const loops: SyntaxNode[] = [];
  let child = node;
  for (let p = node.parent; p !== null; child = p, p = p.parent) {
    if (FUNCTION_TYPES.has(p.type)) break;
    if (LOOP_TYPES.has(p.type) && child.field === 'body') loops.push(p);
  }
  return loops;
}

/** The call expressions in a `with` statement's items (`with torch.no_grad(), amp.autocast():`). */
export function withItemCalls(withStmt: SyntaxNode): SyntaxNode[] {
  const calls: SyntaxNode[] = [];
  const clause = withStmt.children.find((c) => c.type === 'with_clause');
  if (clause === undefined) return calls;
  for (const item of clause.children) {
    if (item.type !== 'with_item') continue;
    let value = childByField(item, 'value');
    if (value?.type === 'as_pattern') value = value.children.find((c) => c.named) ?? null;
    if (value?.type === 'call') calls.push(value);
  }
  return calls;
}

const NO_GRAD_NAMES = new Set(['torch.no_grad', 'torch.inference_mode', 'torch.autograd.no_grad', 'torch.autograd.grad_mode.no_grad', 'torch.autograd.grad_mode.inference_mode']);

/** True when the call (or decorator expression) turns autograd recording off. */
export function disablesGrad(file: SourceFile, expr: SyntaxNode): boolean {
  const target = expr.type === 'call' ? childByField(expr, 'function') : expr;
  if (target === null) return false;
  const name = qualifiedName(file, target);
  if (name === null) return false;
  if (NO_GRAD_NAMES.has(name) || name.endsWith('.no_grad') || name.endsWith('.inference_mode') || name === 'no_grad' || name === 'inference_mode') {
    // inference_mode(False) / inference_mode(mode=False) re-enables recording.
    if (expr.type === 'call' && /^\(\s*(mode\s*=\s*)?False\s*\)$/.test(file.textOf(childByField(expr, 'arguments') ?? expr))) return false;
    return true;
  }
  if (expr.type === 'call' && (name === 'torch.set_grad_enabled' || name.endsWith('.set_grad_enabled'))) {
    const args = childByField(expr, 'arguments');
    return args !== null && /^\(\s*(mode\s*=\s*)?False\s*\)$/.test(file.textOf(args));
  }
  return false;
}

/** Decorator expressions of a function_definition (its parent decorated_definition's decorators). */
export function decoratorsOf(fn: SyntaxNode): SyntaxNode[] {
  const parent = fn.parent;
  if (parent === null || parent.type !== 'decorated_definition') return [];
  return parent.children.filter((c) => c.type === 'decorator').map((d) => d.children.find((c) => c.named) ?? d);
}

/**
 * True when autograd is statically known to be off where `node` runs: inside `with torch.no_grad():`
 * (or inference_mode / set_grad_enabled(False)) or in a function decorated with one, including any
 * enclosing function.
 */
export function isGradDisabled(file: SourceFile, node: SyntaxNode): boolean {
  let child = node;
  for (let p = node.parent; p !== null; child = p, p = p.parent) {
    if (p.type === 'with_statement' && child.field === 'body' && withItemCalls(p).some((c) => disablesGrad(file, c))) return true;
    if (p.type === 'function_definition' && decoratorsOf(p).some((d) => disablesGrad(file, d))) return true;
    if (p.type === 'class_definition') break;
  }
  return false;
}

/** Keyword argument `name=` of a call, or null. */
export function keywordArgument(file: SourceFile, call: SyntaxNode, name: string): SyntaxNode | null {
  const args = childByField(call, 'arguments');
  if (args === null) return null;
  for (const a of args.children) {
    if (a.type !== 'keyword_argument') continue;
    const key = childByField(a, 'name');
    if (key !== null && file.textOf(key) === name) return childByField(a, 'value');
  }
  return null;
}

/** Positional argument nodes of a call. */
export function positionalArguments(call: SyntaxNode): SyntaxNode[] {
  const args = childByField(call, 'arguments');
  if (args === null || args.type !== 'argument_list') return [];
  return args.children.filter((c) => c.named && c.type !== 'keyword_argument' && c.type !== 'comment' && c.type !== 'list_splat' && c.type !== 'dictionary_splat');
}

/**
 * The calls that enclosing `with CALL as name:` statements bind to `ident`'s name, innermost first
 * (`with open(path) as f`, Opacus's `with BatchMemoryManager(...) as loader`). With `stopAt`, the walk ends
 * at the first enclosing node of those types (a `with` outside a function binds another variable).
 */
export function withAliasCalls(file: SourceFile, ident: SyntaxNode, stopAt?: ReadonlySet<string>): SyntaxNode[] {
  const name = file.textOf(ident);
  const calls: SyntaxNode[] = [];
  for (let p = ident.parent; p !== null && !(stopAt?.has(p.type) ?? false); p = p.parent) {
    if (p.type !== 'with_statement') continue;
    const clause = p.children.find((c) => c.type === 'with_clause');
    for (const item of clause?.children ?? []) {
      const value = item.type === 'with_item' ? childByField(item, 'value') : null;
      if (value?.type !== 'as_pattern') continue;
      const alias = childByField(value, 'alias');
      const expr = firstNamedChild(value);
      if (alias !== null && file.textOf(alias).trim() === name && expr?.type === 'call') calls.push(expr);
    }
  }
  return calls;
}
