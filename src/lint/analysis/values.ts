// Which expressions a name may hold where it is used: a small, scope-aware, flow-insensitive value
// lookup. It follows assignments in the nearest scope that assigns the name, tuple unpacking of literals
// and of local functions' returns, and parameters through the call sites in this file. Anything it
// cannot see (imports, attributes of unknown objects, *args) makes the answer null: callers that need
// precision treat null as "unknown" and stay silent.
import { childByField, firstNamedChild, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { callsNamed } from './calls';
import { parameterNames, positionalParameters } from './parameters';
import { enclosingFunction, enclosingFunctions, keywordArgument, positionalArguments } from './context';
import { IndexDef, NodeMemo, VersionMemo } from '../session';
import { walkSplittingFunctions, type FunctionSplitWalk } from './unitcache';
import { returnOffCallPath } from './flag-returns';

const MAX_DEPTH = 6;

export interface Target {
  readonly assign: SyntaxNode;
  /** Position in an unpacking target (`a, b = ...`), or null for a plain target. */
  readonly index: number | null;
  readonly left: SyntaxNode;
}

/** One top-level statement's assignment targets and function definitions, by name. */
interface UnitFacts {
  /** Targets by bound name; attribute targets under their full text (`self.loader`). */
  readonly targets: Map<string, Target[]>;
  readonly functions: Map<string, SyntaxNode[]>;
  /** Each function's parameter list by the function's name: kept as the same node while its header is untouched. */
  readonly headers: Map<string, SyntaxNode[]>;
}

// Purely syntactic (no deps), so kept on each top-level statement across edits.
const unitCache = new NodeMemo<UnitFacts>('values.unitFacts');
const targetIndex = new IndexDef<Target>('values.targets', (file, unit) => unitCache.get(file, unit, '', () => unitFacts(file, unit)).targets);
const functionIndex = new IndexDef<SyntaxNode>('values.functions', (file, unit) => unitCache.get(file, unit, '', () => unitFacts(file, unit)).functions);
const headerIndex = new IndexDef<SyntaxNode>('values.headers', (file, unit) => unitCache.get(file, unit, '', () => unitFacts(file, unit)).headers);

/** The file's targets and functions by name, merged per name from the per-statement facts (see MergedIndex). */
class Facts {
  constructor(private readonly file: SourceFile) {}

  targets(key: string): readonly Target[] {
    return targetIndex.get(this.file, key);
  }

  functions(name: string): readonly SyntaxNode[] {
    return functionIndex.get(this.file, name);
  }
}

const cache = new VersionMemo<Facts>('values.facts');

function facts(file: SourceFile): Facts {
  return cache.get(file, (f) => new Facts(f));
}

/** Function definitions named `name` anywhere in the file, in document order. */
export function functionsNamed(file: SourceFile, name: string): readonly SyntaxNode[] {
  return functionIndex.get(file, name);
}

/**
 * The assignments whose target is `name` (a plain name, a position of an unpacking, or an attribute's
 * text without spaces), anywhere in the file, in document order: an index read (see IndexDef.get).
 */
export function assignedNames(file: SourceFile, name: string): readonly Target[] {
  return targetIndex.get(file, name);
}

/**
 * The assignments that store an item into the container `name` (`loaders['train'] = ...`,
 * `self.loaders[split] = ...`), anywhere in the file, in document order: an index read.
 */
export function storedItems(file: SourceFile, name: string): readonly Target[] {
  return targetIndex.get(file, `${name.replace(/\s+/g, '')}[]`);
}

/** The return statements whose nearest function is `def` (as enclosingFunction sees it), in document order. */
export function returnsOf(def: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const stack = [...def.children].reverse();
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition') continue;
    if (n.type === 'return_statement') out.push(n);
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
  return out;
}

function unitFacts(file: SourceFile, unit: SyntaxNode): UnitFacts {
  return walkSplittingFunctions(file, functionFacts, '', unit, factsWalk(file));
}

/** Each function body's facts, so an edit in one method of a giant class re-walks that method only. */
const functionFacts = new NodeMemo<UnitFacts>('values.functionFacts');
/** The facts of each statement of a long function's body (see SPLIT_FUNCTION_LINES). */
const statementFacts = new NodeMemo<UnitFacts>('values.statementFacts');

function add<T>(map: Map<string, T[]>, key: string, values: readonly T[]): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [...values]);
  else for (const v of values) list.push(v);
}

