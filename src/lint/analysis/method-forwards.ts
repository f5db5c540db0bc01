// Forward passes a module runs through a method of its own rather than `__call__`: SAC's
// `pi, log_pi, _ = self.policy.sample(state)` (GaussianPolicy.sample in another file). models.ts does not
// count them: `self.policy.sample(s)` alone is no evidence, the method may well be decorated with no_grad
// where it is defined. It counts here only when this file backpropagates that very method's output
// somewhere (the update step's `policy_loss` is computed from `self.policy.sample(state_batch)`'s
// `log_pi`): then the method records a graph, and so does every other call of it made with autograd on.
import { childByField, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import { backwardTargets, callsByScope, forwardReceiver, isModelKey, keyOf, scopeOf } from './models';
import { traceForwards } from './backprop';
import { flowOf, flowSignature } from './flow';
import { entersGradIndirectly, gradMaybeOffAt, gradOffAt } from './gradstate';
import { enclosingPiece } from './unitcache';
import { callsNamed } from './calls';
import { enclosingClassName } from './optimized';
import { NodeMemo, VersionMemo } from '../session';

/** Module methods that run no forward pass (or, like Hugging Face's generate(), run theirs under no_grad). */
const NOT_FORWARD = /^(parameters|named_parameters|buffers|named_buffers|modules|named_modules|children|named_children|state_dict|load_state_dict|to|cuda|cpu|half|float|double|bfloat16|eval|train|zero_grad|requires_grad_|apply|register_\w+|detach|item|numpy|generate|forward\w*)$/;

/** `self.policy.sample` for `self.policy.sample(s)` when `self.policy` is a module of the file, else null. */
function methodReceiver(file: SourceFile, call: SyntaxNode): string | null {
  const fn = childByField(call, 'function');
  if (fn?.type !== 'attribute') return null;
  const attr = childByField(fn, 'attribute');
  const object = keyOf(file, childByField(fn, 'object'));
  if (attr === null || object === null || object === 'self' || NOT_FORWARD.test(file.textOf(attr))) return null;
  return isModelKey(file, object) ? `${object}.${file.textOf(attr)}` : null;
}

/** The receiver, qualified by its class for `self.` keys: another class's `self.policy` is another module. */
function methodKey(file: SourceFile, call: SyntaxNode): string | null {
  const receiver = methodReceiver(file, call);
  if (receiver === null || !receiver.startsWith('self.')) return receiver;
  return `${enclosingClassName(file, call) ?? ''}#${receiver}`;
}

const memo = new VersionMemo<ReadonlySet<string>>('method-forwards');
/** Per scope with a backward: the keys its trace reaches (see scopeDeps for what they depend on). */
const scopeMemo = new NodeMemo<readonly string[]>('method-forwards.scope');

/**
 * What a scope's keys depend on beyond its own subtree, or null when the scope is not kept: the flow's
 * file-wide inputs (forward receivers, grad state and model facts are in them) and the headers of the
 * classes and decorators around it (methodKey names the enclosing class, inModuleClass reads its bases,
 * decorators switch grad off). A scope under a `with`/`if` outside any function is not kept.
 *
 * A scope nested in a function (a giant `def main():` holding its training steps) is kept under the
 * statement of the outermost function's body that holds it and that function's header (enclosingPiece:
 * every `with`, decorator and function between them is unchanged while the token is), plus what grad
 * state reads of the enclosing functions' other statements: whether each of them enters no_grad
 * indirectly (gradMaybeOffAt). Their statement-level `set_grad_enabled(False)` calls count only for
 * nodes of their own scope (gradOffBy), and the rest of the grad facts is in the flow's signature.
 */
function scopeDeps(file: SourceFile, scope: SyntaxNode, flowSig: string): string | null {
  let outermost: SyntaxNode | null = null;
  let indirect = '';
  for (let p = scope.parent; p !== null && p.type !== 'module'; p = p.parent) {
    if (p.type !== 'function_definition') continue;
    outermost = p;
    indirect += entersGradIndirectly(file, p) ? '1' : '0';
  }
  let around = '';
  for (let p = (outermost ?? scope).parent; p !== null && p.type !== 'module'; p = p.parent) {
    const superclasses = p.type === 'class_definition' ? childByField(p, 'superclasses') : null;
    if (p.type === 'class_definition') around += `|class ${file.textOf(childByField(p, 'name') ?? p)}(${superclasses === null ? '' : file.textOf(superclasses)})`;
    else if (p.type === 'decorated_definition') {
      for (const d of p.children) if (d.type === 'decorator') around += `|@${file.textOf(d)}`;
    } else if (p.type !== 'block') return null;
  }
  if (outermost === null) return `${flowSig}${around}`;
  const piece = enclosingPiece(file, scope);
  return piece.body === null ? null : `${flowSig}${around}|${piece.token}|${indirect}`;
}

/** `R.m` keys whose call's output, made with autograd on, feeds a backward somewhere in the file. */
export function differentiableMethods(file: SourceFile): ReadonlySet<string> {
  return memo.get(file, (f) => {
    const out = new Set<string>();
    const flowSig = flowSignature(f);
    // Per scope, kept on the function node: an edit re-traces the scopes it changed, not every scope with a backward.
    for (const [scope, calls] of callsByScope(f)) {
      if (calls.backwards.length === 0) continue;
      const deps = scope.type === 'module' ? null : scopeDeps(f, scope, flowSig);
      const keys = deps === null ? scopeKeys(f, scope, calls.backwards) : scopeMemo.get(f, scope, deps, () => scopeKeys(f, scope, calls.backwards));
      for (const key of keys) out.add(key);
    }
    return out;
  });
}

/** The keys of the module methods whose outputs (made with autograd on) feed one of `backwards`. */
function scopeKeys(f: SourceFile, scope: SyntaxNode, backwards: readonly SyntaxNode[]): string[] {
  const out: string[] = [];
  const roots = backwards.flatMap((b) => backwardTargets(f, b) ?? []);
  // The loss's own operands only: a method whose output merely feeds a forward pass's inputs
  // (`enc.init_hidden()`, a zero state) proves nothing about its own graph.
  traceForwards(f, flowOf(f, scope), roots, new Set(), {
    reached: (call) => {
      if (forwardReceiver(f, call) !== null || gradOffAt(f, call) || gradMaybeOffAt(f, call)) return;
      const key = methodKey(f, call);
      if (key !== null) out.push(key);
    },
  });
  return out;
}

/** Changes whenever the set of differentiable methods does (for callers' caches). */
export function methodForwardsSignature(file: SourceFile): string {
  return [...differentiableMethods(file)].sort().join(',');
}

/** The calls of `scope` itself to a differentiable module method, with their receiver (`self.policy.sample`). */
export function methodForwardCalls(file: SourceFile, scope: SyntaxNode): { readonly call: SyntaxNode; readonly receiver: string }[] {
  const methods = differentiableMethods(file);
  if (methods.size === 0) return [];
  const out: { call: SyntaxNode; receiver: string }[] = [];
  for (const name of new Set([...methods].map((k) => k.slice(k.lastIndexOf('.') + 1)))) {
    // The calls are in document order: only those starting inside the scope, found by bisection (a scan of
    // every call of the name per scope was scopes x calls on a long file).
    const calls = callsNamed(file, name);
    for (let i = firstStartingAtOrAfter(calls, scope.start); i < calls.length && calls[i].start < scope.end; i++) {
      const call = calls[i];
      if (scopeOf(call) !== scope) continue;
      const key = methodKey(file, call);
      const receiver = methodReceiver(file, call);
      if (key !== null && receiver !== null && methods.has(key)) out.push({ call, receiver });
    }
  }
  return out;
}
