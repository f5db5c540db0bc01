// Forward passes run through a method of a module class defined in another module of the project:
// `model = SentenceVAE(...)` (model.py) then `model.inference(n=10)`, whose body calls the model's own
// submodules. Within one file such a call is no evidence (method-forwards.ts): the method may be decorated
// with no_grad where it is defined. With the project index that file is read: a method of an nn.Module
// subclass that calls `self(...)`, `self.forward(...)` or a submodule assigned in the class, and never
// mentions no_grad / inference_mode, records a graph wherever it is called with autograd on.
import { resolveImport } from '../project/resolve';
import type { ProjectModule } from '../project/types';
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod } from './imports';
import { keyOf } from './models';
import { nodesInScope } from './scope-nodes';
import { returnsOf, valuesOf } from './values';
import { importerHandedClass } from './importer-handed-models';
import { VersionMemo } from '../session';

export interface ImportedForward {
  readonly call: SyntaxNode;
  /** `model.inference`. */
  readonly receiver: string;
  /** `SentenceVAE.inference` in `model.py:42`: what the verdict rests on. */
  readonly definedIn: string;
  /** Every return of the method cuts the history (`return h.detach(), c.detach()`): its result carries none. */
  readonly outputCut?: boolean;
}

const CALLS = new Set(['call']);
/** Module API that runs no forward pass (or, like generate(), runs it under no_grad in the libraries). */
const NOT_FORWARD = /^(parameters|named_parameters|buffers|named_buffers|modules|named_modules|children|named_children|state_dict|load_state_dict|to|cuda|cpu|half|float|double|bfloat16|eval|train|zero_grad|requires_grad_|apply|register_\w+|detach|item|numpy|generate|forward|__\w+__)$/;
/** `model = model.cuda()`: a rebinding of the same module, not another value. */
const SAME_MODULE = new Set(['to', 'cuda', 'cpu', 'half', 'float', 'double', 'bfloat16', 'eval', 'train', 'requires_grad_']);

/** The calls of `scope` itself to such a method, in document order. */
export function importedMethodForwardCalls(file: SourceFile, scope: SyntaxNode): ImportedForward[] {
  if (file.session.project === null) return [];
  const out: ImportedForward[] = [];
  for (const call of nodesInScope(file, scope, CALLS)) {
    const fn = childByField(call, 'function');
    if (fn?.type !== 'attribute') continue;
    const object = childByField(fn, 'object');
    const attr = childByField(fn, 'attribute');
    const key = keyOf(file, object);
    if (object === null || attr === null || key === null || key === 'self' || key.startsWith('self.')) continue;
    const method = file.textOf(attr);
    if (NOT_FORWARD.test(method)) continue;
    // A parameter of a function only other modules call (`def evaluate(model, dataset)` of utils.py, called
    // from main.py): the class of the model those modules hand it, unless every such call runs under no_grad.
    const direct = importedClassOf(file, object);
    const handedIn = direct === null ? importerHandedClass(file, object) : null;
    const cls = direct ?? handedIn;
    if (cls === null) continue;
    const def = forwardingMethod(cls.module.file, cls.node, method);
    if (def === null) continue;
    const handed = handedIn === null ? '' : `, on the model ${handedIn.handedAt} hands in,`;
    out.push({ call, receiver: `${key}.${method}`, definedIn: `\`${cls.name}.${method}\` in ${cls.module.display}:${cls.module.file.lineOf(def.start) + 1}${handed}`, outputCut: returnsCut(cls.module.file, def) });
  }
  return out;
}

/** The class of another module of the project every value of `object` is an instance of, or null. */
export function importedClassOf(file: SourceFile, object: SyntaxNode): ImportedClass | null {
  const values = valuesOf(file, object);
  return values === null ? null : classOfValues(file, object, values);
}

export interface ImportedClass {
  readonly module: ProjectModule;
  readonly node: SyntaxNode;
  readonly name: string;
}

/** The class of another module of the project every one of `values` (what `object` may hold in `file`) is an instance of, or null. */
export function classOfValues(file: SourceFile, object: SyntaxNode, values: readonly SyntaxNode[]): ImportedClass | null {
  let found: ImportedClass | null = null;
  for (const value of values) {
    const v = constructorOf(file, value);
    if (v.type !== 'call') return null;
    const fn = childByField(v, 'function');
    if (fn === null) return null;
    // `model = model.cuda()` / `model.to(device)`: the same module.
    const inner = fn.type === 'attribute' ? childByField(fn, 'object') : null;
    if (inner !== null && file.textOf(inner) === file.textOf(object) && SAME_MODULE.has(calleeMethod(file, v) ?? '')) continue;
    if (fn.type !== 'identifier' && fn.type !== 'attribute') return null;
    const resolved = resolveImport(file, file.textOf(fn).replace(/\s+/g, ''));
    if (resolved === null || resolved.kind !== 'class' || resolved.node === null) return null;
    if (found !== null && found.node !== resolved.node) return null;
    found = { module: resolved.module, node: resolved.node, name: resolved.module.file.textOf(childByField(resolved.node, 'name') ?? resolved.node) };
  }
  return found;
}