/** The node types the walk below acts on (it reads them from the statement's by-type index). */
const FACT_TYPES: readonly string[] = Object.freeze(['function_definition', 'assignment']);

/** Targets and functions by name in document order (merging a function body's at its place keeps it). */
function factsWalk(file: SourceFile): FunctionSplitWalk<UnitFacts> {
  return {
    order: 'document',
    types: FACT_TYPES,
    // Names and targets of the visited definition or assignment only.
    statements: statementFacts,
    fresh: () => ({ targets: new Map(), functions: new Map(), headers: new Map() }),
    merge: (acc, part) => {
      for (const [key, list] of part.targets) add(acc.targets, key, list);
      for (const [key, list] of part.functions) add(acc.functions, key, list);
      for (const [key, list] of part.headers) add(acc.headers, key, list);
    },
    visit: (n, acc) => {
      if (n.type === 'function_definition') {
        const name = childByField(n, 'name');
        if (name !== null) add(acc.functions, file.textOf(name), [n]);
        const parameters = childByField(n, 'parameters');
        if (name !== null && parameters !== null) add(acc.headers, file.textOf(name), [parameters]);
        return;
      }
      if (n.type !== 'assignment') return;
      const assign = n;
      const left = childByField(assign, 'left');
      if (left === null) return;
      if (left.type === 'identifier') add(acc.targets, file.textOf(left), [{ assign, index: null, left }]);
      else if (left.type === 'attribute') add(acc.targets, file.textOf(left).replace(/\s+/g, ''), [{ assign, index: null, left }]);
      else if (left.type === 'subscript') {
        // `loaders['train'] = ...`: an item stored into a container, under `loaders[]` (storedItems).
        const container = childByField(left, 'value');
        if (container?.type === 'identifier' || container?.type === 'attribute') add(acc.targets, `${file.textOf(container).replace(/\s+/g, '')}[]`, [{ assign, index: null, left }]);
      }
      else if (left.type === 'pattern_list' || left.type === 'tuple_pattern' || left.type === 'list_pattern') {
        const parts = namedChildren(left);
        parts.forEach((p, index) => {
          if (p.type === 'identifier') add(acc.targets, file.textOf(p), [{ assign, index, left: p }]);
        });
      }
    },
  };
}

function defaultValue(file: SourceFile, def: SyntaxNode, name: string): SyntaxNode | null {
  const params = childByField(def, 'parameters');
  for (const p of params?.children ?? []) {
    if (p.type !== 'default_parameter' && p.type !== 'typed_default_parameter') continue;
    const n = childByField(p, 'name');
    if (n !== null && file.textOf(n) === name) return childByField(p, 'value');
  }
  return null;
}

/**
 * Expressions `node` (an identifier or attribute) may hold where it appears, or null when unknown.
 */
export function valuesOf(file: SourceFile, node: SyntaxNode, depth = 0): SyntaxNode[] | null {
  if (depth > MAX_DEPTH) return null;
  let key: string;
  if (node.type === 'attribute') key = `${depth}:${file.textOf(node).replace(/\s+/g, '')}`;
  else if (node.type === 'identifier') {
    // An identifier's answer depends on its name and the functions around it, all named by the innermost one.
    let fn: SyntaxNode | null = node.parent;
    while (fn !== null && fn.type !== 'function_definition') fn = fn.parent;
    key = `${depth}:${fn === null ? 0 : file.session.nodeId(fn)}:${file.textOf(node)}`;
  } else return null;
  const values = valuesMemo.keyed(file, key, () => computeValuesOf(file, node, depth));
  // A copy: callers own the array they get (and an attribute asked at every call listed every assignment to it).
  return values === null ? null : values.slice();
}

