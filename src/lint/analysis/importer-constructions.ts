// What the constructions of a class hand the `__init__` parameter that one of its attributes keeps: a runner
// class of running.py whose `train_epoch` loops over `self.dataloader`, kept by (its base class's) `__init__`
// from its `dataloader` parameter, built in main.py as `runner_class(model, train_loader, device, ...)` with
// `runner_class` the third element `pipeline_factory(config)` of running.py returns. Within running.py the
// attribute's value is unknown; the constructions, here and in the modules that import the class (or a factory
// of this file that returns it in a tuple), say what it is.
import { resolveImport } from '../project/resolve';
import type { ProjectModule } from '../project/types';
import { childByField, firstNamedChild, firstStartingAtOrAfter, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { VersionMemo } from '../session';
import { callsNamed } from './calls';
import { classMethods, keywordArgument, positionalArguments } from './context';
import { enclosingClass } from './models';
import { parameterNames, positionalParameters } from './parameters';
import { bindingOf, returnsOf } from './values';

export interface ConstructionArgument {
  /** The file of the construction (this one, or an importer's). */
  readonly file: SourceFile;
  /** The importer's module; null for a construction in this file. */
  readonly module: ProjectModule | null;
  /** What the construction passes for the kept parameter. */
  readonly value: SyntaxNode;
}

/** Base classes followed up to the one whose `__init__` keeps the attribute. */
const MAX_BASES = 3;

/**
 * The arguments every construction of the class of the method `self.X` (`attr`) appears in passes for the
 * parameter its `__init__` keeps as `self.X`; null when `attr` is no such attribute, when a construction cannot
 * be read (splats, an omitted argument), or when there is none.
 */
export function constructionArguments(file: SourceFile, attr: SyntaxNode): ConstructionArgument[] | null {
  const obj = attr.type === 'attribute' ? childByField(attr, 'object') : null;
  const name = attr.type === 'attribute' ? childByField(attr, 'attribute') : null;
  if (obj === null || name === null || file.textOf(obj) !== 'self') return null;
  let method: SyntaxNode | null = attr.parent;
  while (method !== null && method.type !== 'function_definition') method = method.parent;
  const cls = method === null ? null : enclosingClass(method);
  const clsName = cls === null ? null : childByField(cls, 'name');
  if (cls === null || clsName === null || cls.parent?.type !== 'module') return null;
  // Base classes and factories are found from the file's top-level statements, outside the indexes.
  file.session.noteWholeFileRead(file);
  const kept = keepingInit(file, cls, file.textOf(name));
  if (kept === null) return null;
  const index = positionalParameters(file, kept.init).indexOf(kept.param) - 1; // after `self`
  const argOf = (f: SourceFile, call: SyntaxNode): SyntaxNode | null | undefined => {
    const args = childByField(call, 'arguments');
    // A keyword given by name is the argument whatever the splats hold (`BYOLTrainer(..., device=device,
    // **config['trainer'])`: a splat giving it again would be a TypeError).
    const named = keywordArgument(f, call, kept.param);
    if (named !== null) return named;
    if (args === null || args.children.some((c) => c.type === 'list_splat' || c.type === 'dictionary_splat')) return undefined;
    return index < 0 ? null : (positionalArguments(call)[index] ?? null);
  };
  const out: ConstructionArgument[] = [];
  const add = (f: SourceFile, module: ProjectModule | null, call: SyntaxNode): boolean => {
    const value = argOf(f, call);
    if (value === undefined || value === null) return false;
    out.push({ file: f, module, value });
    return true;
  };
  const cName = file.textOf(clsName);
  for (const call of callsNamed(file, cName)) {
    if (childByField(call, 'function')?.type === 'identifier' && !add(file, null, call)) return null;
  }
  const ctx = file.session.project;
  if (ctx !== null) {
    const read = new Set<string>([ctx.path]);
    for (const importer of ctx.lookup.importersOf(ctx.path, cName)) {
      read.add(importer.path);
      for (const call of callsNamed(importer.file, cName)) {
        const fn = childByField(call, 'function');
        if (fn === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) continue;
        const resolved = resolveImport(importer.file, importer.file.textOf(fn).replace(/\s+/g, ''));
        // By path and kind, not by node: the project's copy of this module is parsed apart from the document
        // being linted (the CLI's index, or the file on disk while the editor holds newer text).
        if (resolved?.kind !== 'class' || resolved.module.path !== ctx.path) continue;
        if (!add(importer.file, importer, call)) return null;
      }
    }
    for (const [factory, at] of factoriesReturning(file, cName)) {
      for (const importer of ctx.lookup.importersOf(ctx.path, factory)) {
        for (const call of factoryMadeCalls(importer.file, factory, at, ctx.path)) if (!add(importer.file, importer, call)) return null;
      }
    }
  }
  return out.length === 0 ? null : out;
}

/** The `__init__` (of `cls` or a base class of this file it forwards its arguments to) that keeps `self.X = param`. */
function keepingInit(file: SourceFile, cls: SyntaxNode, attr: string): { init: SyntaxNode; param: string } | null {
  let k: SyntaxNode | null = cls;
  for (let hop = 0; k !== null && hop <= MAX_BASES; hop++) {
    const init = classMethods(k).find((m) => file.textOf(childByField(m, 'name') ?? m) === '__init__');
    if (init !== undefined) {
      const params = parameterNames(file, init);
      // The assignments inside `init`: a range of the by-type index (in document order), not the file's every one.
      const assignments = file.nodesOfType('assignment');
      for (let i = firstStartingAtOrAfter(assignments, init.start); i < assignments.length && assignments[i].start <= init.end; i++) {
        const a = assignments[i];
        if (a.end > init.end) continue;
        const left = childByField(a, 'left');
        const right = childByField(a, 'right');
        if (left?.type === 'attribute' && file.textOf(left).replace(/\s+/g, '') === `self.${attr}` && right?.type === 'identifier' && params.includes(file.textOf(right))) {
          return { init, param: file.textOf(right) };
        }
      }
      // `def __init__(self, *args, **kwargs): super().__init__(*args, **kwargs)`: the base's parameters, unchanged.
      if (!forwardsEverything(file, init)) return null;
    }
    k = baseClassOf(file, k);
  }
  return null;
}

function forwardsEverything(file: SourceFile, init: SyntaxNode): boolean {
  const params = childByField(init, 'parameters');
  const kinds = namedChildren(params ?? init).map((p) => p.type);
  if (params === null || kinds.length !== 3 || kinds[1] !== 'list_splat_pattern' || kinds[2] !== 'dictionary_splat_pattern') return false;
  return /\bsuper\s*\([^)]*\)\s*\.\s*__init__\s*\(\s*\*\s*\w+\s*,\s*\*\*\s*\w+\s*\)/.test(file.textOf(init));
}

