// Inference that is not named like evaluation (MH001): a forward pass whose surroundings never
// backpropagate. `translate()`, `sample()`, `greedy_decoder()`, an RL agent's `choose_action()`, a
// prediction loop at module level after the training loop, a test forward inside the training loop after
// `optimizer.step()`. The verdict is structural: the largest statement around the forward that reaches
// no backward()/optimizer step (following calls to functions of this file) is inference when it is a
// loop, comes after the training steps, or sits in a function named for inference - and only when the
// forward's output cannot leave for code that might backpropagate it (another file, an attribute, a
// return value).
import { childByField, contains, type SourceFile, type SyntaxNode } from '../syntax';
import { enclosingLoops } from './context';
import { importSignature, qualifiedName } from './imports';
import { backwardTargets, computesGradients, enclosingClass, forwardReceiver, isGradientCall, modelFacts } from './models';
import { flowOf, Taint, type ScopeFlow } from './flow';
import { forwardsFeedingBackward } from './backprop';
import { NodeMemo, VersionMemo } from '../session';
import { callsWithin, unitCallGroups } from './calls';
import { derivedReadOutside, HISTORY_CUTS, listsCutAfter } from './rollout-lists';
import { differentiatesWeights } from './weight-gradients';
import { statisticOfSingleUpdate } from './step-statistics';

export type InferenceKind = 'inference-name' | 'no-backward-loop' | 'after-training' | 'after-step' | 'rollout' | 'history-cut';

const INFERENCE_NAME_TOKENS = new Set(['translate', 'sample', 'sampling', 'generate', 'generation', 'greedy', 'beam', 'decode', 'decoding', 'decoder', 'caption', 'synthesize', 'inference', 'infer', 'predict', 'prediction']);
const ACTION_VERBS = new Set(['choose', 'select', 'get', 'pick', 'take', 'act']);
const TRAINING_NAME_TOKENS = new Set(['train', 'training', 'fit', 'update', 'learn', 'loss', 'step', 'backward', 'optimize', 'logprob', 'log', 'evaluate_actions']);

function nameTokens(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/_+/)
    .filter(Boolean);
}

/** `translate`, `greedy_decoder`, `sample_images`, `choose_action`, `get_action`, `act`. */
export function isInferenceName(name: string): boolean {
  const tokens = nameTokens(name);
  if (tokens.some((t) => TRAINING_NAME_TOKENS.has(t))) return false;
  if (tokens.some((t) => INFERENCE_NAME_TOKENS.has(t))) return true;
  if (tokens.length === 1 && tokens[0] === 'act') return true;
  return tokens.some((t) => t === 'action' || t === 'actions') && tokens.some((t) => ACTION_VERBS.has(t));
}

/** Functions defined in this file, by name (methods included: `self.learn()` resolves by its name). */
function localFunctions(file: SourceFile): Map<string, SyntaxNode[]> {
  const out = new Map<string, SyntaxNode[]>();
  for (const fn of file.nodesOfType('function_definition')) {
    const name = childByField(fn, 'name');
    if (name === null) continue;
    const key = file.textOf(name);
    out.set(key, [...(out.get(key) ?? []), fn]);
  }
  return out;
}

function calleeLastName(file: SourceFile, call: SyntaxNode): string | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  const last = fn.type === 'attribute' ? childByField(fn, 'attribute') : fn;
  return last?.type === 'identifier' ? file.textOf(last) : null;
}

/** Per-run memo of which local functions reach a gradient computation (call graph followed in the file). */
class GradientReach {
  private readonly functions: Map<string, SyntaxNode[]>;
  private readonly memo = new Map<SyntaxNode, boolean>();

  constructor(private readonly file: SourceFile) {
    this.functions = localFunctions(file);
  }

  functionsNamed(name: string): readonly SyntaxNode[] | undefined {
    return this.functions.get(name);
  }

