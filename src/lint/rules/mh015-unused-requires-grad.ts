// MH015 unused-requires-grad: a tensor made a leaf that requires grad (`torch.randn(..., requires_grad=True)`,
// `Variable(x, requires_grad=True)`, `x.requires_grad_()`, `x.requires_grad = True`) that nothing in its
// scope optimizes or differentiates: autograd records every operation on it and backward() computes and
// keeps a `.grad` of its full size for nothing (typically a GAN's noise input or an input batch).
// Only names are followed, within the scope that binds them; the tensor counts as used for gradients
// when, after its creation, the scope reads its `.grad` (or inspects `.requires_grad`/`.grad_fn`),
// registers a hook, passes it (or a list/dict holding it) to an optimizer, `torch.autograd.*`/`torch.func.*`
// or `nn.Parameter`, and it counts as unknown (silent) when it escapes: returned, yielded, stored in an
// attribute/subscript/container, handed to a function defined in this file, or used in a nested function.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod, calleeName } from '../analysis/imports';
import { enclosingFunction } from '../analysis/context';
import { parameterNames } from '../analysis/parameters';
import { functionsNamed } from '../analysis/values';
import { callsNamed } from '../analysis/calls';
import { isTestFunction } from './mh001-missing-no-grad';
import { forwardReceiver, isModelKey, keyOf } from '../analysis/models';
import { looksLikeOptimizer } from '../analysis/vocabulary';
import { namesOf } from './mh015-scope-names';
import type { Rule, RuleFinding } from '../types';

/** Receivers' attributes that show the code uses (or inspects) the tensor's gradient. */
const GRAD_ATTRIBUTES = new Set(['grad', 'register_hook', 'retain_grad', 'requires_grad', 'grad_fn', 'is_leaf', 'register_post_accumulate_grad_hook']);
const GRADIENT_CONSUMERS = /^(torch\.(autograd|func|optim)\.|functorch\.)|(^|\.)(grad|vjp|jvp|jacobian|hessian|gradcheck|gradgradcheck|jacrev|jacfwd|Parameter|ParameterList|ParameterDict|register_parameter)$/;
const CONTAINERS = new Set(['list', 'tuple', 'dictionary', 'set', 'pair', 'expression_list', 'parenthesized_expression', 'list_splat', 'dictionary_splat']);
const MAX_ALIASES = 8;
/** Tracing, export and graph capture take sample inputs whose requires_grad must match the real ones'. */
const SAMPLE_INPUT_CONSUMERS = /^torch\.(onnx|jit|export|fx|_dynamo|cuda\.make_graphed_callables|cuda\.graphs)\b/;
/** Activation checkpointing (not model checkpoints: `checkpoint = torch.load(...)`). */
const ACTIVATION_CHECKPOINTING = /\butils\.checkpoint\b|\bcheckpoint_sequential\b|\bgradient_checkpointing|\buse_reentrant\b|\benable_input_require_grads\b/;

interface Creation {
  /** The node to report (the call or the assignment). */
  readonly at: SyntaxNode;
  /** The names bound to the tensor right there. */
  readonly names: readonly string[];
}

function isTrue(file: SourceFile, node: SyntaxNode | null): boolean {
  return node !== null && file.textOf(node) === 'True';
}

/** The identifier an expression's value is bound to: `z = <expr>`, `z = <expr>.to(device)`, or null. */
function boundName(file: SourceFile, expr: SyntaxNode): string | null {
  let n = expr;
  // `torch.randn(..., requires_grad=True).to(device)` / `.cuda()` / `.float()`: the chain's result.
  while (n.parent?.type === 'attribute' && n.field === 'object' && n.parent.parent?.type === 'call') n = n.parent.parent;
  const assign = n.parent;
  if (assign === null || assign.type !== 'assignment' || n.field !== 'right') return null;
  const left = childByField(assign, 'left');
  return left !== null && left.type === 'identifier' ? file.textOf(left) : null;
}

/** Where tensors that require grad are created, with the names that hold them. */
function creations(file: SourceFile): Creation[] {
  const out: Creation[] = [];
  for (const kw of file.nodesOfType('keyword_argument')) {
    const key = childByField(kw, 'name');
    if (key === null || file.textOf(key) !== 'requires_grad' || !isTrue(file, childByField(kw, 'value'))) continue;
    const call = kw.parent?.parent;
    if (call === undefined || call === null || call.type !== 'call') continue;
    const name = calleeName(file, call);
    if (name === null || !(name.startsWith('torch.') || /(^|\.)Variable$/.test(name)) || /Parameter/.test(name)) continue;
    const bound = boundName(file, call);
    if (bound !== null) out.push({ at: call, names: [bound] });
  }
  for (const call of callsNamed(file, 'requires_grad_')) {
    const args = childByField(call, 'arguments');
    const argText = args === null ? '' : file.textOf(args).replace(/\s+/g, '');
    if (argText !== '()' && argText !== '(True)' && argText !== '(requires_grad=True)') continue;
    const fn = childByField(call, 'function');
    const obj = fn === null ? null : childByField(fn, 'object');
    const names: string[] = [];
    if (obj !== null && obj.type === 'identifier' && !isLoopOrModule(file, obj)) names.push(file.textOf(obj));
    const bound = boundName(file, call);
    if (bound !== null) names.push(bound);
    // `x.requires_grad_()` as a statement, or `y = <expr>.requires_grad_()`.
    if (call.parent?.type === 'expression_statement' ? names.length > 0 : bound !== null) out.push({ at: call, names });
  }
  for (const assign of file.nodesOfType('assignment')) {
    const left = childByField(assign, 'left');
    if (left === null || left.type !== 'attribute' || !isTrue(file, childByField(assign, 'right'))) continue;
    const attr = childByField(left, 'attribute');
    const obj = childByField(left, 'object');
    if (attr === null || obj === null || file.textOf(attr) !== 'requires_grad' || obj.type !== 'identifier' || isLoopOrModule(file, obj)) continue;
    out.push({ at: assign, names: [file.textOf(obj)] });
  }
  return out;
}

