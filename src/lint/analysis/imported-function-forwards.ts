// Forward passes run by a function of another module of the project that is handed the model:
// `beam_search(src, model, ...)` (Beam.py) whose body calls `model.decoder(...)`, `greedy_decode(model, x)`,
// `predict(model, batch)`. Within one file such a call is no evidence (the routine may run under no_grad
// where it is defined). With the project index that file is read: when the function runs the parameter the
// model is passed as (`model(...)`, `model.forward(...)`, `model.decoder(...)`, as forwardReceiver sees it
// there), directly or through a function of its own module handed it on, and its text never mentions
// no_grad / inference_mode / set_grad_enabled, the call records a graph wherever it runs with autograd on.
import { resolveImport } from '../project/resolve';
import type { ProjectModule } from '../project/types';
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { positionalArguments } from './context';
import { keywordParameters, positionalParameters } from './parameters';
import { forwardReceiver, isModelKey, keyOf } from './models';
import { nodesInScope } from './scope-nodes';
import type { ImportedForward } from './imported-method-forwards';
import { reachesGradients } from './inference';

export interface ImportedFunctionForward extends ImportedForward {
  /** The routine in the other module (its own file may already report it: then not here). */
  readonly callee: { readonly file: SourceFile; readonly node: SyntaxNode };
}

const CALLS = new Set(['call']);
const GRAD_MODE = /\b(no_grad|inference_mode|set_grad_enabled)\b/;
/** Functions followed inside the other module (the routine and the helpers it hands the model on to). */
const MAX_DEPTH = 2;

/** The calls of `scope` itself to such a function, in document order. */
export function importedFunctionForwardCalls(file: SourceFile, scope: SyntaxNode): ImportedFunctionForward[] {
  if (file.session.project === null) return [];
  const out: ImportedFunctionForward[] = [];
  for (const call of nodesInScope(file, scope, CALLS)) {
    const fn = childByField(call, 'function');
    if (fn?.type !== 'identifier' && fn?.type !== 'attribute') continue;
    const handed = handedModules(file, call);
    if (handed.length === 0) continue;
    const resolved = resolveImport(file, file.textOf(fn).replace(/\s+/g, ''));
    // A routine that trains (reaches backward()/a step in its module) is a training step, not a forward pass.
    if (resolved === null || resolved.kind !== 'function' || resolved.node === null || reachesGradients(resolved.module.file, resolved.node)) continue;
    const hit = handed.find((h) => runsParameter(resolved.module, resolved.node!, h.position, h.keyword, MAX_DEPTH));
    if (hit === undefined) continue;
    const name = resolved.module.file.textOf(childByField(resolved.node, 'name') ?? resolved.node);
    out.push({ call, receiver: hit.key, definedIn: `\`${name}\` in ${resolved.where}`, callee: { file: resolved.module.file, node: resolved.node } });
  }
  return out;
}

interface Handed {
  readonly key: string;
  /** Positional index, or -1 for a keyword argument. */
  readonly position: number;
  readonly keyword: string | null;
}

/** The call's arguments that are models of this file (`beam_search(src, model, ...)`, `run(net=self.net)`). */
function handedModules(file: SourceFile, call: SyntaxNode): Handed[] {
  const out: Handed[] = [];
  positionalArguments(call).forEach((a, position) => {
    const key = keyOf(file, a);
    if (key !== null && key !== 'self' && isModelKey(file, key)) out.push({ key, position, keyword: null });
  });
  for (const a of childByField(call, 'arguments')?.children ?? []) {
    if (a.type !== 'keyword_argument') continue;
    const key = keyOf(file, childByField(a, 'value'));
    const name = childByField(a, 'name');
    if (key !== null && name !== null && key !== 'self' && isModelKey(file, key)) out.push({ key, position: -1, keyword: file.textOf(name) });
  }
  return out;
}

/**
 * Whether `fn` of `module` runs a forward pass of the parameter a caller's argument binds (by position or
 * keyword), with autograd as its caller has it: itself, or through a function of the same module that it
 * hands the parameter on to.
 */
function runsParameter(module: ProjectModule, fn: SyntaxNode, position: number, keyword: string | null, depth: number): boolean {
  const file = module.file;
  if (GRAD_MODE.test(file.textOf(fn.parent?.type === 'decorated_definition' ? fn.parent : fn))) return false;
  const param = keyword ?? positionalParameters(file, fn)[position];
  if (param === undefined || (keyword !== null && !keywordParameters(file, fn).includes(keyword))) return false;
  for (const call of nodesInScope(file, fn, CALLS)) {
    const receiver = forwardReceiver(file, call);
    if (receiver !== null && (receiver === param || receiver.startsWith(`${param}.`))) return true;
    if (depth <= 1) continue;
    // `init_vars(src, model, ...)`: a function of the same module handed the parameter on.
    const callee = childByField(call, 'function');
    if (callee?.type !== 'identifier') continue;
    const local = file.root.children
      .map((u) => (u.type === 'decorated_definition' ? childByField(u, 'definition') : u))
      .find((u) => u?.type === 'function_definition' && file.textOf(childByField(u, 'name') ?? u) === file.textOf(callee));
    if (local === undefined || local === null || local === fn) continue;
    const at = positionalArguments(call).findIndex((a) => keyOf(file, a) === param);
    if (at >= 0 && runsParameter(module, local, at, null, depth - 1)) return true;
  }
  return false;
}