  /** The call computes/applies gradients itself or calls a function of this file that does. */
  callReaches(call: SyntaxNode): boolean {
    if (isGradientCall(this.file, call)) return true;
    const name = calleeLastName(this.file, call);
    const defs = name === null ? undefined : this.functions.get(name);
    if (defs === undefined) return trainsInUnseenMethod(this.file, call);
    return defs.some((d) => this.functionReaches(d));
  }

  functionReaches(fn: SyntaxNode): boolean {
    const known = this.memo.get(fn);
    if (known !== undefined) return known;
    this.memo.set(fn, false); // recursion guard
    // callReaches over the function's calls in document order, from their summaries (kept on the node):
    // the same calls are asked in the same order, so the recursion guard decides as before.
    const result = computesGradients(this.file, fn) || callSummaries(this.file, fn).some((c) => this.summaryReaches(c));
    this.memo.set(fn, result);
    return result;
  }

  /** callReaches for a call by its summary. */
  private summaryReaches(c: CallSummary): boolean {
    if (c.gradient) return true;
    const defs = c.name === null ? undefined : this.functions.get(c.name);
    if (defs === undefined) return c.unseen;
    return defs.some((d) => this.functionReaches(d));
  }

  private readonly nodeMemo = new Map<SyntaxNode, boolean>();

  nodeReaches(node: SyntaxNode): boolean {
    let r = this.nodeMemo.get(node);
    if (r === undefined) this.nodeMemo.set(node, (r = callsWithin(this.file, node).some((c) => this.callReaches(c))));
    return r;
  }
}

/** What GradientReach.callReaches reads of one call: all of it from the call's subtree and the imports. */
interface CallSummary {
  readonly gradient: boolean;
  readonly name: string | null;
  readonly unseen: boolean;
}

const callSummaryMemo = new NodeMemo<readonly CallSummary[]>('inference.callSummaries');

/**
 * The summaries of the calls in `fn`'s subtree in document order, up to the first gradient call (callReaches
 * answers there, so later calls are never asked), without the calls that answer false on every version (no
 * name to resolve, not a gradient or unseen-method call). Kept on the function node under the import
 * signature: the call graph is rebuilt per version from these, not from every call of the file.
 */
function callSummaries(file: SourceFile, fn: SyntaxNode): readonly CallSummary[] {
  return callSummaryMemo.get(file, fn, importSignature(file), () => {
    const out: CallSummary[] = [];
    for (const c of callsWithin(file, fn)) {
      const gradient = isGradientCall(file, c);
      const name = gradient ? null : calleeLastName(file, c);
      const unseen = !gradient && trainsInUnseenMethod(file, c);
      if (!gradient && name === null && !unseen) continue;
      out.push({ gradient, name, unseen });
      if (gradient) break;
    }
    return out;
  });
}

/** Arguments that say the callee trains: an optimizer, or a loss. */
const TRAINING_ARGUMENT = /optim|loss/i;

/**
 * `self.take_optimisation_step(self.optimizer, self.net, loss)` where no function of this file has that
 * name (a base class of another file owns the update): handed an optimizer or a loss, that method may well
 * call backward() and step. Seen on real RL agents (p-christ's agents, whose `learn()` runs
 * `update_critic_parameters()`, which hands the losses to the base class's `take_optimisation_step`).
 * Names, not taint: a module's output handed to `self.criterion(out, y)` says nothing about training.
 */
export function trainsInUnseenMethod(file: SourceFile, call: SyntaxNode): boolean {
  const callee = childByField(call, 'function');
  if (callee === null || callee.type !== 'attribute') return false;
  const parts = file.textOf(callee).split('.');
  if (parts.length !== 2 || parts[0] !== 'self') return false;
  const args = childByField(call, 'arguments');
  for (const a of args?.children ?? []) {
    const value = a.type === 'keyword_argument' ? childByField(a, 'value') : a;
    if (value !== null && (value.type === 'identifier' || value.type === 'attribute') && TRAINING_ARGUMENT.test(file.textOf(value))) return true;
  }
  return false;
}