/**
 * valuesOf per version, by what its answer depends on: an attribute's text (every assignment to it in
 * the file), an identifier's name and innermost enclosing function, and the depth.
 */
const valuesMemo = new VersionMemo<SyntaxNode[] | null>('values.valuesOf');

function computeValuesOf(file: SourceFile, node: SyntaxNode, depth: number): SyntaxNode[] | null {
  const f = facts(file);
  if (node.type === 'attribute') {
    const list = f.targets(file.textOf(node).replace(/\s+/g, ''));
    if (list.length === 0) return null;
    return collect(list.map((t) => rhsOf(file, f, t, depth)));
  }
  if (node.type !== 'identifier') return null;
  const key = file.textOf(node);
  const byScope = identifierTargetsByScope(file, f, key);
  const scopes = enclosingFunctions(node);
  declareHeaderReads(file, scopes);
  for (const scope of [...scopes, null]) {
    const here = byScope.get(scope) ?? [];
    if (here.length > 0) return collect(here.map((t) => rhsOf(file, f, t, depth)));
    if (scope !== null && parameterNames(file, scope).includes(key)) return parameterValues(file, scope, key, depth);
  }
  return null;
}

/** Where an identifier's value comes from in its scope: its assignments, or the function it is a parameter of. */
export type Binding =
  | { readonly kind: 'assigned'; readonly sources: readonly { readonly right: SyntaxNode; readonly index: number | null }[] }
  | { readonly kind: 'parameter'; readonly def: SyntaxNode };

/**
 * The same scope search as valuesOf, without resolving anything: the right-hand sides that bind the
 * name (with the position in an unpacking target) or the function whose parameter it is; null when
 * the file binds it nowhere (an import, a builtin). For analyses that follow what valuesOf cannot see
 * (a call of a function of another module: project/resolve.ts).
 */
export function bindingOf(file: SourceFile, node: SyntaxNode): Binding | null {
  if (node.type !== 'identifier') return null;
  const f = facts(file);
  const key = file.textOf(node);
  const byScope = identifierTargetsByScope(file, f, key);
  const scopes = enclosingFunctions(node);
  declareHeaderReads(file, scopes);
  for (const scope of [...scopes, null]) {
    const here = byScope.get(scope) ?? [];
    if (here.length > 0) {
      const sources: { right: SyntaxNode; index: number | null }[] = [];
      for (const t of here) {
        const right = childByField(t.assign, 'right');
        if (right === null) return null;
        sources.push({ right, index: t.index });
      }
      return { kind: 'assigned', sources };
    }
    if (scope !== null && parameterNames(file, scope).includes(key)) return { kind: 'parameter', def: scope };
  }
  return null;
}

/**
 * The scope search reads the functions around a name (their parameters and defaults) through parent
 * links, which no index read records; a memo kept across versions (MH009's per-loop results) then kept
 * an answer after a header edit gave a parameter a new default. Reading the parameter lists by each
 * function's name declares them: an edited header is a new node, so that list changes, while an edit of
 * the body keeps it (a giant `main`'s per-statement reuse stays).
 */
function declareHeaderReads(file: SourceFile, scopes: readonly SyntaxNode[]): void {
  for (const scope of scopes) {
    const name = childByField(scope, 'name');
    if (name !== null) headerIndex.get(file, file.textOf(name));
  }
}

const targetsByScope = new VersionMemo<ReadonlyMap<SyntaxNode | null, readonly Target[]>>('values.identifierTargetsByScope');

/**
 * The plain-name targets of `key` grouped by their nearest function (null: module or class level), in
 * document order: one pass per name and version, not one per use of the name.
 */
