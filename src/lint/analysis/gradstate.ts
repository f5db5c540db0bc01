// Whether autograd records where a node runs, beyond the lexical no_grad scopes of context.ts:
// statement-level `torch.set_grad_enabled(False)`, functions only ever called under no_grad, Lightning
// hooks, and no_grad entered indirectly (ExitStack, a context held in a variable).
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { decoratorsOf, disablesGrad, isGradDisabled, withItemCalls } from './context';
import { qualifiedName } from './imports';
import { isLightningNoGradHook, scopeOf } from './models';
import { combine, importSignature, unitsOf, walkSplittingFunctions, type FunctionSplitWalk } from './unitcache';
import { NodeMemo, VersionMemo } from '../session';

const GRAD_CONTROL = /(^|\.)(no_grad|inference_mode|set_grad_enabled|enable_grad)$/;
const GRAD_CONTROL_NAMES = new Set(['no_grad', 'inference_mode', 'set_grad_enabled', 'enable_grad']);

interface GradFacts {
  /** `torch.set_grad_enabled(False)` as a statement in top-level code: the whole file runs without grad. */
  readonly moduleOff: boolean;
  /** Statement-level `set_grad_enabled(False)` calls, by scope. */
  readonly offStatements: ReadonlyMap<SyntaxNode, readonly SyntaxNode[]>;
  /** Scopes that mention a grad-mode API other than as a with-item or decorator (ExitStack, variables). */
  readonly indirect: ReadonlySet<SyntaxNode>;
  /** Names of functions called (somewhere) under no_grad. */
  readonly calledUnderNoGrad: ReadonlySet<string>;
  /** Names assigned from a grad-mode API (`ctx = torch.no_grad()`): `with ctx:` may disable grad. */
  readonly gradContextNames: ReadonlySet<string>;
  /** Functions defined in the file whose body applies no_grad/inference_mode (decorator factories). */
  readonly noGradDecorators: ReadonlySet<string>;
}

interface UnitGradFacts {
  readonly moduleOff: boolean;
  readonly moduleIndirect: boolean;
  readonly offStatements: readonly (readonly [SyntaxNode, SyntaxNode])[];
  readonly indirect: readonly SyntaxNode[];
  readonly calledUnderNoGrad: readonly string[];
  readonly gradContextNames: readonly string[];
  readonly noGradDecorators: readonly string[];
}

const cache = new VersionMemo<GradFacts>('gradstate.facts');
const unitCache = new NodeMemo<UnitGradFacts>('gradstate.unit');

function gradFacts(file: SourceFile): GradFacts {
  return cache.get(file, computeGradFacts);
}

function computeGradFacts(file: SourceFile): GradFacts {
  let moduleOff = false;
  const offStatements = new Map<SyntaxNode, SyntaxNode[]>();
  const indirect = new Set<SyntaxNode>();
  const calledUnderNoGrad = new Set<string>();
  const gradContextNames = new Set<string>();
  const noGradDecorators = new Set<string>();
  const sig = importSignature(file);
  for (const unit of unitsOf(file)) {
    const u = unitCache.get(file, unit, sig, () => unitGradFacts(file, unit, sig));
    moduleOff ||= u.moduleOff;
    if (u.moduleIndirect) indirect.add(file.root);
    for (const [scope, call] of u.offStatements) offStatements.set(scope, [...(offStatements.get(scope) ?? []), call]);
    for (const s of u.indirect) indirect.add(s);
    for (const n of u.calledUnderNoGrad) calledUnderNoGrad.add(n);
    for (const n of u.gradContextNames) gradContextNames.add(n);
    for (const n of u.noGradDecorators) noGradDecorators.add(n);
  }
  return { moduleOff, offStatements, indirect, calledUnderNoGrad, gradContextNames, noGradDecorators };
}

/** A statement's grad facts as gathered in walk order (see walkSplittingFunctions). */
interface GradParts {
  moduleOff: boolean;
  moduleIndirect: boolean;
  readonly offStatements: [SyntaxNode, SyntaxNode][];
  readonly indirect: SyntaxNode[];
  readonly calledUnderNoGrad: Set<string>;
  readonly gradContextNames: string[];
  readonly noGradDecorators: string[];
}

/** The facts of each function's body, so an edit in one method of a giant class re-walks that method only. */
const functionGradParts = new NodeMemo<GradParts>('gradstate.functionParts');
/** The facts of each statement of a long function's body (see SPLIT_FUNCTION_LINES), its own scope relocated. */
const statementGradParts = new NodeMemo<GradParts>('gradstate.statementParts');

