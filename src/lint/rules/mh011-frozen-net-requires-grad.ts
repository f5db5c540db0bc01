// MH011 frozen-net-requires-grad: a network the training never updates (a DQN/DDPG target network, a
// distillation teacher, a VGG/LPIPS perceptual-loss network, an EMA copy) runs in the training step with
// its parameters still requiring grad. Autograd then records its forward (keeping its activations) and,
// when the loss flows through it (perceptual losses), computes weight gradients nobody reads.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import type { Rule, RuleFinding } from '../types';
import { positionalArguments } from '../analysis/context';
import { calleeMethod, calleeName } from '../analysis/imports';
import { callsByScope, computesGradients, forwardReceiver, keyOf, looksLikeModelName, modelFacts, nameWords, scopeOf } from '../analysis/models';
import { gradMaybeOffAt, gradOffAt } from '../analysis/gradstate';
import { enclosingClassName, optimizedModels } from '../analysis/optimized';
import { callsNamed } from '../analysis/calls';
import { parameterNames } from '../analysis/parameters';
import { forwardsFeedingBackward } from '../analysis/backprop';
import { isFrameworkTrainingStep } from '../analysis/framework-steps';
import { resolveImport } from '../project/resolve';
import { innermostCall, wrapperCalls } from '../analysis/module-forward-sites';
import { callSites, frozenThroughHelpers, mapReceiver, recordingForwards } from '../analysis/indirect';
import { pretrainedInEval } from '../analysis/pretrained-eval';
import { projectHeldNetwork } from '../analysis/project-held-networks';

/** Name tokens of networks that are never trained where they are used. */
const FROZEN_ROLE = new Set(['target', 'targ', 'tgt', 'teacher', 'ema', 'vgg', 'lpips', 'perceptual', 'inception', 'frozen', 'fixed']);

/**
 * The teacher of a distillation pair named by single letters (`model_t` beside `model_s`, `net_t`/`net_s`,
 * `t_net`/`s_net`, `modelT`/`modelS`): `t` alone says nothing, but next to an `s` counterpart in the same
 * file it is the teacher, as in RepDistiller and the many distillation repositories written after it.
 */
function pairedTeacher(file: SourceFile, key: string): boolean {
  const name = key.slice(key.lastIndexOf('.') + 1);
  const student = /^([A-Za-z]\w*?)(_t|T)$/.exec(name) ?? null;
  const counterparts: string[] = [];
  if (student !== null) counterparts.push(student[1] + (student[2] === 'T' ? 'S' : '_s'));
  const prefixed = /^(t|T)_([A-Za-z]\w*)$/.exec(name);
  if (prefixed !== null) counterparts.push(`${prefixed[1] === 'T' ? 'S' : 's'}_${prefixed[2]}`);
  return counterparts.some((c) => new RegExp(`(^|[^\\w])${c}($|[^\\w])`).test(file.text));
}

/** Named as a network the training keeps fixed. */
function namedAsFixed(file: SourceFile, key: string): boolean {
  return nameWords(key).some((t) => FROZEN_ROLE.has(t)) || pairedTeacher(file, key);
}
/** Constructors of feature networks used as fixed loss functions. */
const FEATURE_NETWORK = /vgg|lpips|perceptual|inception|featureextractor/i;
/** A class that freezes itself or runs its forward without grad. */
const SELF_FREEZING = /requires_grad\s*=\s*False|requires_grad_\(\s*(requires_grad\s*=\s*)?False\s*\)|no_grad|inference_mode/;

/** Keys some part of which is (or is inside) one of `keys`: `self.vgg` for `self.vgg` or `self`. */
function coveredBy(key: string, keys: ReadonlySet<string>): boolean {
  if (keys.has(key)) return true;
  for (let dot = key.lastIndexOf('.'); dot > 0; dot = key.lastIndexOf('.', dot - 1)) if (keys.has(key.slice(0, dot))) return true;
  return false;
}

interface Construction {
  readonly assignment: SyntaxNode;
  readonly value: SyntaxNode;
}