function identifierTargetsByScope(file: SourceFile, f: Facts, key: string): ReadonlyMap<SyntaxNode | null, readonly Target[]> {
  return targetsByScope.keyed(file, key, () => {
    const byScope = new Map<SyntaxNode | null, Target[]>();
    for (const t of f.targets(key)) {
      if (t.left.type !== 'identifier') continue;
      const scope = enclosingFunction(t.assign);
      const list = byScope.get(scope);
      if (list === undefined) byScope.set(scope, [t]);
      else list.push(t);
    }
    return byScope;
  });
}

function collect(parts: readonly (SyntaxNode[] | null)[]): SyntaxNode[] | null {
  const out: SyntaxNode[] = [];
  for (const p of parts) {
    if (p === null) return null;
    out.push(...p);
  }
  return out;
}

function elements(node: SyntaxNode): SyntaxNode[] | null {
  let n: SyntaxNode | null = node;
  while (n !== null && n.type === 'parenthesized_expression') n = firstNamedChild(n);
  if (n === null) return null;
  if (n.type === 'tuple' || n.type === 'list' || n.type === 'expression_list') return namedChildren(n);
  return null;
}

function rhsOf(file: SourceFile, f: Facts, t: Target, depth: number): SyntaxNode[] | null {
  const right = childByField(t.assign, 'right');
  if (right === null) return null;
  if (t.index === null) return [right];
  const direct = elements(right);
  if (direct !== null) return direct[t.index] === undefined ? null : [direct[t.index]];
  if (right.type === 'identifier') {
    // `train_loader, eval_loader = loaders` with `loaders` a parameter passed `[train_loader, eval_loader]`.
    const held = valuesOf(file, right, depth + 1);
    if (held === null || held.length === 0) return null;
    const out: SyntaxNode[] = [];
    for (const h of held) {
      const parts = elements(h);
      if (parts === null || parts[t.index] === undefined) return null;
      out.push(parts[t.index]);
    }
    return out;
  }
  // `train_loader, val_loader = prepare_dataloader(...)`: the matching element of each return.
  if (right.type !== 'call') return null;
  const fn = childByField(right, 'function');
  if (fn === null || fn.type !== 'identifier') return null;
  const defs = f.functions(file.textOf(fn));
  if (defs.length !== 1) return null;
  const out: SyntaxNode[] = [];
  for (const ret of returnsOf(defs[0])) {
    // `return loader` under `if test:` beside `return train_loader, valid_loader`: not this call's path.
    if (returnOffCallPath(file, defs[0], ret, file, right)) continue;
    const value = firstNamedChild(ret);
    const parts = value === null ? null : elements(value);
    if (parts === null || parts[t.index] === undefined) return null;
    out.push(parts[t.index]);
  }
  return out.length === 0 ? null : out;
}

/** What the file's call sites pass for parameter `name` of `def` (and its default where one is omitted), or null. */
export function parameterValuesOf(file: SourceFile, def: SyntaxNode, name: string): SyntaxNode[] | null {
  return parameterValues(file, def, name, 0);
}

function parameterValues(file: SourceFile, def: SyntaxNode, name: string, depth: number): SyntaxNode[] | null {
  const defName = childByField(def, 'name');
  if (defName === null) return null;
  const fnName = file.textOf(defName);
  const index = positionalParameters(file, def).indexOf(name);
  const isMethod = def.parent !== null && def.parent.type === 'block' && def.parent.parent?.type === 'class_definition';
  const fallback = defaultValue(file, def, name);
  const out: SyntaxNode[] = [];
  let sites = 0;
  // `__init__`'s parameters are passed by constructing the class: `Trainer(model, train_loader)`.
  const className = isMethod && fnName === '__init__' ? childByField(def.parent!.parent!, 'name') : null;
  const constructions = className === null ? [] : callsNamed(file, file.textOf(className));
  for (const call of [...callsNamed(file, fnName), ...constructions]) {
    const fn = childByField(call, 'function');
    if (fn === null) continue;
    const args = childByField(call, 'arguments');
    if (args === null || args.type !== 'argument_list') continue;
    if (args.children.some((c) => c.type === 'list_splat')) return null;
    const offset = (isMethod && fn.type === 'attribute') || constructions.includes(call) ? 1 : 0;
    let arg: SyntaxNode | null = keywordArgument(file, call, name) ?? positionalArguments(call)[index - offset] ?? null;
    if (arg === null) {
      const splatted = splatArgument(file, args, name, depth);
      if (splatted === undefined) return null;
      arg = splatted;
    }
    if (arg === null) continue; // `model.train()`: a same-named method elsewhere, or the default
    sites++;
    if (arg.type === 'identifier' || arg.type === 'attribute') {
      const inner = valuesOf(file, arg, depth + 1);
      if (inner === null) return null;
      out.push(...inner);
    } else out.push(arg);
  }
  if (sites === 0) return fallback === null ? null : [fallback];
  if (fallback !== null) out.push(fallback);
  return out;
}