function unitGradFacts(file: SourceFile, unit: SyntaxNode, deps: string): UnitGradFacts {
  const acc = walkSplittingFunctions(file, functionGradParts, deps, unit, gradWalk(file));
  return { ...acc, calledUnderNoGrad: [...acc.calledUnderNoGrad] };
}

const noGradDecoratorBodies = new NodeMemo<boolean>('gradstate.noGradDecoratorBody');

/**
 * Whether a function's body reads like a decorator factory applying no_grad (mentions it, returns, and
 * does not simply run under it). Kept on the function node: a function is visited in its parent's walk,
 * so without this a giant class would rescan every method's text on every edit.
 */
function looksLikeNoGradDecorator(file: SourceFile, fn: SyntaxNode, body: SyntaxNode): boolean {
  return noGradDecoratorBodies.get(file, fn, '', () => {
    const text = file.textOf(body);
    return /\b(no_grad|inference_mode)\b/.test(text) && /\breturn\b/.test(text) && !/\bwith\s+torch\.(no_grad|inference_mode)\(\)\s*:/.test(text);
  });
}

function addIndirect(acc: GradParts, scope: SyntaxNode | null): void {
  if (scope?.type === 'module') acc.moduleIndirect = true;
  else if (scope !== null) acc.indirect.push(scope);
}

function gradWalk(file: SourceFile): FunctionSplitWalk<GradParts> {
  return {
    order: 'reverse',
    // Every visit reads its node's subtree and imports (deps), and names the node's scope: relocated below.
    statements: statementGradParts,
    relocate: (part, from, to) => {
      if (!part.offStatements.some(([scope]) => scope === from) && !part.indirect.includes(from)) return part;
      return {
        ...part,
        offStatements: part.offStatements.map(([scope, call]): [SyntaxNode, SyntaxNode] => [scope === from ? to : scope, call]),
        indirect: part.indirect.map((scope) => (scope === from ? to : scope)),
      };
    },
    fresh: () => ({ moduleOff: false, moduleIndirect: false, offStatements: [], indirect: [], calledUnderNoGrad: new Set(), gradContextNames: [], noGradDecorators: [] }),
    merge: (acc, part) => {
      acc.moduleOff ||= part.moduleOff;
      acc.moduleIndirect ||= part.moduleIndirect;
      for (const o of part.offStatements) acc.offStatements.push(o);
      for (const s of part.indirect) acc.indirect.push(s);
      for (const n of part.calledUnderNoGrad) acc.calledUnderNoGrad.add(n);
      for (const n of part.gradContextNames) acc.gradContextNames.push(n);
      for (const n of part.noGradDecorators) acc.noGradDecorators.push(n);
    },
    visit: (n, acc) => {
      if (n.type === 'call') {
        const fn = childByField(n, 'function');
        if (fn === null) return;
        const last = fn.type === 'attribute' ? childByField(fn, 'attribute') : fn;
        const lastText = last === null ? '' : file.textOf(last);
        const name = GRAD_CONTROL_NAMES.has(lastText) ? qualifiedName(file, fn) : null;
        if (name === null || !GRAD_CONTROL.test(name)) return;
        const scope = scopeOf(n);
        if (n.parent?.type === 'expression_statement') {
          if (disablesGrad(file, n)) {
            if (scope?.type === 'module') acc.moduleOff = true;
            else if (scope !== null) acc.offStatements.push([scope, n]);
          } else addIndirect(acc, scope);
        } else if (!isWithItemOrDecorator(n)) {
          addIndirect(acc, scope);
          const asg = n.parent?.type === 'assignment' ? n.parent : n.parent?.parent?.type === 'assignment' ? n.parent.parent : null;
          const left = asg === null ? null : childByField(asg, 'left');
          if (left !== null) acc.gradContextNames.push(file.textOf(left));
        }
      } else if (n.type === 'with_statement') {
        // Functions called under no_grad: `with torch.no_grad(): evaluate(model, loader)`.
        if (!withItemCalls(n).some((c) => disablesGrad(file, c))) return;
        const body = childByField(n, 'body');
        if (body !== null) collectCallees(file, body, acc.calledUnderNoGrad);
      } else if (n.type === 'function_definition') {
        const body = childByField(n, 'body');
        const name = childByField(n, 'name');
        if (body === null) return;
        if (decoratorsOf(n).some((d) => disablesGrad(file, d))) collectCallees(file, body, acc.calledUnderNoGrad);
        // A decorator (factory) of this file that applies no_grad: it returns a wrapper.
        if (name !== null && looksLikeNoGradDecorator(file, n, body)) acc.noGradDecorators.push(file.textOf(name));
      } else if (n.type === 'attribute') {
        // `torch.no_grad` passed around without a call (`ctx = torch.no_grad if ... else nullcontext`).
        if (n.field === 'function' || n.parent?.type === 'decorator') return;
        const attr = childByField(n, 'attribute');
        if (attr === null || !/^(no_grad|inference_mode)$/.test(file.textOf(attr))) return;
        const name = qualifiedName(file, n);
        if (name !== null && /(^|\.)(no_grad|inference_mode)$/.test(name)) addIndirect(acc, scopeOf(n));
      }
    },
  };
}

