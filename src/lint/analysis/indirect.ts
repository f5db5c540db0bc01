// Forward passes reached through helpers of the same file. Evaluation code often runs its model in a
// helper: `self._run_batch(x, y)` on the training class, a module-level `forward_batch(model, x)`, an
// object's `translator.translate(s)` / `agent.predict(obs)`. The rules that ask "does this code run a
// forward pass?" (MH001, MH011, MH012) follow such calls here: which functions of the file a call runs,
// and the first forward pass that records a graph reached through them (depth-limited), with its module
// named in the caller's terms (`forward_batch(self.net, x)` runs `self.net`).
import { childByField, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import { gradMaybeOffAt, gradOffWithin } from './gradstate';
import { keywordArgument, positionalArguments } from './context';
import { importBindings } from './imports';
import { callsByScope, enclosingClass, forwardReceiver, frozenTarget, isModelKey, keyOf, scopeOf } from './models';
import { isInferenceName, reachesGradients, trainsInUnseenMethod } from './inference';
import { flowOf, Taint } from './flow';
import { FilteredNodes, intern } from './unitcache';
import { callsNamed } from './calls';
import { NodeMemo, VersionMemo } from '../session';

/** Helpers nested deeper than this are not followed (each level is a function of this file). */
export const MAX_HELPER_DEPTH = 3;

/** Method names that, called on an object of this file, are followed when the object's class is unknown. */
const EVAL_METHOD = /^_*(evaluate|eval|validate|test|predict|infer|inference|run_inference)(_\w+)?$/i;

/** Libraries whose functions never hold a project's training code. */
const LIBRARY = /^(torch|torchvision|torchaudio|torchtext|numpy|scipy|sklearn|pandas|PIL|cv2|math|os|sys|time|json|random|collections|itertools|functools|logging|warnings|tqdm|wandb|matplotlib|seaborn|tensorboard|tensorboardX|transformers|timm|einops|accelerate|lightning|pytorch_lightning|datasets|typing|copy|re|pathlib|pickle|argparse|gc|shutil|glob)(\.|$)/;

/** A forward pass reached from a call through functions of this file. */
export interface HelperForward {
  /** The forward pass call itself (inside some helper). */
  readonly forward: SyntaxNode;
  /** Its module, in the terms of the scope that made the outermost call (`model`, `self.net`). */
  readonly receiver: string;
  /** The calls from the caller down to the forward: the first is the caller's call, the last the forward. */
  readonly path: readonly SyntaxNode[];
  /** A function of another file that the helpers hand the module or its output to (`log_batch`), or null. */
  readonly external: string | null;
}

interface Frame {
  readonly forward: SyntaxNode;
  /** The receiver in the terms of the function that holds the path's first call. */
  readonly receiver: string;
  readonly path: readonly SyntaxNode[];
  readonly external: string | null;
}

// ---- Resolving calls to functions of this file -----------------------------------------------------

interface FileFunctions {
  /** Module-level functions by name. */
  readonly moduleLevel: ReadonlyMap<string, SyntaxNode>;
  /** Classes by name: their methods by name, and the names of their bases. */
  readonly classes: ReadonlyMap<string, { readonly methods: ReadonlyMap<string, SyntaxNode>; readonly bases: readonly string[] }>;
  /** Keys assigned an instance of a class of this file (`translator = Translator().to(device)`). */
  readonly instances: ReadonlyMap<string, string>;
  /** Functions nested in a function (closures such as `def get_policy(obs)` inside `train()`), by enclosing function and name. */
  readonly nested: ReadonlyMap<SyntaxNode, ReadonlyMap<string, SyntaxNode>>;
}

const functionsMemo = new VersionMemo<FileFunctions>('indirect.functions');

function definitionOf(node: SyntaxNode): SyntaxNode | null {
  if (node.type === 'function_definition' || node.type === 'class_definition') return node;
  if (node.type === 'decorated_definition') return childByField(node, 'definition');
  return null;
}

function fileFunctions(file: SourceFile): FileFunctions {
  return functionsMemo.get(file, () => {
    const moduleLevel = new Map<string, SyntaxNode>();
    const classes = new Map<string, { methods: Map<string, SyntaxNode>; bases: string[] }>();
    for (const top of file.root.children) {
      const def = definitionOf(top);
      const name = def === null ? null : childByField(def, 'name');
      if (def === null || name === null) continue;
      if (def.type === 'function_definition') moduleLevel.set(file.textOf(name), def);
      else {
        const methods = new Map<string, SyntaxNode>();
        for (const stmt of childByField(def, 'body')?.children ?? []) {
          const m = definitionOf(stmt);
          const mName = m?.type === 'function_definition' ? childByField(m, 'name') : null;
          if (m !== null && mName !== null && !methods.has(file.textOf(mName))) methods.set(file.textOf(mName), m);
        }
        const sup = childByField(def, 'superclasses');
        const bases = (sup?.children ?? []).filter((c) => c.type === 'identifier').map((c) => file.textOf(c));
        classes.set(file.textOf(name), { methods, bases });
      }
    }
    const instances = new Map<string, string>();
    for (const a of constructions.get(file, '')) {
      const key = keyOf(file, childByField(a, 'left'));
      const cls = constructedClass(file, childByField(a, 'right'));
      if (key !== null && cls !== null && classes.has(cls) && !instances.has(key)) instances.set(key, cls);
    }
    const nested = new Map<SyntaxNode, Map<string, SyntaxNode>>();
    for (const def of file.nodesOfType('function_definition')) {
      const outer = scopeOf(def);
      const name = childByField(def, 'name');
      if (outer?.type !== 'function_definition' || name === null) continue;
      let byName = nested.get(outer);
      if (byName === undefined) nested.set(outer, (byName = new Map<string, SyntaxNode>()));
      if (!byName.has(file.textOf(name))) byName.set(file.textOf(name), def);
    }
    return { moduleLevel, classes, instances, nested };
  });
}

/** Assignments `key = Name(...)...` (syntactic: whether Name is a class of this file is asked per version). */
const constructions = new FilteredNodes('indirect.constructions', 'assignment', (file, a) => keyOf(file, childByField(a, 'left')) !== null && constructedClass(file, childByField(a, 'right')) !== null);

/** `Translator(...)`, `Translator(...).to(device).eval()`: the class name, or null. */
function constructedClass(file: SourceFile, value: SyntaxNode | null): string | null {
  let call = value;
  while (call?.type === 'call') {
    const fn = childByField(call, 'function');
    if (fn?.type === 'identifier') return file.textOf(fn);
    if (fn?.type !== 'attribute') return null;
    call = childByField(fn, 'object');
  }
  return null;
}

/** The method `name` of class `cls` or of a base class of this file (nearest first). */
function methodOf(functions: FileFunctions, cls: string, name: string, depth = 0): SyntaxNode | null {
  const c = functions.classes.get(cls);
  if (c === undefined || depth > 4) return null;
  return c.methods.get(name) ?? c.bases.map((b) => methodOf(functions, b, name, depth + 1)).find((m) => m !== null) ?? null;
}

function classNameOf(file: SourceFile, fn: SyntaxNode): string | null {
  const cls = enclosingClass(fn);
  const name = cls === null ? null : childByField(cls, 'name');
  return name === null ? null : file.textOf(name);
}

/**
 * The function of this file a call runs, or null: `helper(...)` (a module-level function),
 * `self.helper(...)` in a method (the class's own or a base class's method), `obj.method(...)` on an
 * instance of a class of this file, and `obj.predict(...)`-like inference/evaluation methods that exactly
 * one class of the file defines.
 */
export function localCallee(file: SourceFile, call: SyntaxNode): SyntaxNode | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  const functions = fileFunctions(file);
  if (fn.type === 'identifier') {
    const name = file.textOf(fn);
    for (let s = scopeOf(call); s?.type === 'function_definition'; s = scopeOf(s)) {
      const closure = functions.nested.get(s)?.get(name);
      if (closure !== undefined) return closure;
    }
    return functions.moduleLevel.get(name) ?? null;
  }
  if (fn.type !== 'attribute') return null;
  const method = file.textOf(childByField(fn, 'attribute') ?? fn);
  const objectKey = keyOf(file, childByField(fn, 'object'));
  if (objectKey === null) return null;
  if (objectKey === 'self') {
    const scope = scopeOf(call);
    const cls = scope?.type === 'function_definition' ? classNameOf(file, scope) : null;
    return cls === null ? null : methodOf(functions, cls, method);
  }
  const cls = functions.instances.get(objectKey);
  if (cls !== undefined) return methodOf(functions, cls, method);
  if (!isInferenceName(method) && !EVAL_METHOD.test(method)) return null;
  const defining = [...functions.classes.values()].map((c) => c.methods.get(method)).filter((m) => m !== undefined);
  return defining.length === 1 ? defining[0] : null;
}