/**
 * `DGI(n_in, n_h).cuda()`, `Net().to(device).eval()`: the module built by the constructor at the head of a
 * chain of calls that return the same module (nn.Module's `.to()`/`.cuda()`/`.eval()` return `self`).
 */
function constructorOf(file: SourceFile, value: SyntaxNode): SyntaxNode {
  let v = value;
  while (v.type === 'call' && SAME_MODULE.has(calleeMethod(file, v) ?? '')) {
    const fn = childByField(v, 'function');
    const inner = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
    if (inner?.type !== 'call') break;
    v = inner;
  }
  return v;
}

interface ClassFacts {
  /** Methods by name (decorators looked through: the decorated_definition when there is one). */
  readonly methods: ReadonlyMap<string, SyntaxNode>;
  /** `self.X = <call>` anywhere in the class, X not a method: its submodules (and other built objects). */
  readonly built: ReadonlySet<string>;
  readonly isModule: boolean;
}

const classFactsMemo = new VersionMemo<ClassFacts>('importedMethodForwards.classFacts');

function classFacts(file: SourceFile, cls: SyntaxNode): ClassFacts {
  return classFactsMemo.keyed(file, cls, () => {
    const methods = new Map<string, SyntaxNode>();
    const built = new Set<string>();
    const body = childByField(cls, 'body');
    for (const member of body?.children ?? []) {
      const def = member.type === 'decorated_definition' ? childByField(member, 'definition') : member;
      if (def?.type !== 'function_definition') continue;
      const name = childByField(def, 'name');
      if (name !== null) methods.set(file.textOf(name), member);
    }
    for (const a of file.nodesOfType('assignment')) {
      if (a.start < cls.start || a.end > cls.end) continue;
      const left = childByField(a, 'left');
      const right = childByField(a, 'right');
      if (left?.type !== 'attribute' || right?.type !== 'call' || file.textOf(childByField(left, 'object') ?? left) !== 'self') continue;
      const attr = childByField(left, 'attribute');
      if (attr !== null) built.add(file.textOf(attr));
    }
    for (const m of methods.keys()) built.delete(m);
    const bases = childByField(cls, 'superclasses');
    return { methods, built, isModule: bases !== null && /\bModule\b/.test(file.textOf(bases)) };
  });
}

/**
 * The method `name` of `cls` when it runs a forward pass of the module with autograd left as the caller
 * has it: the class is an nn.Module subclass, the method calls `self(...)`, `self.forward(...)` or one of
 * the class's built attributes, and neither its decorators nor its body mention no_grad / inference_mode.
 */
/** The history-cutting conversions a returned value may end in. */
const CUTS = /\.(detach|item|tolist|numpy)\s*\(\s*\)$|\.data$/;

/**
 * The method returns something, and every returned value (or every element of a returned tuple) ends in a
 * cut (`return h_1.detach(), c.detach()`, DGI's `embed`): whatever the caller does with the result, no
 * backward can reach the graph the method recorded (it only raised the peak while the method ran).
 */
function returnsCut(file: SourceFile, def: SyntaxNode): boolean {
  const returns = returnsOf(def);
  if (returns.length === 0) return false;
  return returns.every((r) => {
    const value = namedChildren(r).find((c) => c.type !== 'comment');
    if (value === undefined) return false;
    const parts = value.type === 'expression_list' || value.type === 'tuple' ? namedChildren(value).filter((c) => c.type !== 'comment') : [value];
    return parts.length > 0 && parts.every((p) => CUTS.test(file.textOf(p).replace(/\s+/g, '')));
  });
}

function forwardingMethod(file: SourceFile, cls: SyntaxNode, name: string): SyntaxNode | null {
  const facts = classFacts(file, cls);
  const member = facts.methods.get(name);
  if (!facts.isModule || member === undefined) return null;
  if (/\b(no_grad|inference_mode|set_grad_enabled)\b/.test(file.textOf(member))) return null;
  for (const call of file.nodesOfType('call')) {
    if (call.start < member.start || call.end > member.end) continue;
    const fn = childByField(call, 'function');
    if (fn === null) continue;
    if (fn.type === 'identifier' && file.textOf(fn) === 'self') return member;
    if (fn.type !== 'attribute' || file.textOf(childByField(fn, 'object') ?? fn) !== 'self') continue;
    const attr = file.textOf(childByField(fn, 'attribute') ?? fn);
    if (attr === 'forward' || facts.built.has(attr)) return member;
  }
  return null;
}