/** One call-graph memo per version of the file (everything it holds is derived from that version). */
const reaches = new VersionMemo<GradientReach>('inference.reach');

function reachOf(file: SourceFile): GradientReach {
  return reaches.get(file, (f) => new GradientReach(f));
}

/**
 * `optimizer.step()`, `scaler.step(opt)`, or MAML's functional update (`torch.autograd.grad(loss,
 * fast_weights)`, weight-gradients.ts): this iteration's update is done.
 */
function isOptimizerStep(file: SourceFile, call: SyntaxNode): boolean {
  return (calleeLastName(file, call) === 'step' && isGradientCall(file, call)) || differentiatesWeights(file, call);
}

/** Backward / optimizer step calls (not zero_grad: clearing gradients trains nothing yet). */
function isStepOrBackward(file: SourceFile, call: SyntaxNode): boolean {
  if (backwardTargets(file, call) !== null) return true;
  return calleeLastName(file, call) === 'step' && isGradientCall(file, call);
}

const PURE_BUILTINS = new Set(['print', 'len', 'float', 'int', 'bool', 'str', 'repr', 'round', 'abs', 'max', 'min', 'sum', 'list', 'tuple', 'zip', 'enumerate', 'sorted', 'reversed', 'isinstance', 'format', 'range', 'map', 'iter', 'next', 'dict', 'set']);
const PURE_MODULES = /^(torch|numpy|np|math|F)\./;
/**
 * `to_numpy(actor(state))` (a utility of another file, as in most RL repositories): a conversion to numpy
 * must detach first (`.numpy()` refuses a tensor that requires grad), so no history gets through it.
 */
const NUMPY_CONVERSION = /^(to_?numpy|to_?np|tensor_?to_?(numpy|np)|tensor2(numpy|np))$/i;
const LOCAL_CONTAINER_METHODS = new Set(['append', 'extend', 'insert', 'add']);
const LOSS_NAME = /(^|_)(loss|losses|criterion|crit|metric|metrics|accuracy|acc)(_|$|fn|func)/i;

/**
 * Whether a value with autograd history may leave the region for code that could backpropagate it: a
 * call to code outside this file, a store into an attribute / a parameter's container, a return/yield.
 */
function historyEscapes(file: SourceFile, flow: ScopeFlow, scope: SyntaxNode, from: number, to: number, reach: GradientReach): boolean {
  const params = new Set<string>();
  if (scope.type === 'function_definition') {
    const ps = childByField(scope, 'parameters');
    for (const p of ps?.children ?? []) {
      const id = p.type === 'identifier' ? p : p.children.find((c) => c.type === 'identifier');
      if (id !== undefined) params.add(file.textOf(id));
    }
  }
  const stack = [scope.type === 'module' ? scope : (childByField(scope, 'body') ?? scope)];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.end <= from || n.start >= to) continue;
    if (n !== scope && (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda')) continue;
    for (const c of n.children) stack.push(c);
    if (n.start < from) continue;
    if (n.type === 'return_statement' || n.type === 'yield') {
      const value = n.children.find((c) => c.named) ?? null;
      if (value !== null && flow.taintOf(value) === Taint.Tainted) return true;
    } else if (n.type === 'assignment' || n.type === 'augmented_assignment') {
      const left = childByField(n, 'left');
      const right = childByField(n, 'right');
      if (left === null || right === null || flow.taintOf(right) !== Taint.Tainted) continue;
      if (left.type === 'attribute' || (left.type === 'subscript' && !isLocalName(file, childByField(left, 'value'), params))) return true;
    } else if (n.type === 'call') {
      if (!callPassesHistory(flow, n)) continue;
      if (!isPureConsumer(file, flow, n, params, reach)) return true;
    }
  }
  return false;
}