// ---- Following helpers to a forward pass -----------------------------------------------------------

/** Calls whose nearest scope is `fn`, in document order. */
function callsOf(file: SourceFile, fn: SyntaxNode): SyntaxNode[] {
  const calls = file.nodesOfType('call');
  const out: SyntaxNode[] = [];
  for (let i = firstStartingAtOrAfter(calls, fn.start); i < calls.length && calls[i].start < fn.end; i++) if (scopeOf(calls[i]) === fn) out.push(calls[i]);
  return out;
}

/**
 * `receiver` (a key in the callee's terms) in the caller's terms: a parameter is replaced by the
 * argument the call passes for it, `self` by the object the method is called on.
 */
export function mapReceiver(file: SourceFile, call: SyntaxNode, callee: SyntaxNode, receiver: string): string | null {
  const dot = receiver.indexOf('.');
  const head = dot < 0 ? receiver : receiver.slice(0, dot);
  const rest = dot < 0 ? '' : receiver.slice(dot);
  const fn = childByField(call, 'function');
  const isMethod = enclosingClass(callee) !== null;
  if (head === 'self' && isMethod) {
    const object = fn?.type === 'attribute' ? keyOf(file, childByField(fn, 'object')) : null;
    return object === null ? null : `${object}${rest}`;
  }
  const params = parameterKeys(file, callee);
  const index = params.indexOf(head);
  if (index < 0) return receiver; // a global (`model` at module level) or an attribute chain of one
  const offset = isMethod && params[0] === 'self' ? 1 : 0;
  const arg = positionalArguments(call)[index - offset] ?? keywordArgument(file, call, head);
  const key = keyOf(file, arg ?? null);
  return key === null ? null : `${key}${rest}`;
}

