// Values that come from another module of the project: what a call of an imported function returns,
// and what the file's own call sites pass for a parameter (without resolving it, so that the caller can
// follow each argument across files too). values.ts stays within one file; this is the step out of it.
import { resolveImport } from '../project/resolve';
import type { ProjectModule } from '../project/types';
import { childByField, firstNamedChild, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { callsNamed } from './calls';
import { enclosingClass } from './models';
import { keywordArgument, positionalArguments } from './context';
import { parameterNames, positionalParameters } from './parameters';
import { assignedNames, functionsNamed, returnsOf } from './values';
import { importBindings } from './imports';
import { returnOffCallPath } from './flag-returns';

export interface ImportedReturns {
  /** The module the function is defined in: `values` are nodes of `module.file`, not of the caller's file. */
  readonly module: ProjectModule;
  readonly values: readonly SyntaxNode[];
  /** `data/loader.py:42`: where the function is defined. */
  readonly where: string;
}

/**
 * What `call` returns when it calls a function imported from another module of the project (`load_data(...)`,
 * `utils.build_loader(...)`): every `return`'s value, or its element `index` when the caller unpacks the
 * result (`train, val = load_data(...)`). Null for anything else, or when a return is bare or not a tuple
 * of that size.
 */
export function importedReturns(file: SourceFile, call: SyntaxNode, index: number | null): ImportedReturns | null {
  if (file.session.project === null || call.type !== 'call') return null;
  const fn = childByField(call, 'function');
  if (fn === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) return null;
  const name = file.textOf(fn).replace(/\s+/g, '');
  if (!/^[A-Za-z_][\w.]*$/.test(name)) return null;
  const resolved = resolveImport(file, name);
  if (resolved === null || resolved.kind !== 'function' || resolved.node === null) return null;
  const values: SyntaxNode[] = [];
  for (const ret of returnsOf(resolved.node)) {
    // A return on the branch this call's flag rules out (`if test: return loader`) is not what it gets.
    if (index !== null && returnOffCallPath(resolved.module.file, resolved.node, ret, file, call)) continue;
    const value = firstNamedChild(ret);
    if (value === null) return null;
    if (index === null) {
      values.push(value);
      continue;
    }
    const parts = elementsOf(value);
    if (parts === null || parts[index] === undefined) return null;
    values.push(parts[index]);
  }
  return values.length === 0 ? null : { module: resolved.module, values, where: resolved.where };
}

function elementsOf(node: SyntaxNode): SyntaxNode[] | null {
  let n: SyntaxNode | null = node;
  while (n !== null && n.type === 'parenthesized_expression') n = firstNamedChild(n);
  if (n === null || (n.type !== 'tuple' && n.type !== 'list' && n.type !== 'expression_list')) return null;
  return namedChildren(n);
}

/**
 * The argument expressions the file's call sites pass for parameter `name` of `def` (by position or
 * keyword; the default where a site omits it), unresolved; null when a site cannot be read (`*args`,
 * `**kwargs`) or there is no site and no default. A method's calls through an attribute skip `self`.
 */
export function callSiteArguments(file: SourceFile, def: SyntaxNode, name: string): SyntaxNode[] | null {
  const defName = childByField(def, 'name');
  if (defName === null) return null;
  if (!parameterNames(file, def).includes(name)) return null;
  const index = positionalParameters(file, def).indexOf(name);
  const isMethod = def.parent?.type === 'block' && def.parent.parent?.type === 'class_definition';
  const fallback = defaultOf(file, def, name);
  const out: SyntaxNode[] = [];
  for (const call of callsNamed(file, file.textOf(defName))) {
    const fn = childByField(call, 'function');
    const args = childByField(call, 'arguments');
    if (fn === null || args === null || args.type !== 'argument_list') continue;
    if (args.children.some((c) => c.type === 'list_splat' || c.type === 'dictionary_splat')) return null;
    const offset = isMethod && fn.type === 'attribute' ? 1 : 0;
    const arg = keywordArgument(file, call, name) ?? positionalArguments(call)[index - offset] ?? fallback;
    if (arg === null) return null;
    out.push(arg);
  }
  if (out.length === 0 && fallback !== null) out.push(fallback);
  return out.length === 0 ? null : out;
}

function defaultOf(file: SourceFile, def: SyntaxNode, name: string): SyntaxNode | null {
  for (const p of childByField(def, 'parameters')?.children ?? []) {
    if (p.type !== 'default_parameter' && p.type !== 'typed_default_parameter') continue;
    const n = childByField(p, 'name');
    if (n !== null && file.textOf(n) === name) return childByField(p, 'value');
  }
  return null;
}

export interface ImporterArguments {
  /** A module that imports this file and calls the function: `args` are nodes of `module.file`. */
  readonly module: ProjectModule;
  readonly args: readonly SyntaxNode[];
}

/**
 * What the modules that import this file pass for parameter `name` of its module-level function `def`
 * (`fit_one_epoch(..., gen, gen_val, ...)` in train.py for `def fit_one_epoch(..., gen, gen_val, ...)` of
 * utils/utils_fit.py), when the file itself never calls it. Only calls that resolve to this very function
 * count; with `notebookGlobals`, also a call by the bare name that nothing in the calling module binds (no
 * import, def, assignment or star import: a notebook exported cell by cell into files, whose functions were
 * globals of the notebook). Null when nothing is found, or when a call's argument cannot be read (splats, an
 * omitted argument without a default).
 */
export function importerArguments(file: SourceFile, def: SyntaxNode, name: string, notebookGlobals = false): ImporterArguments[] | null {
  const ctx = file.session.project;
  const defName = childByField(def, 'name');
  if (ctx === null || defName === null || enclosingClass(def) !== null || def.parent?.type !== 'module') return null;
  const fnName = file.textOf(defName);
  if (!parameterNames(file, def).includes(name)) return null;
  const index = positionalParameters(file, def).indexOf(name);
  const out: ImporterArguments[] = [];
  for (const module of ctx.lookup.importersOf(ctx.path, fnName)) {
    const args: SyntaxNode[] = [];
    for (const call of callsNamed(module.file, fnName)) {
      const fn = childByField(call, 'function');
      if (fn === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) continue;
      const resolved = resolveImport(module.file, module.file.textOf(fn).replace(/\s+/g, ''));
      const global = resolved === null && notebookGlobals && fn.type === 'identifier' && unboundName(module.file, fnName);
      if (!global && (resolved === null || resolved.kind !== 'function' || resolved.module.path !== ctx.path)) continue;
      const list = childByField(call, 'arguments');
      if (list === null || list.children.some((c) => c.type === 'list_splat' || c.type === 'dictionary_splat')) return null;
      const arg = keywordArgument(module.file, call, name) ?? positionalArguments(call)[index] ?? null;
      // An omitted argument takes the default, a node of this file: not mixed with the importer's.
      if (arg === null) return null;
      args.push(arg);
    }
    if (args.length > 0) out.push({ module, args });
  }
  return out.length === 0 ? null : out;
}

/**
 * Nothing in `file` binds `name`: no import (nor a star import that may), no def or class, no assignment. In a
 * notebook exported into files, such a name was a global of an earlier cell.
 */
export function unboundName(file: SourceFile, name: string): boolean {
  if (importBindings(file).has(name) || functionsNamed(file, name).length > 0 || assignedNames(file, name).length > 0) return false;
  if (file.nodesOfType('import_from_statement').some((st) => st.children.some((c) => c.type === 'wildcard_import'))) return false;
  return !file.nodesOfType('class_definition').some((c) => file.textOf(childByField(c, 'name') ?? c) === name);
}