/** The expression uses the forward call or a name derived from it, other than through a history cut. */
function refsHistory(file: SourceFile, expr: SyntaxNode, forward: SyntaxNode, derived: ReadonlySet<string>): boolean {
  const stack = [expr];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n === forward) return true;
    if (n.type === 'identifier' && derived.has(file.textOf(n))) return true;
    if (n.type === 'call') {
      const fn = childByField(n, 'function');
      if (fn?.type === 'attribute' && HISTORY_CUTS.has(file.textOf(childByField(fn, 'attribute') ?? fn))) continue;
    }
    if (n.type === 'attribute' && file.textOf(childByField(n, 'attribute') ?? n) === 'data') continue;
    for (const c of n.children) stack.push(c);
  }
  return false;
}

function boundNames(file: SourceFile, target: SyntaxNode, out: Set<string>): void {
  if (target.type === 'identifier') out.add(file.textOf(target));
  else if (target.type === 'pattern_list' || target.type === 'tuple_pattern' || target.type === 'list_pattern' || target.type === 'tuple' || target.type === 'list') {
    for (const c of target.children) if (c.named) boundNames(file, c, out);
  }
}

/**
 * Nothing derived from the forward's output in `region` outlives it (syntactically: names assigned from
 * it, except through `.item()`/`.detach()`/`dist.sample()`...): no such value is put in a container
 * (`log_probs.append(dist.log_prob(a))`), handed to a call made for its effect (`memory.push(s, a, log_prob)`)
 * or stored through a subscript, and no read elsewhere in the scope sees a name bound to one, where a later
 * backward could reach it. Calls out of the file and attribute stores are historyEscapes' concern.
 * With `detachedLists` (a rollout loop), a fresh local list may collect it when every later read of the
 * list detaches it (`torch.stack(logp_buf).detach()`: PPO's rollout, rollout-lists.ts).
 */
function historyDiesIn(file: SourceFile, scope: SyntaxNode, region: SyntaxNode, forward: SyntaxNode, detachedLists = false): boolean {
  const { nodes, derived } = derivedIn(file, region, forward);
  const lists: SyntaxNode[] = [];
  for (const n of nodes) {
    if (n.type === 'call') {
      const fn = childByField(n, 'function');
      const method = fn?.type === 'attribute' ? file.textOf(childByField(fn, 'attribute') ?? fn) : null;
      const args = childByField(n, 'arguments');
      if (args === null || !refsHistory(file, args, forward, derived)) continue;
      if (method !== null && LOCAL_CONTAINER_METHODS.has(method)) {
        const list = fn === null ? null : childByField(fn, 'object');
        if (!detachedLists || list === null) return false;
        lists.push(list);
        continue;
      }
      // Called for its effect with the history in hand (`memory.push(s, a, log_prob)`, `buffer.store(...)`): it may keep it.
      if (n.parent?.type === 'expression_statement') return false;
    } else if (n.type === 'assignment' || n.type === 'augmented_assignment') {
      const left = childByField(n, 'left');
      const right = childByField(n, 'right');
      if (left?.type === 'subscript' && right !== null && refsHistory(file, right, forward, derived)) return false;
    }
  }
  if (lists.length === 0 && derived.size === 0) return true;
  const flow = flowOf(file, scope);
  if (!listsCutAfter(file, flow, scope, region, lists, LOCAL_CONTAINER_METHODS)) return false;
  return !derivedReadOutside(file, flow, scope, region, derived);
}

/** The region's nodes in document order (nested definitions left out), and the names bound from the forward's history. */
function derivedIn(file: SourceFile, region: SyntaxNode, forward: SyntaxNode): { readonly nodes: SyntaxNode[]; readonly derived: Set<string> } {
  const nodes: SyntaxNode[] = [];
  const stack = [region];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') continue;
    nodes.push(n);
    for (const c of n.children) stack.push(c);
  }
  nodes.sort((x, y) => x.start - y.start);
  const derived = new Set<string>();
  // Twice: a name derived late in a loop body is read early in the next iteration.
  for (let pass = 0; pass < 2; pass++) {
    for (const n of nodes) {
      // A comprehension's variables too: `[arr.append(el) for arr, el in zip(lists, (policy, value))]` stores `policy`.
      if (n.type !== 'assignment' && n.type !== 'augmented_assignment' && n.type !== 'for_statement' && n.type !== 'for_in_clause') continue;
      const left = childByField(n, 'left');
      const right = childByField(n, 'right');
      if (left !== null && right !== null && refsHistory(file, right, forward, derived)) boundNames(file, left, derived);
    }
  }
  return { nodes, derived };
}