function parameterKeys(file: SourceFile, def: SyntaxNode): string[] {
  const params = childByField(def, 'parameters');
  return (params?.children ?? [])
    .filter((p) => p.named && p.type !== 'comment')
    .map((p) => {
      const id = p.type === 'identifier' ? p : (childByField(p, 'name') ?? p.children.find((c) => c.type === 'identifier') ?? null);
      return id === null ? '' : file.textOf(id);
    });
}

/** A forward pass in `fn` itself that records a graph as far as `fn`'s own code says. */
function recordingForward(file: SourceFile, fn: SyntaxNode): SyntaxNode | null {
  // Grad mode is judged inside the helper only: whoever calls it decides the rest.
  return recordingForwards(file, fn)[0] ?? null;
}

/** A function of another file (not a library) handed the module or a value with history in `fn`. */
function externalConsumer(file: SourceFile, fn: SyntaxNode): string | null {
  const imports = importBindings(file);
  const flow = flowOf(file, fn);
  for (const call of callsOf(file, fn)) {
    const callee = childByField(call, 'function');
    const head = callee === null ? null : keyOf(file, callee)?.split('.')[0];
    const binding = head === undefined || head === null ? undefined : imports.get(head);
    if (binding === undefined || LIBRARY.test(binding.qualified)) continue;
    const args = positionalArguments(call);
    if (args.some((a) => flow.taintOf(a) === Taint.Tainted || isModelKey(file, keyOf(file, a) ?? ''))) return file.textOf(callee!);
  }
  return null;
}

const framesMemo = new VersionMemo<(Frame | null | undefined)[]>('indirect.frames');

/**
 * The first recording forward pass `fn` reaches (itself, or through the helpers it calls, `depth`
 * levels at most), with its receiver in `fn`'s terms. Functions that train (reach backward() or an
 * optimizer step, in any way the file shows) are not followed: their forward is a training step's.
 */
function frameOf(file: SourceFile, fn: SyntaxNode, depth: number): Frame | null {
  const frames = framesMemo.keyed(file, fn, () => new Array<Frame | null | undefined>(MAX_HELPER_DEPTH + 1));
  const known = frames[depth];
  if (known !== undefined) return known;
  frames[depth] = null; // recursion guard (a cycle reaches nothing new)
  const frame = computeFrame(file, fn, depth);
  frames[depth] = frame;
  return frame;
}