/** Changes whenever a file-wide grad fact changes (scope-local ones are keyed by their scope nodes). */
export function gradSignature(file: SourceFile): string {
  return combine(file, 'grad', () => {
    const f = gradFacts(file);
    const list = (set: ReadonlySet<string>): string => [...set].sort().join(',');
    return [String(f.moduleOff), String(f.indirect.has(file.root)), list(f.calledUnderNoGrad), list(f.gradContextNames), list(f.noGradDecorators)];
  });
}

function collectCallees(file: SourceFile, root: SyntaxNode, out: Set<string>): void {
  const stack = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'call') {
      const fn = childByField(n, 'function');
      const callee = fn?.type === 'attribute' ? childByField(fn, 'attribute') : fn;
      if (callee?.type === 'identifier') out.add(file.textOf(callee));
    }
    for (const c of n.children) stack.push(c);
  }
}

function isWithItemOrDecorator(call: SyntaxNode): boolean {
  const p = call.parent;
  if (p === null) return false;
  if (p.type === 'decorator') return true;
  if (p.type === 'with_item') return true;
  return p.type === 'as_pattern' && p.parent?.type === 'with_item';
}

const gradFreeCache = new VersionMemo<boolean>('gradstate.gradFree');

/**
 * A function whose body always runs without grad: a Lightning validation/test/predict hook, a function
 * this file only calls under no_grad, or one nested in such a function.
 */
export function isGradFreeFunction(file: SourceFile, fn: SyntaxNode): boolean {
  return gradFreeCache.keyed(file, fn, () => computeGradFree(file, fn), false); // false: recursion guard
}

function computeGradFree(file: SourceFile, fn: SyntaxNode): boolean {
  const name = file.textOf(childByField(fn, 'name') ?? fn);
  let result = isLightningNoGradHook(file, fn) || gradFacts(file).calledUnderNoGrad.has(name);
  if (!result) {
    const outer = scopeOf(fn);
    if (outer?.type === 'function_definition') result = isGradFreeFunction(file, outer);
  }
  return result;
}

/** Autograd is known to be off where `node` runs. */
export function gradOffAt(file: SourceFile, node: SyntaxNode): boolean {
  return gradOffBy(file, node, isGradFreeFunction);
}

/**
 * Autograd is off where `node` runs by the code of its own function (and the functions around it): a
 * no_grad block or decorator, a project no_grad decorator, `set_grad_enabled(False)` before it, a
 * Lightning no-grad hook. Unlike gradOffAt, not because this file happens to call the function under
 * no_grad: a caller following a helper asks whether the helper itself turns grad off.
 */
export function gradOffWithin(file: SourceFile, node: SyntaxNode): boolean {
  return gradOffBy(file, node, isLightningNoGradHook);
}

/** The checks both share; `functionIsOff` says which enclosing functions count as running without grad. */
function gradOffBy(file: SourceFile, node: SyntaxNode, functionIsOff: (file: SourceFile, fn: SyntaxNode) => boolean): boolean {
  if (isGradDisabled(file, node)) return true;
  const facts = gradFacts(file);
  if (facts.moduleOff) return true;
  const scope = scopeOf(node);
  if (scope === null) return false;
  for (const off of facts.offStatements.get(scope) ?? []) if (off.end <= node.start) return true;
  for (let s: SyntaxNode | null = scope; s !== null && s.type === 'function_definition'; s = scopeOf(s)) {
    if (functionIsOff(file, s) || decoratorsOf(s).some((d) => isNoGradWrapper(file, d))) return true;
  }
  return false;
}

const NO_GRAD_WRAPPER_NAME = /no_?grad|inference_mode|inference_context/i;