/**
 * The value a call's `**kwargs` gives the keyword `name`, when every splatted dict is a `dict(k=v)` call
 * or a literal with string keys (`train(params=p, **train_kwargs)` with `train_kwargs = dict(train_loader=
 * train_loader, ...)`): the node, null when none of them holds that key, undefined when a splat is unknown.
 */
function splatArgument(file: SourceFile, args: SyntaxNode, name: string, depth: number): SyntaxNode | null | undefined {
  let found: SyntaxNode | null = null;
  for (const splat of args.children) {
    if (splat.type !== 'dictionary_splat') continue;
    const inner = firstNamedChild(splat);
    if (inner === null) return undefined;
    const dicts = inner.type === 'identifier' ? valuesOf(file, inner, depth + 1) : [inner];
    if (dicts === null || dicts.length !== 1) return undefined;
    const value = dictEntry(file, dicts[0], name);
    if (value === undefined) return undefined;
    found ??= value;
  }
  return found;
}

/** `dict(a=x)` / `{'a': x}` -> x for `a`; null when the dict has no such key; undefined when it is no such literal. */
function dictEntry(file: SourceFile, dict: SyntaxNode, key: string): SyntaxNode | null | undefined {
  if (dict.type === 'call' && file.textOf(childByField(dict, 'function') ?? dict) === 'dict') {
    const args = childByField(dict, 'arguments');
    if (args === null || args.children.some((c) => c.type === 'list_splat' || c.type === 'dictionary_splat') || positionalArguments(dict).length > 0) return undefined;
    return keywordArgument(file, dict, key);
  }
  if (dict.type !== 'dictionary') return undefined;
  for (const pair of dict.children) {
    if (pair.type === 'dictionary_splat') return undefined;
    if (pair.type !== 'pair') continue;
    const k = childByField(pair, 'key');
    if (k?.type !== 'string') return undefined;
    if (file.textOf(k).slice(1, -1) === key) return childByField(pair, 'value');
  }
  return null;
}

/** Values a `NAME["key"]` subscript may hold when NAME is a dict literal. Null when unknown. */
export function subscriptValues(file: SourceFile, node: SyntaxNode, depth = 0): SyntaxNode[] | null {
  if (node.type !== 'subscript' || depth > MAX_DEPTH) return null;
  const value = childByField(node, 'value');
  const sub = childByField(node, 'subscript');
  if (value === null || sub === null || sub.type !== 'string') return null;
  const dicts = value.type === 'dictionary' ? [value] : valuesOf(file, value, depth + 1);
  if (dicts === null) return null;
  const key = file.textOf(sub).slice(1, -1);
  const out: SyntaxNode[] = [];
  for (const d of dicts) {
    if (d.type !== 'dictionary') return null;
    for (const pair of d.children) {
      if (pair.type !== 'pair') continue;
      const k = childByField(pair, 'key');
      const v = childByField(pair, 'value');
      if (k !== null && v !== null && k.type === 'string' && file.textOf(k).slice(1, -1) === key) out.push(v);
    }
  }
  return out.length === 0 ? null : out;
}