function computeFrame(file: SourceFile, fn: SyntaxNode, depth: number): Frame | null {
  if (reachesGradients(file, fn) || mayTrainInUnseenMethod(file, fn)) return null;
  const external = externalConsumer(file, fn);
  const direct = recordingForward(file, fn);
  if (direct !== null) return { forward: direct, receiver: forwardReceiver(file, direct) ?? 'model', path: [direct], external };
  if (depth === 0) return null;
  for (const call of callsOf(file, fn)) {
    if (gradOffWithin(file, call) || gradMaybeOffAt(file, call)) continue;
    const inner = helperForwardAt(file, call, depth - 1);
    if (inner !== null) return { forward: inner.forward, receiver: inner.receiver, path: inner.path, external: external ?? inner.external };
  }
  return null;
}

/**
 * `fn` hands an optimizer or a loss to a method no class of this file defines (inference.ts,
 * trainsInUnseenMethod): `fn` is not known to train nothing.
 */
function mayTrainInUnseenMethod(file: SourceFile, fn: SyntaxNode): boolean {
  return callsOf(file, fn).some((call) => localCallee(file, call) === null && trainsInUnseenMethod(file, call));
}

function helperForwardAt(file: SourceFile, call: SyntaxNode, depth: number): HelperForward | null {
  if (forwardReceiver(file, call) !== null) return null;
  const callee = localCallee(file, call);
  if (callee === null || callee === scopeOf(call)) return null;
  const frame = frameOf(file, callee, depth);
  if (frame === null) return null;
  const receiver = mapReceiver(file, call, callee, frame.receiver);
  if (receiver === null) return null;
  return { forward: frame.forward, receiver, path: [call, ...frame.path], external: frame.external };
}

/**
 * The forward pass a call runs through helpers of this file that train nothing, or null (the call is
 * itself a forward pass, runs no function of this file, or that function reaches no recording forward
 * within MAX_HELPER_DEPTH levels).
 */
export function helperForward(file: SourceFile, call: SyntaxNode): HelperForward | null {
  return helperForwardAt(file, call, MAX_HELPER_DEPTH - 1);
}

/** Calls in `scope` (its own code, not nested definitions) that reach a forward pass through helpers. */
export function helperForwardCalls(file: SourceFile, scope: SyntaxNode): readonly SyntaxNode[] {
  // A call reaching a forward through a helper runs a function of this file, so it is one of callSites:
  // only those are tried, not every call of every scope (most calls of a long file resolve to nothing).
  return scopeHelperCalls.keyed(file, scope, () => (resolvedCallsByScope(file).get(scope) ?? []).filter((c) => helperForward(file, c) !== null));
}

const scopeHelperCalls = new VersionMemo<readonly SyntaxNode[]>('indirect.scopeCalls');

/** The calls of callSites (those running a function of this file) by their scope, in document order. */
function resolvedCallsByScope(file: SourceFile): ReadonlyMap<SyntaxNode, readonly SyntaxNode[]> {
  return resolvedByScopeMemo.get(file, () => {
    const calls: SyntaxNode[] = [];
    for (const list of callSites(file).values()) for (const call of list) calls.push(call);
    // Document order as nodesOfType gives it: by start, and an enclosing call (ending later) first.
    calls.sort((a, b) => a.start - b.start || b.end - a.end);
    const out = new Map<SyntaxNode, SyntaxNode[]>();
    for (const call of calls) {
      const scope = scopeOf(call);
      if (scope === null) continue;
      const list = out.get(scope);
      if (list === undefined) out.set(scope, [call]);
      else list.push(call);
    }
    return out;
  });
}

const resolvedByScopeMemo = new VersionMemo<ReadonlyMap<SyntaxNode, readonly SyntaxNode[]>>('indirect.resolvedCallsByScope');

/** The calls of the file that run each function of the file (by localCallee), in document order. */
export function callSites(file: SourceFile): ReadonlyMap<SyntaxNode, readonly SyntaxNode[]> {
  return callSitesMemo.get(file, () => {
    const out = new Map<SyntaxNode, SyntaxNode[]>();
    for (const call of resolvableCalls(file)) {
      const callee = localCallee(file, call);
      if (callee === null) continue;
      const list = out.get(callee);
      if (list === undefined) out.set(callee, [call]);
      else list.push(call);
    }
    return out;
  });
}