/** The first assignment of each module key (`self.target_net = Net()`, `a, b = Net(), Net()`). */
function constructions(file: SourceFile, keys: ReadonlySet<string>): Map<string, Construction> {
  const out = new Map<string, Construction>();
  const note = (target: SyntaxNode, value: SyntaxNode, assignment: SyntaxNode): void => {
    const key = keyOf(file, target);
    if (key !== null && keys.has(key) && !out.has(key)) out.set(key, { assignment, value });
  };
  for (const a of file.nodesOfType('assignment')) {
    const left = childByField(a, 'left');
    const right = childByField(a, 'right');
    if (left === null || right === null) continue;
    if ((left.type === 'pattern_list' || left.type === 'tuple_pattern') && (right.type === 'expression_list' || right.type === 'tuple')) {
      const targets = left.children.filter((c) => c.named);
      const values = right.children.filter((c) => c.named);
      if (targets.length === values.length) targets.forEach((t, i) => note(t, values[i], a));
    } else note(left, right, a);
  }
  return out;
}

/** Keys loaded with another network's weights: `K.load_state_dict(M.state_dict())`. */
function loadedFromAnother(file: SourceFile): Set<string> {
  const out = new Set<string>();
  for (const call of callsNamed(file, 'load_state_dict')) {
    const fn = childByField(call, 'function');
    const key = fn?.type === 'attribute' ? keyOf(file, childByField(fn, 'object')) : null;
    const arg = positionalArguments(call)[0];
    if (key === null || arg === undefined || !/\.state_dict\(\s*\)$/.test(file.textOf(arg))) continue;
    if (!file.textOf(arg).startsWith(`${key}.`)) out.add(key);
  }
  return out;
}

/** Keys built as a copy of another network: `K = deepcopy(M)`. */
function deepCopies(file: SourceFile, built: ReadonlyMap<string, Construction>): Set<string> {
  const out = new Set<string>();
  for (const [key, c] of built) {
    const v = c.value.type === 'call' ? c.value : null;
    if (v !== null && /(^|\.)deepcopy$/.test(calleeName(file, v) ?? '')) out.add(key);
  }
  return out;
}

/** The class of this file a module is built from (`Perceptual(...)` -> `class Perceptual`), or null. */
function localClassOf(file: SourceFile, value: SyntaxNode): SyntaxNode | null {
  const call = innermostCall(value);
  if (call.type !== 'call') return null;
  const name = calleeMethod(file, call) ?? '';
  for (const cls of file.nodesOfType('class_definition')) {
    const n = childByField(cls, 'name');
    if (n !== null && file.textOf(n) === name) return cls;
  }
  return null;
}

/**
 * The class a module is built from, in this file or in the module of the project it is imported from
 * (`from models import FeatureExtractor`): its text and the file that holds it. Null for a library class.
 */
function classSource(file: SourceFile, value: SyntaxNode): { file: SourceFile; cls: SyntaxNode } | null {
  const local = localClassOf(file, value);
  if (local !== null) return { file, cls: local };
  const call = innermostCall(value);
  const fn = call.type === 'call' ? childByField(call, 'function') : null;
  if (fn === null || file.session.project === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) return null;
  const resolved = resolveImport(file, file.textOf(fn).replace(/\s+/g, ''));
  return resolved !== null && resolved.kind === 'class' && resolved.node !== null ? { file: resolved.module.file, cls: resolved.node } : null;
}

/** The class a module is built from, when the file or the project defines it and it freezes itself. */
function freezesItself(file: SourceFile, value: SyntaxNode): boolean {
  const source = classSource(file, value);
  return source !== null && SELF_FREEZING.test(source.file.textOf(source.cls));
}

/**
 * The module is an instance of a class of this file that wraps a feature network (`self.feature =
 * nn.Sequential(*list(netVGG.features.children())[:-1])`, `models.vgg19(pretrained=True).features`): a
 * perceptual-loss network under another name.
 */