/**
 * For a forward pass the flow analysis does not see (a module method, method-forwards.ts): nothing
 * derived from its output leaves the function with history. Every use ends in `.detach()`, `.item()`,
 * `.numpy()`...: none is returned, yielded, stored on an attribute or a subscript, put in a container or
 * handed to a call made for its effect (`return action.detach().cpu().numpy()[0]` is acting only).
 */
export function historyCutInScope(file: SourceFile, scope: SyntaxNode, forward: SyntaxNode): boolean {
  const body = scope.type === 'module' ? scope : (childByField(scope, 'body') ?? scope);
  if (!historyDiesIn(file, scope, body, forward)) return false;
  const { nodes, derived } = derivedIn(file, body, forward);
  for (const n of nodes) {
    // Backpropagated here (`g_loss = loss_fn(model.discriminator_forward(fake), y)` then `g_loss.backward()`,
    // a GAN's generator step): the graph is what the step needs.
    if (n.type === 'call' && (backwardTargets(file, n) ?? []).some((t) => refsHistory(file, t, forward, derived))) return false;
    if (n.type === 'return_statement' || n.type === 'yield') {
      const value = n.children.find((c) => c.named) ?? null;
      if (value !== null && refsHistory(file, value, forward, derived)) return false;
    } else if (n.type === 'assignment' || n.type === 'augmented_assignment') {
      const left = childByField(n, 'left');
      const right = childByField(n, 'right');
      if ((left?.type === 'attribute' || left?.type === 'subscript') && right !== null && refsHistory(file, right, forward, derived)) return false;
    }
  }
  return true;
}

function isLocalName(file: SourceFile, node: SyntaxNode | null, params: ReadonlySet<string>): boolean {
  return node?.type === 'identifier' && !params.has(file.textOf(node));
}

function callPassesHistory(flow: ScopeFlow, call: SyntaxNode): boolean {
  const args = childByField(call, 'arguments');
  for (const a of args?.children ?? []) {
    if (!a.named || a.type === 'comment') continue;
    const value = a.type === 'keyword_argument' ? childByField(a, 'value') : a;
    if (value !== null && flow.taintOf(value) === Taint.Tainted) return true;
  }
  return false;
}

/** Calls that take a tensor with history without keeping or backpropagating it elsewhere. */
function isPureConsumer(file: SourceFile, flow: ScopeFlow, call: SyntaxNode, params: ReadonlySet<string>, reach: GradientReach): boolean {
  if (forwardReceiver(file, call) !== null) return true;
  const fn = childByField(call, 'function');
  if (fn === null) return false;
  if (fn.type === 'identifier') {
    const name = file.textOf(fn);
    if (PURE_BUILTINS.has(name) || LOSS_NAME.test(name) || NUMPY_CONVERSION.test(name)) return true;
    // A function of this file that trains nothing: whatever it returns flows on as taint.
    const defs = reach.functionsNamed(name);
    if (defs !== undefined) return !defs.some((d) => reach.functionReaches(d));
  }
  const qualified = qualifiedName(file, fn) ?? '';
  if (PURE_MODULES.test(qualified) || PURE_MODULES.test(file.textOf(fn))) return true;
  if (fn.type === 'attribute') {
    const object = childByField(fn, 'object');
    const method = file.textOf(childByField(fn, 'attribute') ?? fn);
    if (method === 'format' || method === 'join') return true;
    if (LOCAL_CONTAINER_METHODS.has(method)) return isLocalName(file, object, params);
    // `out.max(1)`, `dist.sample()`: a method of the tainted value itself.
    if (object !== null && flow.taintOf(object) !== Taint.Clean) return !/^(backward|register_hook|retain_grad)$/.test(method);
    if (LOSS_NAME.test(method) || LOSS_NAME.test(file.textOf(object ?? fn))) return !reach.callReaches(call);
  }
  return false;
}