/**
 * The calls localCallee can resolve, in document order: it resolves a call by its callee's last segment
 * to a function of that name, so only calls named like a function of the file can run one. Read through
 * callsNamed (grouped per function body and reused across versions), not by resolving every call of the
 * file on every edit.
 */
function resolvableCalls(file: SourceFile): SyntaxNode[] {
  const { moduleLevel, classes, nested } = fileFunctions(file);
  const names = new Set<string>(moduleLevel.keys());
  for (const c of classes.values()) for (const m of c.methods.keys()) names.add(m);
  for (const byName of nested.values()) for (const n of byName.keys()) names.add(n);
  // Document order as nodesOfType gives it: by start, and an enclosing call (ending later) first.
  return [...names].flatMap((name) => callsNamed(file, name)).sort((a, b) => a.start - b.start || b.end - a.end);
}

const callSitesMemo = new VersionMemo<ReadonlyMap<SyntaxNode, readonly SyntaxNode[]>>('indirect.callSites');

/** The forward passes of `fn` itself that record a graph as far as its own code says (grad mode at the call site aside). */
export function recordingForwards(file: SourceFile, fn: SyntaxNode): SyntaxNode[] {
  return (callsByScope(file).get(fn)?.forwards ?? []).filter((call) => !gradOffWithin(file, call) && !gradMaybeOffAt(file, call));
}

// ---- Frozen through helpers ------------------------------------------------------------------------

interface Freezes {
  /** The parameters each function of the file freezes (`def freeze(m): m.requires_grad_(False)`). */
  readonly parameters: ReadonlyMap<SyntaxNode, ReadonlySet<string>>;
  /** Keys frozen somewhere other than as a function's parameter (`self.teacher`, a global `vgg`). */
  readonly elsewhere: ReadonlySet<string>;
}

/** Every freeze in the file (`X.requires_grad_(False)`, `p.requires_grad = False` over `X.parameters()`), by where it happens. */
function freezes(file: SourceFile): Freezes {
  return freezesMemo.get(file, () => {
    const parameters = new Map<SyntaxNode, Set<string>>();
    const elsewhere = new Set<string>();
    const note = (object: SyntaxNode | null, at: SyntaxNode): void => {
      const key = frozenTarget(file, object);
      if (key === null) return;
      const scope = scopeOf(at);
      if (scope?.type === 'function_definition' && key !== 'self' && !key.includes('.') && parameterKeys(file, scope).includes(key)) {
        let set = parameters.get(scope);
        if (set === undefined) parameters.set(scope, (set = new Set()));
        set.add(key);
      } else elsewhere.add(key);
    };
    // callsNamed: only the `requires_grad_` calls, not every call of the file (this runs per version).
    for (const call of callsNamed(file, 'requires_grad_')) {
      const fn = childByField(call, 'function');
      if (fn?.type !== 'attribute' || file.textOf(childByField(fn, 'attribute') ?? fn) !== 'requires_grad_') continue;
      if (/^\(\s*(requires_grad\s*=\s*)?False\s*\)$/.test(file.textOf(childByField(call, 'arguments') ?? call))) note(childByField(fn, 'object'), call);
    }
    for (const a of gradSwitchesOff.get(file, '')) note(childByField(childByField(a, 'left')!, 'object'), a);
    return { parameters, elsewhere };
  });
}

const freezesMemo = new VersionMemo<Freezes>('indirect.freezes');

/** `X.requires_grad = False` assignments (syntactic). */
const gradSwitchesOff = new FilteredNodes('indirect.requiresGradFalse', 'assignment', (file, a) => {
  const left = childByField(a, 'left');
  const right = childByField(a, 'right');
  return left?.type === 'attribute' && right !== null && file.textOf(right) === 'False' && file.textOf(childByField(left, 'attribute') ?? left) === 'requires_grad';
});

/**
 * Keys frozen by a helper of this file: `freeze(self.teacher)` where `def freeze(m)` sets
 * `requires_grad = False` on `m`'s parameters (or calls `m.requires_grad_(False)`).
 */