/**
 * A for-loop / comprehension variable (`for p in model.parameters()`, `for m in model.modules()`), a
 * module, or a parameter of the function: parameters and modules switched back on, or a caller's tensor.
 */
function isLoopOrModule(file: SourceFile, ident: SyntaxNode): boolean {
  const name = file.textOf(ident);
  if (isModelKey(file, name)) return true;
  // A parameter flagged in place (`output.requires_grad_(True)` in a forward hook): the caller's tensor changes.
  const fn = enclosingFunction(ident);
  if (fn !== null && parameterNames(file, fn).includes(name)) return true;
  for (let p = ident.parent; p !== null; p = p.parent) {
    if (p.type !== 'for_statement' && p.type !== 'for_in_clause') continue;
    const left = childByField(p, 'left');
    if (left !== null && new RegExp(`\\b${name}\\b`).test(file.textOf(left))) return true;
  }
  return false;
}

type Verdict = 'unused' | 'used' | 'escapes';

/** Builtins that read or pass on a tensor without touching its gradient. */
const PLAIN_BUILTINS = new Set(['print', 'len', 'float', 'int', 'bool', 'str', 'repr', 'format', 'abs', 'min', 'max', 'sum', 'round', 'isinstance', 'type', 'id', 'list', 'tuple', 'zip', 'enumerate', 'range', 'Variable', 'Tensor']);
/** Losses and metrics: their output carries the graph on, as a forward pass's does. */
const LOSS_CALLEE = /crit|loss|metric|distance|dist$/i;

/**
 * A call that takes the tensor and only computes with it, so the tensor's story continues in the call's
 * result: a torch op, a builtin, a forward pass of a module of the file (`G(z)`, `self.net(x)`), a loss.
 * Anything else is code this file does not show, and cannot be called unused with confidence.
 */
function flowsThrough(file: SourceFile, call: SyntaxNode, name: string): boolean {
  if (name.startsWith('torch.') || PLAIN_BUILTINS.has(name) || /(^|\.)Variable$/.test(name)) return true;
  if (forwardReceiver(file, call) !== null) return true;
  const fn = childByField(call, 'function');
  if (fn === null) return false;
  const key = keyOf(file, fn);
  if (key !== null && isModelKey(file, key)) return true;
  // A network handed to the enclosing function and called on the tensor (`def step(G, D, opt):` ... `G(z)`):
  // a forward pass, as in most GAN steps; imported functions and other objects' methods stay unseen code.
  if (fn.type === 'identifier') {
    const scope = enclosingFunction(call);
    if (scope !== null && parameterNames(file, scope).includes(file.textOf(fn))) return true;
  }
  const last = fn.type === 'attribute' ? file.textOf(childByField(fn, 'attribute') ?? fn) : file.textOf(fn);
  return LOSS_CALLEE.test(last);
}