/** The largest ancestor of `call` below the scope's body that reaches no backward/optimizer step. */
function gradientFreeRegion(call: SyntaxNode, scope: SyntaxNode, reach: GradientReach): SyntaxNode {
  let region = call;
  for (let p = call.parent; p !== null && p !== scope; p = p.parent) {
    if (p.type === 'block' && p.parent === scope) break;
    if (p.type === 'module') break;
    if (reach.nodeReaches(p)) break;
    region = p;
  }
  return region;
}

/** A nested function its enclosing function returns (a step-function factory): callers are unknown. */
export function isReturnedClosure(file: SourceFile, scope: SyntaxNode): boolean {
  if (scope.type !== 'function_definition') return false;
  let outer = scope.parent;
  while (outer !== null && outer.type !== 'function_definition' && outer.type !== 'module' && outer.type !== 'class_definition') outer = outer.parent;
  if (outer?.type !== 'function_definition') return false;
  const name = file.textOf(childByField(scope, 'name') ?? scope);
  const re = new RegExp(`\\breturn\\b[^\\n]*\\b${name.replace(/[^\w]/g, '')}\\b`);
  return re.test(file.textOf(childByField(outer, 'body') ?? outer));
}

/** Methods of the file's nn.Module classes: the module's own `sample()`/`generate()` run under whatever the caller does. */
export function isModelMethod(file: SourceFile, scope: SyntaxNode): boolean {
  if (scope.type !== 'function_definition') return false;
  const cls = enclosingClass(scope);
  if (cls === null) return false;
  const name = file.textOf(childByField(cls, 'name') ?? cls);
  return modelFacts(file).moduleClasses.has(name);
}

/** MAML's functional update (`torch.autograd.grad(loss, fast_weights)`) in `loop` before `region`. */
function weightUpdateBefore(file: SourceFile, loop: SyntaxNode, region: SyntaxNode): boolean {
  return callsWithin(file, loop).some((c) => c.end <= region.start && differentiatesWeights(file, c));
}

/** The function itself calls `backward()` / `torch.autograd.grad(...)`: autograd must be on when it runs. */
function differentiatesItself(file: SourceFile, fn: SyntaxNode): boolean {
  return callsWithin(file, fn).some((c) => backwardTargets(file, c) !== null);
}

/**
 * Why a forward pass that no evaluation marker/name/loader points at is still inference, or null.
 * The caller has already excluded grad-off code, forwards feeding a backward, and scopes that take
 * gradients with respect to inputs.
 */
