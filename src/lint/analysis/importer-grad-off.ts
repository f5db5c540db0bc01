// A module-level function that this file never calls, whose every call in the modules importing it runs
// under no_grad: `def evaluate(model, loader)` of evaluation.py, run by train.py only inside `with
// torch.no_grad():`. Its forward passes record nothing, whatever evaluation context it shows on its own;
// without the importers the rule can only say "if its caller runs it under no_grad, this is already fine".
// The same for a method of a class the importers build (an RL agent's `act(obs)` run by train.py under no_grad).
import { resolveImport } from '../project/resolve';
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { callsNamed } from './calls';
import { gradOffAt } from './gradstate';
import { enclosingClass } from './models';

/**
 * Every importer's call of the function runs with autograd off, and there is at least one. A use of its
 * name other than a call or an import (`hooks=[evaluate]`, `run(evaluate)`) hands it to code that may call it
 * with autograd on: then false.
 */
export function calledOnlyGradOffByImporters(file: SourceFile, def: SyntaxNode): boolean {
  const ctx = file.session.project;
  const defName = childByField(def, 'name');
  if (ctx === null || defName === null || enclosingClass(def) !== null || def.parent?.type !== 'module') return false;
  const name = file.textOf(defName);
  let calls = 0;
  for (const module of ctx.lookup.importersOf(ctx.path, name)) {
    const other = module.file;
    const resolved = new Set<SyntaxNode>();
    for (const call of callsNamed(other, name)) {
      const fn = childByField(call, 'function');
      if (fn === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) continue;
      const target = resolveImport(other, other.textOf(fn).replace(/\s+/g, ''));
      if (target === null || target.kind !== 'function' || target.module.path !== ctx.path) continue;
      if (!gradOffAt(other, call)) return false;
      resolved.add(fn.type === 'attribute' ? (childByField(fn, 'attribute') ?? fn) : fn);
      calls++;
    }
    if (handedElsewhere(other, name, resolved)) return false;
  }
  return calls > 0;
}

/** The importer names the function other than in its calls and its import statements. */
function handedElsewhere(file: SourceFile, name: string, calledNames: ReadonlySet<SyntaxNode>): boolean {
  for (const id of file.nodesOfType('identifier')) {
    if (calledNames.has(id) || file.textOf(id) !== name) continue;
    let n: SyntaxNode | null = id.parent;
    while (n !== null && n.type !== 'import_from_statement' && n.type !== 'import_statement' && n.type !== 'module') n = n.parent;
    if (n?.type === 'import_from_statement' || n?.type === 'import_statement') continue;
    return true;
  }
  return false;
}

/**
 * A method of a module-level class that this file never calls, whose every call in the modules that
 * import the class (and build it there) runs under no_grad: an RL agent's `act(obs)`, run by train.py
 * as `with torch.no_grad(): action = agent.act(obs)`. Any call of a method of that name in such a module,
 * whatever its receiver, must be under no_grad, and the name must not be handed on as a value
 * (`policy=agent.act`): a receiver the module does not show could be this class.
 */
export function methodCalledOnlyGradOffByImporters(file: SourceFile, def: SyntaxNode): boolean {
  const ctx = file.session.project;
  const defName = childByField(def, 'name');
  const cls = enclosingClass(def);
  const clsName = cls === null ? null : childByField(cls, 'name');
  if (ctx === null || defName === null || cls === null || clsName === null || cls.parent?.type !== 'module') return false;
  const method = file.textOf(defName);
  const className = file.textOf(clsName);
  let calls = 0;
  for (const module of ctx.lookup.importersOf(ctx.path, className)) {
    const other = module.file;
    if (!buildsClass(other, className, ctx.path)) continue;
    for (const call of callsNamed(other, method)) {
      const fn = childByField(call, 'function');
      if (fn?.type !== 'attribute') continue;
      if (!gradOffAt(other, call)) return false;
      calls++;
    }
    if (attributeHanded(other, method)) return false;
  }
  return calls > 0;
}

/** The module constructs the class of `path` named `className` (`Agent(...)`, `agents.Agent(...)`). */
function buildsClass(file: SourceFile, className: string, path: string): boolean {
  for (const call of callsNamed(file, className)) {
    const fn = childByField(call, 'function');
    if (fn === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) continue;
    const target = resolveImport(file, file.textOf(fn).replace(/\s+/g, ''));
    if (target !== null && target.kind === 'class' && target.module.path === path) return true;
  }
  return false;
}

/** `x.<method>` appears other than as the function of a call: the bound method is handed on. */
function attributeHanded(file: SourceFile, method: string): boolean {
  for (const attr of file.nodesOfType('attribute')) {
    const name = childByField(attr, 'attribute');
    if (name === null || file.textOf(name) !== method) continue;
    if (attr.parent?.type === 'call' && childByField(attr.parent, 'function') === attr) continue;
    return true;
  }
  return false;
}