/**
 * A project's own no_grad decorator: YOLOv5's `@smart_inference_mode()`, or a decorator defined in this
 * file whose body applies no_grad/inference_mode.
 */
function isNoGradWrapper(file: SourceFile, decorator: SyntaxNode): boolean {
  const target = decorator.type === 'call' ? childByField(decorator, 'function') : decorator;
  if (target === null) return false;
  const name = file.textOf(target);
  if (NO_GRAD_WRAPPER_NAME.test(name)) return true;
  const last = name.slice(name.lastIndexOf('.') + 1);
  return gradFacts(file).noGradDecorators.has(last);
}

/**
 * Whether `fn`'s own code enters no_grad indirectly (ExitStack, a grad context held in a variable), which
 * gradMaybeOffAt reads for every node inside `fn`, nested functions included: a memo kept on a nested
 * function puts this of each enclosing function in its deps (the statements it comes from are elsewhere
 * in the enclosing body).
 */
export function entersGradIndirectly(file: SourceFile, fn: SyntaxNode): boolean {
  return gradFacts(file).indirect.has(fn);
}

/**
 * Autograd may be off where `node` runs and the linter cannot tell: `with ctx:` where ctx may hold
 * no_grad, `with torch.set_grad_enabled(is_train):`, or a scope that enters no_grad indirectly.
 */
export function gradMaybeOffAt(file: SourceFile, node: SyntaxNode): boolean {
  const facts = gradFacts(file);
  for (let s = scopeOf(node); s !== null; s = s.type === 'module' ? null : scopeOf(s)) if (facts.indirect.has(s)) return true;
  let child = node;
  for (let p = node.parent; p !== null; child = p, p = p.parent) {
    if (p.type === 'class_definition') break;
    if (p.type !== 'with_statement' || child.field !== 'body') continue;
    const clause = p.children.find((c) => c.type === 'with_clause');
    for (const item of clause?.children ?? []) {
      if (item.type !== 'with_item') continue;
      let value = childByField(item, 'value');
      if (value?.type === 'as_pattern') value = value.children.find((c) => c.named) ?? null;
      if (value === null) continue;
      if (value.type === 'call') {
        const fn = childByField(value, 'function');
        const name = fn === null ? '' : (qualifiedName(file, fn) ?? file.textOf(fn));
        if (/grad|inference|eval_mode|evaluat/i.test(name) && !withItemCalls(p).some((c) => c === value && disablesGrad(file, c))) return true;
      } else if (value.type === 'identifier' || value.type === 'attribute') {
        const text = file.textOf(value);
        if (facts.gradContextNames.has(text) || /grad|infer/i.test(text)) return true;
      } else {
        return true; // `with (torch.no_grad() if eval else nullcontext()):` and other expressions
      }
    }
  }
  return false;
}

/**
 * What gradOffAt, gradOffWithin and gradMaybeOffAt read for a node of `fn` outside `fn`'s own subtree, as
 * a token for the deps of a memo kept on the function node (a flow, a rule's per-scope findings): the
 * `with` blocks and decorators around it (its own decorators sit in its decorated_definition, outside
 * the node), whether each enclosing scope enters no_grad indirectly, and whether `fn` and each enclosing
 * function count as running without grad (a Lightning hook, a name this file calls under no_grad, a
 * no_grad wrapper decorator). The document reuses a nested step function of a giant `def main():` while
 * main's other statements change, and a `torch.set_grad_enabled(training)` added there turns the step's
 * taints Unknown: gradSignature holds only the file-wide facts, not these per-function ones.
 */
export function enclosingGradToken(file: SourceFile, fn: SyntaxNode): string {
  // Once per function and version: every flowOf of a nested scope asks.
  return enclosingGradTokens.keyed(file, fn, () => computeEnclosingGradToken(file, fn));
}

const enclosingGradTokens = new VersionMemo<string>('gradstate.enclosingGradToken');

function computeEnclosingGradToken(file: SourceFile, fn: SyntaxNode): string {
  let token = isGradDisabled(file, fn) || decoratorsOf(fn).some((d) => disablesGrad(file, d)) ? 'D' : 'd';
  token += gradMaybeOffAt(file, fn) ? 'M' : 'm';
  for (let s: SyntaxNode | null = fn; s !== null && s.type === 'function_definition'; s = scopeOf(s)) {
    token += `${isGradFreeFunction(file, s) ? 1 : 0}${isLightningNoGradHook(file, s) ? 1 : 0}${decoratorsOf(s).some((d) => isNoGradWrapper(file, d)) ? 1 : 0}`;
  }
  return token;
}