function wrapsFeatureNetwork(file: SourceFile, value: SyntaxNode): boolean {
  const source = classSource(file, value);
  const body = source === null ? null : childByField(source.cls, 'body');
  if (body === null || !FEATURE_NETWORK.test(source!.file.textOf(body))) return false;
  // A class of another module is taken for a loss network only when its name says so (`ContentNet`,
  // `VGGLoss`, `FeatureExtractor`): a detector on a VGG backbone (`SSD300`) is the model being trained.
  return source!.file === file || LOSS_NETWORK_CLASS.test(source!.file.textOf(childByField(source!.cls, 'name') ?? source!.cls));
}

/**
 * The module is an instance of a class (of this file or the project module it is imported from) that writes a
 * fixed value into each of its own parameters: `for name, param in self.named_parameters():
 * param.data.copy_(torch.from_numpy(kernel))` (MODNet's GaussianBlurLayer, Sobel and other fixed filters built
 * on `nn.Conv2d`). Its weights are a filter, not something to learn; unless an optimizer takes them (checked
 * by the caller), they require grad for nothing.
 */
function setsFixedWeights(file: SourceFile, value: SyntaxNode): boolean {
  const source = classSource(file, value);
  if (source === null) return false;
  const f = source.file;
  const loops: SyntaxNode[] = [];
  const stack: SyntaxNode[] = [source.cls];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'for_statement') loops.push(n);
    for (const c of n.children) stack.push(c);
  }
  return loops.some((loop) => {
    const iterable = childByField(loop, 'right');
    const body = childByField(loop, 'body');
    if (iterable === null || body === null || !/^self\.(named_)?parameters\(\s*\)$/.test(f.textOf(iterable).replace(/\s+/g, ''))) return false;
    return /\.data\.copy_\(|\.data\s*=[^=]|\.copy_\(/.test(f.textOf(body)) && !/requires_grad/.test(f.textOf(body));
  });
}

/** Names of classes that serve as a fixed loss or feature network. */
const LOSS_NETWORK_CLASS = /loss|perceptual|feature|content|style|extractor|vgg|lpips|inception/i;

/** The call records a graph in a scope that trains. */
function records(file: SourceFile, call: SyntaxNode, scope: SyntaxNode): boolean {
  return !gradOffAt(file, call) && !gradMaybeOffAt(file, call) && (computesGradients(file, scope) || isFrameworkTrainingStep(file, scope));
}

function check(file: SourceFile): RuleFinding[] {
  const facts = modelFacts(file);
  // The forward passes of each network that record a graph inside a scope that trains.
  const recording = new Map<string, SyntaxNode[]>();
  for (const [scope, calls] of callsByScope(file)) {
    for (const call of calls.forwards) {
      const receiver = forwardReceiver(file, call);
      if (receiver === null || receiver === 'self' || scopeOf(call) !== scope || !records(file, call, scope)) continue;
      let list = recording.get(receiver);
      if (list === undefined) recording.set(receiver, (list = []));
      list.push(call);
    }
  }
  // Forward passes in helpers of the file that train nothing themselves, called from a training step
  // (`logits_t = self._teacher_logits(x)`): recorded at the call, the network named in the caller's terms.
  const viaHelper = new Set<string>();
  for (const [fn, sites] of callSites(file)) {
    if (computesGradients(file, fn)) continue; // its forwards are counted where they are
    for (const forward of recordingForwards(file, fn)) {
      const inner = forwardReceiver(file, forward);
      if (inner === null) continue;
      for (const site of sites) {
        const scope = scopeOf(site);
        const key = scope === null ? null : mapReceiver(file, site, fn, inner);
        if (scope === null || key === null || key === 'self' || !records(file, site, scope)) continue;
        let list = recording.get(key);
        if (list === undefined) {
          recording.set(key, (list = []));
          viaHelper.add(key);
        }
        list.push(site);
      }
    }
  }
  // `self.qnetwork_target.load_state_dict(...)` shows a module whose name the model heuristics do not know:
  // its calls are forward passes too.
  const loaded = loadedFromAnother(file);
  for (const key of loaded) {
    // Only networks named as fixed: an A3C worker's `lnet` loaded from the global net is trained through its output.
    if (recording.has(key) || !namedAsFixed(file, key)) continue;
    for (const call of callsNamed(file, key.slice(key.lastIndexOf('.') + 1))) {
      const scope = scopeOf(call);
      if (keyOf(file, childByField(call, 'function')) !== key || scope === null || !records(file, call, scope)) continue;
      let list = recording.get(key);
      if (list === undefined) recording.set(key, (list = []));
      list.push(call);
    }
  }
  // `agent.target_critic(next_obs)`: a network named as fixed, held by an object whose class another module of
  // the project defines (the model heuristics take only bare names such as `agent.critic` on other objects):
  // a forward pass when that class builds it.
  for (const [key, calls] of projectHeldForwards(file)) {
    if (recording.has(key)) continue;
    const kept = calls.filter((call) => { const scope = scopeOf(call); return scope !== null && records(file, call, scope); });
    if (kept.length > 0) recording.set(key, kept);
  }
  const { optimized, selfOptimizing } = optimizedModels(file);
  // A wrapper module's forward (`return self.student(x), self.teacher(x)`) called as `distiller(x)` in a
  // training step: its networks' forwards record there. Not when an optimizer takes the wrapper's own
  // parameters (then everything in it may be trained).
  for (const cls of file.nodesOfType('class_definition')) {
    const className = file.textOf(childByField(cls, 'name') ?? cls);
    const forward = facts.moduleClasses.has(className) ? methodNamed(file, cls, 'forward') : null;
    if (forward === null || computesGradients(file, forward) || selfOptimizing.has(className)) continue;
    const wrapper = wrapperCalls(file, cls);
    if ([...wrapper.instances].some((k) => coveredBy(k, optimized))) continue;
    if (!wrapper.sites.some((site) => { const scope = scopeOf(site); return scope !== null && records(file, site, scope); })) continue;
    for (const call of callsByScope(file).get(forward)?.forwards ?? []) {
      const receiver = forwardReceiver(file, call);
      if (receiver === null || receiver === 'self' || !receiver.startsWith('self.') || gradOffAt(file, call) || gradMaybeOffAt(file, call)) continue;
      let list = recording.get(receiver);
      if (list === undefined) recording.set(receiver, (list = []));
      list.push(call);
    }
  }
  if (recording.size === 0) return [];
  const built = constructions(file, new Set(recording.keys()));
  const copies = deepCopies(file, built);
  for (const key of loaded) copies.add(key);
  const findings: RuleFinding[] = [];
  for (const [key, forwards] of recording) {
    if (coveredBy(key, optimized) || coveredBy(key, facts.frozen) || coveredBy(key, frozenThroughHelpers(file))) continue;
    const c = built.get(key);
    const use = forwards[0];
    if (c === undefined) {
      // Handed in (`def train_student(student, teacher, ...)`): only a network named as fixed, reported at its forward.
      if (namedAsFixed(file, key) && isParameterOf(file, key, use)) findings.push(finding(file, key, use, use, 'handed in: if the caller freezes it, this is already fine'));
      else if (namedAsFixed(file, key) && key.includes('.')) {
        // Held by an object of a project class (`agent.target_critic(x)`, `self.target_net(x)` of a base class):
        // built, and neither frozen nor optimized, in that class's module.
        const held = projectHeldNetwork(file, key.slice(key.lastIndexOf('.') + 1));
        if (held !== null && !freezesItself(held.file, held.value)) findings.push(finding(file, key, use, use, `built in ${held.where}, where nothing freezes it or hands its parameters to an optimizer`));
      }
      continue;
    }
    if ((key.startsWith('self.') && selfOptimizing.has(enclosingClassName(file, c.assignment) ?? '')) || freezesItself(file, c.value)) continue;
    const named =
      namedAsFixed(file, key) ||
      FEATURE_NETWORK.test(calleeName(file, innermostCall(c.value)) ?? '') ||
      wrapsFeatureNetwork(file, c.value) ||
      pretrainedInEval(file, key, c.value) ||
      setsFixedWeights(file, c.value);
    if (!named && !copies.has(key)) continue;
    // Reached only through a helper: whether its output is backpropagated is not traced there, so only networks named as fixed.
    if (!named && viaHelper.has(key)) continue;
    // A copy whose output is backpropagated gets gradients someone reads (A3C's local model, a reference in a gradient test).
    if (!named && forwards.some((f) => forwardsFeedingBackward(file, scopeOf(f) ?? f).has(f))) continue;
    const why = copies.has(key)
      ? 'its weights are copied from another network'
      : setsFixedWeights(file, c.value)
        ? 'its class writes fixed values into its weights, a filter, and nothing hands them to an optimizer'
        : 'a fixed network: nothing hands its parameters to an optimizer';
    findings.push(finding(file, key, c.assignment, use, why));
  }
  return findings.sort((a, b) => a.start - b.start);
}

/** Objects whose attributes are configuration, not networks. */
const CONFIG_OBJECT = /(^|\.)(args|opt|opts|options|config|cfg|conf|hparams|hp|params|flags|settings|kwargs)$/;

/**
 * Calls `obj.<name>(...)` whose name is a network's named as fixed (`target_critic`, `teacher_net`), on an
 * object other than `self` or a configuration, that a project class this file imports builds
 * (`self.target_critic = MLPNetwork(...)`), by key.
 */
function projectHeldForwards(file: SourceFile): Map<string, SyntaxNode[]> {
  const out = new Map<string, SyntaxNode[]>();
  if (file.session.project === null) return out;
  const held = new Map<string, boolean>();
  for (const call of file.nodesOfType('call')) {
    const fn = childByField(call, 'function');
    if (fn?.type !== 'attribute') continue;
    const key = keyOf(file, fn);
    const dot = key === null ? -1 : key.lastIndexOf('.');
    if (key === null || dot < 0) continue;
    const base = key.slice(0, dot);
    const name = key.slice(dot + 1);
    if (base === 'self' || CONFIG_OBJECT.test(base) || !looksLikeModelName(name) || !namedAsFixed(file, name)) continue;
    let known = held.get(name);
    if (known === undefined) held.set(name, (known = projectHeldNetwork(file, name) !== null));
    if (!known) continue;
    let list = out.get(key);
    if (list === undefined) out.set(key, (list = []));
    list.push(call);
  }
  return out;
}

function finding(file: SourceFile, key: string, at: SyntaxNode, use: SyntaxNode, why: string): RuleFinding {
  return {
    start: at.start,
    end: at.end,
    message:
      `\`${key}\` is never optimized (${why}) but its parameters still require grad, so its forward at line ${file.lineOf(use.start) + 1} ` +
      'records an autograd graph in the training step (activations kept; weight gradients computed whenever the loss flows through it). ' +
      `Call \`${key}.requires_grad_(False)\` after building it, or run its forward under \`torch.no_grad()\` when nothing backpropagates through it.`,
  };
}

/** The `def name` directly in a class body (decorators allowed), or null. */
function methodNamed(file: SourceFile, cls: SyntaxNode, name: string): SyntaxNode | null {
  for (const stmt of childByField(cls, 'body')?.children ?? []) {
    const def = stmt.type === 'decorated_definition' ? childByField(stmt, 'definition') : stmt;
    if (def?.type === 'function_definition' && file.textOf(childByField(def, 'name') ?? def) === name) return def;
  }
  return null;
}

/** `key` is a parameter of the function `use` runs in. */
function isParameterOf(file: SourceFile, key: string, use: SyntaxNode): boolean {
  const fn = scopeOf(use);
  return fn?.type === 'function_definition' && parameterNames(file, fn).includes(key);
}

export const frozenNetRequiresGrad: Rule = {
  code: 'MH011',
  name: 'frozen-net-requires-grad',
  severity: 'warning',
  summary: 'Frozen network (target net, teacher, VGG/perceptual loss, EMA copy) run in the training step with parameters that still require grad.',
  check,
};

export const rule = frozenNetRequiresGrad;