export function frozenThroughHelpers(file: SourceFile): ReadonlySet<string> {
  return frozenMemo.get(file, () => {
    const { parameters } = freezes(file);
    const out = new Set<string>();
    if (parameters.size === 0) return out;
    // localCallee resolves a call by its callee's last segment to a function of that name, so only the
    // calls named like a freezing function can reach one (in document order, as a scan of all calls).
    const names = new Set([...parameters.keys()].map((fn) => file.textOf(childByField(fn, 'name') ?? fn)));
    const candidates = [...names].flatMap((name) => callsNamed(file, name)).sort((a, b) => a.start - b.start || b.end - a.end);
    for (const call of candidates) {
      const callee = localCallee(file, call);
      const frozen = callee === null ? undefined : parameters.get(callee);
      if (callee === null || frozen === undefined) continue;
      const params = parameterKeys(file, callee);
      const offset = enclosingClass(callee) !== null && params[0] === 'self' ? 1 : 0;
      params.forEach((p, i) => {
        if (!frozen.has(p)) return;
        const key = keyOf(file, positionalArguments(call)[i - offset] ?? keywordArgument(file, call, p));
        if (key !== null) out.add(key);
      });
    }
    return out;
  });
}

const frozenMemo = new VersionMemo<ReadonlySet<string>>('indirect.frozen');

/**
 * `key` is frozen only as the parameter of functions other than `scope` (`def freeze_model(model): for p
 * in model.parameters(): p.requires_grad = False`): that freezes what those functions are called with
 * (frozenThroughHelpers), not a variable of `scope` that happens to share the parameter's name.
 */
export function frozenOnlyInOtherFunctions(file: SourceFile, key: string, scope: SyntaxNode): boolean {
  const { parameters, elsewhere } = freezes(file);
  if (elsewhere.has(key)) return false;
  let frozenAsParameter = false;
  for (const [fn, keys] of parameters) {
    if (!keys.has(key)) continue;
    if (fn === scope) return false;
    frozenAsParameter = true;
  }
  return frozenAsParameter;
}

// ---- Signature -------------------------------------------------------------------------------------

const functionTokens = new NodeMemo<string>('indirect.functionToken');

function functionToken(file: SourceFile, fn: SyntaxNode): string {
  return functionTokens.get(file, fn, '', () => intern(file, file.textOf(fn)));
}

/**
 * What calls resolve to (the names of functions, classes and their methods, closures, instances of the
 * file's classes) and the keys frozen through helpers. With helperTextsSignature(file, scope) (the texts
 * of the functions the scope reaches that reach a forward pass) it covers what one scope's results read
 * through helpers, so an edit in one method re-checks only the scopes that can reach it.
 */
export function resolutionSignature(file: SourceFile): string {
  return resolutionMemo.get(file, () => {
    const parts: string[] = [];
    // What calls resolve to: the names of functions, classes, methods and closures, and the instances.
    const { moduleLevel, classes, instances, nested } = fileFunctions(file);
    parts.push([...moduleLevel.keys()].join(','));
    for (const [name, c] of classes) parts.push(`${name}(${c.bases.join(',')}):${[...c.methods.keys()].join(',')}`);
    for (const byName of nested.values()) parts.push([...byName.keys()].join(','));
    for (const [key, cls] of instances) parts.push(`${key}=${cls}`);
    parts.push([...frozenThroughHelpers(file)].sort().join(','), [...freezes(file).elsewhere].sort().join(','));
    for (const [fn, keys] of freezes(file).parameters) parts.push(`${file.textOf(childByField(fn, 'name') ?? fn)}:${[...keys].join(',')}`);
    return intern(file, parts.join('|'));
  });
}

const resolutionMemo = new VersionMemo<string>('indirect.resolution');

/** The functions of the file each scope's own calls run (by localCallee), from callSites. */
function calleesByScope(file: SourceFile): ReadonlyMap<SyntaxNode, readonly SyntaxNode[]> {
  return calleesMemo.get(file, () => {
    const out = new Map<SyntaxNode, SyntaxNode[]>();
    for (const [callee, calls] of callSites(file)) {
      for (const call of calls) {
        const scope = scopeOf(call);
        if (scope === null) continue;
        const list = out.get(scope);
        if (list === undefined) out.set(scope, [callee]);
        else if (!list.includes(callee)) list.push(callee);
      }
    }
    return out;
  });
}

