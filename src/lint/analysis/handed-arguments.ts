// What a function or class of another module of the project does with the arguments this file hands it:
// `engine.train_fn(train_loader, model, optimizer, device)` or `Train(model, train_loader, ..., device)`
// then `train.run_epoch()`. The callee's parameters (and, for a class, the `self.x = param` attributes its
// `__init__` keeps) are mapped back to the caller's argument expressions, so a rule can read the callee's
// loops over a parameter and evaluate the caller's value where the callee only names the parameter.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import type { ProjectModule } from '../project/types';
import { resolveImport, type ResolvedName } from '../project/resolve';
import { argumentNodes } from './call-edits';
import { classMethods, positionalArguments } from './context';
import { loopIterable } from './steps';
import { keywordParameters, parameterNames, positionalParameters } from './parameters';
import { valuesOf } from './values';

export interface HandedCallee {
  readonly module: ProjectModule;
  /** The caller's argument for each parameter it binds (by position or keyword; splats leave theirs out). */
  readonly arguments: ReadonlyMap<string, SyntaxNode>;
  /** The for loops of the callee that walk what parameter `param` was given (through enumerate/tqdm and `self.x`). */
  loopsOver(param: string): SyntaxNode[];
  /** The caller's argument behind an expression of the callee (`device`, `self.device`), or null. */
  argumentFor(node: SyntaxNode): SyntaxNode | null;
}


/** For statements of a def's own body (nested defs and classes are other scopes). */
function loopsOf(def: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const stack = [...def.children];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') continue;
    if (n.type === 'for_statement') out.push(n);
    stack.push(...n.children);
  }
  return out.sort((a, b) => a.start - b.start);
}

/** `self.x = param` in `__init__`: attribute text (`self.x`) → parameter name, for plain parameter copies only. */
function keptParameters(file: SourceFile, init: SyntaxNode, params: readonly string[]): Map<string, string> {
  const kept = new Map<string, string>();
  for (const n of file.nodesOfType('assignment')) {
    if (n.start < init.start || n.end > init.end) continue;
    const left = childByField(n, 'left');
    const right = childByField(n, 'right');
    if (left?.type !== 'attribute' || right?.type !== 'identifier' || !params.includes(file.textOf(right))) continue;
    const obj = childByField(left, 'object');
    if (obj !== null && file.textOf(obj) === 'self') kept.set(file.textOf(left).replace(/\s+/g, ''), file.textOf(right));
  }
  return kept;
}

/**
 * What a call of a plain or dotted name (`to_var(x)`, `utils.Trainer(...)`) resolves to in another module of
 * the project; null without a project, for `self.` calls and for other callee shapes.
 */
export function importedCallee(file: SourceFile, call: SyntaxNode): ResolvedName | null {
  if (file.session.project === null) return null;
  const fn = childByField(call, 'function');
  if (fn === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) return null;
  const name = file.textOf(fn).replace(/\s+/g, '');
  if (!/^[A-Za-z_][\w.]*$/.test(name) || name.startsWith('self.')) return null;
  return resolveImport(file, name);
}

/**
 * The function or class of another module of the project `call` runs, with the caller's arguments bound to
 * its parameters; null without a project, for anything else, or a callee that takes `*args`/`**kwargs`
 * where the binding could shift.
 */
export function handedCallee(file: SourceFile, call: SyntaxNode): HandedCallee | null {
  const resolved = importedCallee(file, call);
  if (resolved === null || resolved.node === null || (resolved.kind !== 'function' && resolved.kind !== 'class')) return null;
  const foreign = resolved.module.file;
  const isClass = resolved.kind === 'class';
  const def = isClass ? classMethods(resolved.node).find((m) => foreign.textOf(childByField(m, 'name') ?? m) === '__init__') : resolved.node;
  if (def === undefined) return null;
  // A class's constructor call binds `__init__`'s parameters after `self`.
  const self = isClass ? positionalParameters(foreign, def)[0] : undefined;
  const slots = positionalParameters(foreign, def).slice(isClass ? 1 : 0);
  const keywords = keywordParameters(foreign, def).filter((k) => k !== self);
  const params = parameterNames(foreign, def).filter((k) => k !== self);
  const bound = new Map<string, SyntaxNode>();
  positionalArguments(call).forEach((a, i) => {
    if (slots[i] !== undefined) bound.set(slots[i], a);
  });
  for (const a of argumentNodes(call) ?? []) {
    if (a.type === 'list_splat') return null;
    if (a.type !== 'keyword_argument') continue;
    const k = childByField(a, 'name');
    const v = childByField(a, 'value');
    if (k !== null && v !== null && keywords.includes(file.textOf(k))) bound.set(file.textOf(k), v);
  }
  const kept = isClass ? keptParameters(foreign, def, params) : new Map<string, string>();
  const scopes = isClass ? classMethods(resolved.node) : [def];
  // The parameter an expression of the callee stands for: the parameter itself (in a function), `self.x`.
  const paramOf = (node: SyntaxNode): string | null => {
    const text = foreign.textOf(node).replace(/\s+/g, '');
    if (isClass) return kept.get(text) ?? null;
    return node.type === 'identifier' && params.includes(text) ? text : null;
  };
  return {
    module: resolved.module,
    arguments: bound,
    loopsOver(param: string): SyntaxNode[] {
      const out: SyntaxNode[] = [];
      for (const scope of scopes) {
        for (const loop of loopsOf(scope)) {
          const found = loopIterable(foreign, loop);
          if (found === null) continue;
          let it = found.iterable;
          // `pbar = tqdm(data_loader)` then `for batch in pbar`: one local alias of a wrapped parameter.
          if (it.type === 'identifier' && paramOf(it) === null) {
            const values = valuesOf(foreign, it);
            const inner = values?.length === 1 && values[0].type === 'call' ? positionalArguments(values[0])[0] : undefined;
            if (inner !== undefined && /^(tqdm|enumerate|iter)$|\.tqdm$/.test(foreign.textOf(childByField(values![0], 'function') ?? values![0]))) it = inner;
          }
          if (paramOf(it) === param) out.push(loop);
        }
      }
      return out;
    },
    argumentFor(node: SyntaxNode): SyntaxNode | null {
      const param = paramOf(node);
      return param === null ? null : (bound.get(param) ?? null);
    },
  };
}