/** The single base class of `cls` when it is a top-level class of this file. */
function baseClassOf(file: SourceFile, cls: SyntaxNode): SyntaxNode | null {
  const bases = namedChildren(childByField(cls, 'superclasses') ?? cls).filter((b) => b.type === 'identifier');
  if (bases.length !== 1) return null;
  return topLevelClasses.get(file, classesByName).get(file.textOf(bases[0])) ?? null;
}

/** The file's top-level classes by name (the first of a name), per version: a scan of the statements per base asked was quadratic. */
const topLevelClasses = new VersionMemo<ReadonlyMap<string, SyntaxNode>>('importerConstructions.topLevelClasses');

function classesByName(file: SourceFile): ReadonlyMap<string, SyntaxNode> {
  const out = new Map<string, SyntaxNode>();
  for (const unit of file.root.children) {
    if (unit.type !== 'class_definition') continue;
    const name = file.textOf(childByField(unit, 'name') ?? unit);
    if (!out.has(name)) out.set(name, unit);
  }
  return out;
}

/** Top-level functions of this file whose every return is a tuple and some return's element `index` names the class. */
function factoriesReturning(file: SourceFile, cName: string): ReadonlyMap<string, number> {
  return tupleFactories.get(file, factoriesByClass).get(cName) ?? new Map<string, number>();
}

/**
 * factoriesReturning for every name at once, per version (each construction asked it, and it walked
 * every top-level function's returns: quadratic in a long file). For each name, the same sets in the
 * same order as a scan for that name alone: functions, then their returns, in document order, each
 * return giving the first element that names it.
 */
const tupleFactories = new VersionMemo<ReadonlyMap<string, ReadonlyMap<string, number>>>('importerConstructions.tupleFactories');

function factoriesByClass(file: SourceFile): ReadonlyMap<string, ReadonlyMap<string, number>> {
  const byClass = new Map<string, Map<string, number>>();
  for (const unit of file.root.children) {
    if (unit.type !== 'function_definition') continue;
    const rets = returnsOf(unit).map((r) => tupleElements(firstNamedChild(r)));
    if (rets.length === 0 || rets.some((r) => r === null)) continue;
    const factory = file.textOf(childByField(unit, 'name') ?? unit);
    for (const parts of rets) {
      const first = new Map<string, number>();
      parts!.forEach((p, at) => {
        if (p.type !== 'identifier') return;
        const name = file.textOf(p);
        if (!first.has(name)) first.set(name, at);
      });
      for (const [name, at] of first) {
        let out = byClass.get(name);
        if (out === undefined) byClass.set(name, (out = new Map<string, number>()));
        out.set(factory, at);
      }
    }
  }
  return byClass;
}

function tupleElements(node: SyntaxNode | null): SyntaxNode[] | null {
  let n = node;
  while (n !== null && n.type === 'parenthesized_expression') n = firstNamedChild(n);
  return n !== null && (n.type === 'tuple' || n.type === 'expression_list') ? namedChildren(n) : null;
}

/**
 * Calls in `other` of a name unpacked from a call of this file's factory (`_, _, runner_class =
 * pipeline_factory(config)` then `runner_class(model, loader, ...)`), position `at` of the returned tuple.
 */
function factoryMadeCalls(other: SourceFile, factory: string, at: number, path: string): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (const call of other.nodesOfType('call')) {
    const fn = childByField(call, 'function');
    if (fn?.type !== 'identifier') continue;
    const binding = bindingOf(other, fn);
    if (binding?.kind !== 'assigned' || binding.sources.length === 0) continue;
    const fromFactory = binding.sources.every(({ right, index }) => {
      if (index !== at || right.type !== 'call') return false;
      const callee = childByField(right, 'function');
      if (callee === null || (callee.type !== 'identifier' && callee.type !== 'attribute')) return false;
      const text = other.textOf(callee).replace(/\s+/g, '');
      if (text !== factory && !text.endsWith(`.${factory}`)) return false;
      const resolved = resolveImport(other, text);
      return resolved?.kind === 'function' && resolved.module.path === path;
    });
    if (fromFactory) out.push(call);
  }
  return out;
}