export function inferenceContext(
  file: SourceFile,
  scope: SyntaxNode,
  call: SyntaxNode,
  /** The call's result carries no history at all (a project method that returns only detached values). */
  outputCut = false,
): { readonly kind: InferenceKind; readonly region: SyntaxNode } | null {
  // A module's own `sample()` runs under whatever its caller does. A method that differentiates itself
  // (a meta-learner's `finetunning()` taking `autograd.grad`) cannot run under no_grad: its forwards after
  // a functional weight update are judged below (MAML's query-set evaluation), and only those.
  const modelMethod = isModelMethod(file, scope);
  if (isReturnedClosure(file, scope) || (modelMethod && !differentiatesItself(file, scope))) return null;
  if (forwardsFeedingBackward(file, scope).has(call)) return null;
  const reach = reachOf(file);
  const region = gradientFreeRegion(call, scope, reach);
  const loops = enclosingLoops(call).filter((l) => contains(scope, l));
  const trainingLoop = loops.find((l) => !contains(region, l) && l !== region && reach.nodeReaches(l)) ?? null;
  const named = scope.type === 'function_definition' && isInferenceName(file.textOf(childByField(scope, 'name') ?? scope));
  const stepsBefore = (within: SyntaxNode, optimizerOnly = false): boolean =>
    callsWithin(file, within).some((c) => c.end <= region.start && (optimizerOnly ? isOptimizerStep(file, c) : isStepOrBackward(file, c)));
  let kind: InferenceKind | null = null;
  let end = scope.end;
  if (trainingLoop !== null) {
    // Inside the training loop: a test/sample forward after this iteration's backward/step.
    if (stepsBefore(trainingLoop, true)) {
      kind = 'after-step';
      end = trainingLoop.end;
    } else if (loops.some((l) => contains(region, l) || l === region) && historyDiesIn(file, scope, region, call, true)) {
      // Before the update: an RL rollout loop that acts (`a = dist.sample().item()`) and keeps no history
      // for the update that follows (REINFORCE's `log_probs.append(...)` does, and stays unreported).
      kind = 'rollout';
      end = region.end;
    } else return null;
  } else if (named) kind = 'inference-name';
  // A function that trains nothing and cuts every use of the forward's output from its history
  // (`return out.data.cpu().numpy()[0]`, `.item()`, `.detach()`): an RL agent's `value()`/`action()` or a
  // statistics helper, whatever its name. No caller can backpropagate what leaves it, so the graph is waste.
  else if (scope.type === 'function_definition' && !reach.functionReaches(scope) && historyCutInScope(file, scope, call)) kind = 'history-cut';
  else if (loops.some((l) => contains(region, l) || l === region)) kind = 'no-backward-loop';
  // After a function's single update, a forward on the inputs it trained on is a statistic of that update.
  else if (stepsBefore(scope) && !statisticOfSingleUpdate(file, scope, call, region, (c) => isStepOrBackward(file, c))) kind = 'after-training';
  if (kind === null) return null;
  if (modelMethod && !(kind === 'after-step' && trainingLoop !== null && weightUpdateBefore(file, trainingLoop, region))) return null;
  // Nothing after it (in this scope / this iteration) may backpropagate or keep its history.
  const after = callsWithin(file, scope).filter((c) => c.start >= region.end && c.start < end);
  // Features taken after a training loop with their history cut at once (`feats = model(x).detach()`,
  // DGI's `model.embed(...)` that returns detached tensors), then a classifier trained on them (linear
  // evaluation): the later backward cannot reach this forward's graph, which only raised the peak.
  const cutAfterLoop = kind === 'after-training' && trainingLoopBefore(file, scope, region) && (outputCut || cutInStatement(file, region, call));
  if (after.some((c) => isStepOrBackward(file, c) || reach.callReaches(c))) {
    if (kind !== 'after-step' && !cutAfterLoop) return null;
  }
  if (cutAfterLoop) return { kind, region };
  const flow = flowOf(file, scope);
  if (historyEscapes(file, flow, scope, region.start, end, reach)) return null;
  return { kind, region };
}

/** A backward/optimizer step inside a loop of the scope that ends before `region`: a training loop ran first. */
function trainingLoopBefore(file: SourceFile, scope: SyntaxNode, region: SyntaxNode): boolean {
  return callsWithin(file, scope).some((c) => c.end <= region.start && isStepOrBackward(file, c) && enclosingLoops(c).some((l) => contains(scope, l) && l.end <= region.start));
}

/**
 * The forward's statement binds nothing with its history: the value is cut in the statement itself
 * (`feats = model(x).detach()`, `z = enc(x).cpu().numpy()`) and nothing in it stores or hands on the raw output.
 */