const calleesMemo = new VersionMemo<ReadonlyMap<SyntaxNode, readonly SyntaxNode[]>>('indirect.callees');

/**
 * The texts (as tokens) of the functions that may reach a forward pass among those `scope` can run through
 * calls of this file, at any depth, and those enclosing it (a closure reads its outer function): the
 * part of what one scope's helper results depend on beyond resolutionSignature, so it changes only when an edit
 * touches a function the scope reaches (or the scope itself).
 */
export function helperTextsSignature(file: SourceFile, scope: SyntaxNode): string {
  return scopeTextsMemo.keyed(file, scope, () => {
    const edges = calleesByScope(file);
    // The enclosing functions' parts come from their own signature (the nearest one's covers the ones
    // around it), kept per version: walking them again from every nested scope was quadratic in a
    // `def main():` holding hundreds of functions. Marked seen, so this scope's walk stops at them.
    const seen = new Set<SyntaxNode>();
    let outer: SyntaxNode | null = null;
    for (let s = scope.parent; s !== null; s = s.parent) {
      if (s.type !== 'function_definition') continue;
      outer ??= s;
      seen.add(s);
    }
    seen.add(scope);
    const stack: SyntaxNode[] = [scope];
    while (stack.length > 0) {
      for (const callee of edges.get(stack.pop()!) ?? []) {
        if (seen.has(callee)) continue;
        seen.add(callee);
        stack.push(callee);
      }
    }
    // The functions that may have a frame (frameOf non-null): near a forward pass and training nothing. A
    // superset of those with one, so the signature changes at least whenever theirs would; framing each
    // of them here ran computeFrame for every function near a forward pass on every version (the largest
    // self time of a re-lint), where a scope whose signature holds needs no frame at all.
    const mayReach = mayReachForward(file);
    const reaching = [...seen].filter((fn) => fn.type === 'function_definition' && (fn === scope || !isEnclosing(fn, scope)) && mayReach.has(fn) && !reachesGradients(file, fn));
    // Document order (only the relative order: the tokens hold no offsets).
    reaching.sort((a, b) => a.start - b.start);
    const own = reaching.map((fn) => functionToken(file, fn)).join(',');
    return intern(file, outer === null ? own : `${own}/${helperTextsSignature(file, outer)}`);
  });
}

const scopeTextsMemo = new VersionMemo<string>('indirect.scopeTexts');

/** Whether `fn` is a function definition around `node` (an ancestor). */
function isEnclosing(fn: SyntaxNode, node: SyntaxNode): boolean {
  for (let p = node.parent; p !== null; p = p.parent) if (p === fn) return true;
  return false;
}

/**
 * The functions for which frameOf(fn, MAX_HELPER_DEPTH - 1) can be non-null: those with a forward pass of
 * their own, and the scopes of calls that localCallee resolves to one of them, MAX_HELPER_DEPTH - 1 levels
 * up (frameOf follows exactly such calls, one level per depth). A superset, so only the functions near a
 * forward pass are framed on each version instead of every function of the file.
 */
function mayReachForward(file: SourceFile): ReadonlySet<SyntaxNode> {
  // Once per version: every scope's helperTextsSignature reads it (per scope, it made a file's cost quadratic).
  return mayReachMemo.get(file, () => computeMayReachForward(file));
}

const mayReachMemo = new VersionMemo<ReadonlySet<SyntaxNode>>('indirect.mayReach');

function computeMayReachForward(file: SourceFile): ReadonlySet<SyntaxNode> {
  const reached = new Set<SyntaxNode>();
  let level: SyntaxNode[] = [];
  for (const [scope, calls] of callsByScope(file)) if (scope.type === 'function_definition' && calls.forwards.length > 0) level.push(scope);
  for (const fn of level) reached.add(fn);
  const sites = callSites(file);
  for (let depth = 1; depth < MAX_HELPER_DEPTH && level.length > 0; depth++) {
    const next: SyntaxNode[] = [];
    for (const fn of level) {
      for (const call of sites.get(fn) ?? []) {
        const caller = scopeOf(call);
        if (caller === null || caller.type !== 'function_definition' || reached.has(caller)) continue;
        reached.add(caller);
        next.push(caller);
      }
    }
    level = next;
  }
  return reached;
}