/** What one use of the tensor's name says. `aliases` collects names that hold it too (`params = [z]`). */
function useVerdict(file: SourceFile, use: SyntaxNode, aliases: string[]): Verdict | null {
  // `z.grad`, `z.register_hook(...)`
  const parent = use.parent;
  if (parent?.type === 'attribute' && use.field === 'object') {
    const attr = childByField(parent, 'attribute');
    if (attr !== null && GRAD_ATTRIBUTES.has(file.textOf(attr))) return 'used';
  }
  if (parent?.type === 'keyword_argument' && use.field === 'name') return null; // `f(z=...)`: not this name
  if (parent?.type === 'attribute' && use.field === 'attribute') return null; // `self.z`: another thing
  let child = use;
  for (let p = use.parent; p !== null; child = p, p = p.parent) {
    if (p.type === 'return_statement' || p.type === 'yield' || p.type === 'global_statement' || p.type === 'nonlocal_statement') return 'escapes';
    // `for p in (w, b): p -= lr * p.grad`, `for p in params`: the loop variable carries the tensor on,
    // and only names are followed, so what the loop does with it (manual SGD) is not seen.
    if ((p.type === 'for_statement' || p.type === 'for_in_clause') && child.field === 'right') return 'escapes';
    if (p.type === 'call') {
      // `z.to(device)`: the receiver of a method call; what the call's result becomes decides (keep climbing).
      if (child.field !== 'arguments') continue;
      const name = calleeName(file, p) ?? '';
      const method = calleeMethod(file, p) ?? '';
      if (GRADIENT_CONSUMERS.test(name) || looksLikeOptimizer(method) || looksLikeOptimizer(name)) return 'used';
      if (SAMPLE_INPUT_CONSUMERS.test(name)) return 'escapes';
      // `f((h,))`, `f([z])`: handed over in a container to a call that is not a torch op (`torch.cat((z, c))` is one).
      if (!name.startsWith('torch.')) for (let q = use.parent; q !== null && q !== child; q = q.parent) if (q.type === 'tuple' || q.type === 'list' || q.type === 'dictionary' || q.type === 'set') return 'escapes';
      if (name === 'setattr' || method === 'append' || method === 'extend' || method === 'add' || method === 'insert' || method === 'update' || method === 'setdefault') return 'escapes';
      const fn = childByField(p, 'function');
      if (fn !== null && fn.type === 'identifier' && functionsNamed(file, file.textOf(fn)).length > 0) return 'escapes';
      // The tensor itself handed to code this file does not show (`project(z, generator)` imported from
      // another module, `attacker.perturb(x)`): that code may optimize it or read its gradient.
      if ((use.parent === child || (use.parent?.type === 'keyword_argument' && use.parent.parent === child)) && !flowsThrough(file, p, name)) return 'escapes';
      // An argument of any other call (a forward pass, arithmetic helpers): the tensor flows on; keep
      // climbing, since the call itself may sit in a container or a return.
      continue;
    }
    if (p.type === 'assignment' || p.type === 'augmented_assignment') {
      if (child.field !== 'right') return null; // rebinding the name ends this tensor's story there
      const left = childByField(p, 'left');
      if (left === null) return 'escapes';
      if (left.type === 'attribute' || left.type === 'subscript') return 'escapes';
      // `params = [z]`, `inputs = z`: another name for it (or a container holding it).
      let direct = true;
      for (let q = use.parent; q !== null && q !== p; q = q.parent) if (!CONTAINERS.has(q.type)) direct = false;
      if (direct) {
        if (left.type === 'identifier') aliases.push(file.textOf(left));
        else return 'escapes';
      }
      return null;
    }
    if (p.type === 'expression_statement' || p.type === 'block' || p.type === 'module') return null;
  }
  return null;
}

/** Whether nothing after the creation in its scope uses the tensor's gradient, and it does not escape. */
function isUnused(file: SourceFile, creation: Creation): boolean {
  const scope = enclosingFunction(creation.at) ?? file.root;
  // Unit tests of autograd create such tensors on purpose; memory during a test is not the point.
  for (let fn: SyntaxNode | null = enclosingFunction(creation.at); fn !== null; fn = enclosingFunction(fn)) if (isTestFunction(file, fn)) return false;
  const names = namesOf(file, scope);
  // Code that inspects the graph (`print(y.grad_fn)`, `.is_leaf`) demonstrates autograd: not a waste worth a warning.
  if (names.inspects) return false;
  const seen = new Set<string>();
  const pending = [...creation.names];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    if (seen.size > MAX_ALIASES) return false;
    for (const { node, nested } of names.uses(name)) {
      if (node.start < creation.at.end) continue;
      if (nested) return false;
      const aliases: string[] = [];
      const v = useVerdict(file, node, aliases);
      if (v === 'used' || v === 'escapes') return false;
      pending.push(...aliases);
    }
  }
  return true;
}

export const unusedRequiresGrad: Rule = {
  code: 'MH015',
  name: 'unused-requires-grad',
  severity: 'warning',
  summary: 'Tensors created with `requires_grad=True` that nothing optimizes or differentiates: autograd records and backward() computes a gradient for nothing.',
  check(file) {
    const findings: RuleFinding[] = [];
    if (!file.text.includes('requires_grad')) return findings;
    // Reentrant activation checkpointing needs inputs that require grad (Hugging Face's enable_input_require_grads).
    if (ACTIVATION_CHECKPOINTING.test(file.text)) return findings;
    for (const creation of creations(file)) {
      if (!isUnused(file, creation)) continue;
      const what = creation.names.map((n) => `\`${n}\``).join(' / ');
      findings.push({
        start: creation.at.start,
        end: creation.at.end,
        message:
          `${what} is made to require grad, but nothing in this scope optimizes or differentiates it (no optimizer takes it, ` +
          'no `torch.autograd.grad` input, no `.grad` read): autograd records every operation on it and `backward()` ' +
          'computes and stores a gradient of its full size for nothing. Drop `requires_grad=True` (a noise or input batch ' +
          'needs none; the model parameters still get their gradients).',
      });
    }
    return findings;
  },
};

export const rule = unusedRequiresGrad;