function cutInStatement(file: SourceFile, region: SyntaxNode, forward: SyntaxNode): boolean {
  if (region.type !== 'expression_statement') return false;
  if (derivedIn(file, region, forward).derived.size > 0) return false;
  // The raw output must only be read through a cut: `model(x).detach()`, never `keep(model(x))`.
  let n: SyntaxNode = forward;
  for (;;) {
    const parent = n.parent;
    if (parent?.type === 'attribute' && parent.parent?.type === 'call' && HISTORY_CUTS.has(file.textOf(childByField(parent, 'attribute') ?? parent))) return true;
    if (parent?.type === 'attribute' && file.textOf(childByField(parent, 'attribute') ?? parent) === 'data') return true;
    // `model(x).cpu().detach()`: moves and views before the cut keep the history until the cut.
    if (parent?.type === 'attribute' && parent.parent?.type === 'call' && /^(cpu|cuda|to|view|reshape|squeeze|unsqueeze|float|contiguous)$/.test(file.textOf(childByField(parent, 'attribute') ?? parent))) {
      n = parent.parent;
      continue;
    }
    return false;
  }
}

/** Whether anything in this file calls the function (by name). */
export function calledInFile(file: SourceFile, fn: SyntaxNode): boolean {
  return calledNames(file).has(file.textOf(childByField(fn, 'name') ?? fn));
}

const calledNameSets = new VersionMemo<ReadonlySet<string>>('inference.calledNames');

/**
 * The last names of every callee in the file (one pass per version, not one per function): the names of
 * the per-statement call groups (calls.ts groups by the same last name, kept per function body across
 * edits), so a version reads each statement's names instead of every call of the file.
 */
function calledNames(file: SourceFile): ReadonlySet<string> {
  return calledNameSets.get(file, (f) => {
    const called = new Set<string>();
    for (const unit of f.root.children) for (const name of unitCallGroups(f, unit).keys()) called.add(name);
    return called;
  });
}

/** The function (or anything it calls in this file) runs backward() or an optimizer step. */
export function reachesGradients(file: SourceFile, fn: SyntaxNode): boolean {
  return reachOf(file).functionReaches(fn);
}

const STATEMENT_PARENTS = new Set(['block', 'module']);

/**
 * The statement to wrap in `with torch.no_grad():` for a forward pass: the largest statement around it
 * that reaches no backward/optimizer step, or null when even the forward's own statement does.
 */
export function noGradStatement(file: SourceFile, scope: SyntaxNode, call: SyntaxNode): SyntaxNode | null {
  const reach = reachOf(file);
  let stmt: SyntaxNode | null = null;
  for (let n: SyntaxNode | null = call; n !== null && n !== scope; n = n.parent) {
    if (n.parent !== null && STATEMENT_PARENTS.has(n.parent.type)) {
      if (reach.nodeReaches(n)) break;
      stmt = n;
    }
    if (n.type === 'function_definition' || n.type === 'class_definition') break;
  }
  return stmt;
}

/**
 * A backward()/optimizer step follows the forward on the same path (straight-line code, or inside every
 * loop around the forward): the forward is part of a training step (a DDPG target network in `learn()`),
 * whatever mode its module is in.
 */
export function backpropagatesAfter(file: SourceFile, scope: SyntaxNode, call: SyntaxNode): boolean {
  const loops = enclosingLoops(call).filter((l) => contains(scope, l));
  return callsWithin(file, scope).some((c) => c.start >= call.end && isStepOrBackward(file, c) && loops.every((l) => contains(l, c)));
}

const signatures = new VersionMemo<string>('inference.signature');

/**
 * Everything inferenceContext reads beyond the scope's own statement: which functions of the file reach
 * a gradient computation, and which names the file calls (cached scope results must change with them).
 */
export function inferenceSignature(file: SourceFile): string {
  return signatures.get(file, (f) => {
    const reach = reachOf(f);
    const training = new Set<string>();
    for (const fn of f.nodesOfType('function_definition')) if (reach.functionReaches(fn)) training.add(f.textOf(childByField(fn, 'name') ?? fn));
    return `${[...training].sort().join(',')}|${[...calledNames(f)].sort().join(',')}`;
  });
}
