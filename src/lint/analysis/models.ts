// What in a file is a model (an nn.Module instance) and which calls run one: the heuristics the
// autograd rules (MH001, MH002, MH004) share. Everything is derived once per SourceFile.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { importBindings, qualifiedName } from './imports';
import { classMethods, keywordArgument, positionalArguments } from './context';
import { importSignature, intern, unitsOf, walkSplittingFunctions, type FunctionSplitWalk } from './unitcache';
import { KeyMemo, NodeMemo, VersionMemo } from '../session';
import { differentiatesWeights } from './weight-gradients';
import { beforeInReverseWalk, subtreeNodesOfType } from './scope-nodes';
import { keyOf } from './keys';
import { nodeGradToggles, type GradToggle } from './grad-toggle-sites';
import { isOptimizerClass } from './vocabulary';

// keyOf and frozenTarget live in keys.ts (the toggle walk needs them without the model facts); re-exported for the rules.
export { keyOf, frozenTarget } from './keys';

function lastSegment(key: string): string {
  const i = key.lastIndexOf('.');
  return i < 0 ? key : key.slice(i + 1);
}

// Variable names people give models. The suffix list is closed so `model_name`, `policy_loss` or
// `encoder_outputs` never count.
const MODEL_CORE = 'model|net|network|qf|vf|encoder|decoder|backbone|classifier|generator|discriminator|critic|actor|policy|teacher|student|autoencoder|vae|unet|transformer';
const MODEL_SUFFIX = '\\d+|_?ema|_without_ddp|_wo_ddp|_engine|_ddp|_dp|_wrapped|_compiled|_g|_d|g|d|e|_old|_new|_eval|_fp16|_half|_copy|_online|_target|_targ|_tgt|_a|_b';
const MODEL_NAME = new RegExp(`^(?:[a-z0-9]+_)*(?:${MODEL_CORE})(?:${MODEL_SUFFIX})?$`, 'i');
const CAMEL_MODEL_NAME = new RegExp(`^[a-z][a-zA-Z0-9]*(?:${MODEL_CORE.split('|').map((c) => c[0].toUpperCase() + c.slice(1)).join('|')})\\d*$`);
/** Objects whose attributes are configuration, not modules (`args.model` is a string). */
const CONFIG_OBJECTS = /(^|\.)(args|opt|opts|options|config|cfg|conf|hparams|hp|params|flags|FLAGS|settings|kwargs)(\.|$)/;

/** `build_model`, `unwrap_model`, `evaluate_model`: functions that handle models, not models. */
const VERB_PREFIX = /^_*(build|create|get|load|make|init|initialize|setup|set|unwrap|prepare|save|wrap|freeze|unfreeze|export|convert|compile|train|eval|evaluate|test|validate|run|fit|update|copy|clone|print|log|show|plot|summarize|count|check|register|apply|reset|sync|average|merge|instantiate|construct|define|select|choose|restore|resume|push|upload|download|quantize|prune|fuse|replace|patch|is|has|use|to|from|new|add|remove|find|describe|inspect|profile|benchmark|warmup|serve|deploy|step|forward|call|invoke)_/i;

/** The words of a key's last segment: `self.netD` -> [net, d], `target_q_net1` -> [target, q, net, 1]. */
export function nameWords(key: string): string[] {
  return lastSegment(key)
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+|(?<=[a-z])(?=\d)/)
    .filter(Boolean);
}

/**
 * Action verbs that make a name a phrase about a model, wherever they stand before its last word:
 * `locally_save_policy`, `soft_update_of_target_network` (agent methods, often of a base class in another
 * file). `eval`/`train`/`test` are left out: `q_eval_net`, `train_net` name modules.
 */
const INNER_VERBS = new Set(['save', 'load', 'update', 'copy', 'clone', 'build', 'create', 'make', 'get', 'sync', 'reset', 'freeze', 'unfreeze', 'export', 'print', 'log', 'plot', 'show', 'init', 'initialize', 'restore', 'wrap', 'unwrap', 'prepare', 'register', 'compute', 'calculate']);

export function looksLikeModelName(name: string): boolean {
  if (VERB_PREFIX.test(name)) return false;
  if (!MODEL_NAME.test(name) && !CAMEL_MODEL_NAME.test(name)) return false;
  return !nameWords(name).slice(0, -1).some((w) => INNER_VERBS.has(w));
}

/** Exact names (no prefix): `trainer.model`, `agent.policy` are modules whoever holds them. */
const BARE_MODEL_NAME = new RegExp(`^(?:${MODEL_CORE})(?:${MODEL_SUFFIX})?$`, 'i');

const WRAPPERS = /(^|\.)(DistributedDataParallel|DataParallel|DDP|FullyShardedDataParallel|FSDP|compile|deepcopy|AveragedModel|ModelEma\w*|ModelEMA|EMA)$/;
const MODULE_BUILDERS = new Set(['from_pretrained', 'compile', 'deepcopy', 'create_model', 'load']);
const MODULE_METHODS = new Set(['to', 'cuda', 'cpu', 'half', 'float', 'double', 'bfloat16', 'eval', 'train', 'requires_grad_', 'share_memory', 'to_empty']);
const NOT_CALLABLE_MODULES = /(Loss|ModuleList|ModuleDict|ParameterList|ParameterDict|Parameter|Module)$/;

export interface ModelFacts {
  /** Dotted keys known to hold modules (assigned from a constructor, a wrapper, `.to(device)`...). */
  readonly assigned: ReadonlySet<string>;
  /** Receivers of `.eval()` / `.train(...)`. */
  readonly markerReceivers: ReadonlySet<string>;
  /** Classes defined in the file that are nn.Modules (transitively). */
  readonly moduleClasses: ReadonlySet<string>;
  /** Classes that run under Lightning's hooks (LightningModule / Callback subclasses). */
  readonly lightningClasses: ReadonlySet<string>;
  /** Keys frozen with `requires_grad_(False)` or `p.requires_grad = False` over `.parameters()`. */
  readonly frozen: ReadonlySet<string>;
  /**
   * Keys whose parameters are switched back on (`requires_grad_(True)` / `p.requires_grad = True` over
   * `.parameters()`): a freeze of these is temporary (a GAN's critic frozen for the generator's step).
   */
  readonly unfrozen: ReadonlySet<string>;
  /** Names of functions defined in the file (`def evaluate_model`): never modules. */
  readonly functions: ReadonlySet<string>;
}

const factsCache = new VersionMemo<ModelFacts>('models.facts');

/** Facts by the units' tokens and the imports: an edit that changes no unit's contribution reuses them. */
const factsByContent = new KeyMemo<ModelFacts>('models.factsByContent', 8);

export function modelFacts(file: SourceFile): ModelFacts {
  return factsCache.get(file, () => {
    // The facts hold strings only, so they can be shared by any version with the same contributions.
    const content = `${importSignature(file)}|${unitsOf(file).map((u) => unitModelData(file, u).token).join(',')}`;
    // computeFacts reads only what `content` summarises (each unit's token and the imports).
    return factsByContent.get(file, [content], () => computeFacts(file));
  });
}

/** The class body defines `def forward(self, ...)` (a module's method, not a static autograd.Function one). */
function definesForward(file: SourceFile, cls: SyntaxNode): boolean {
  return classMethods(cls).some((m) => {
    if (file.textOf(childByField(m, 'name') ?? m) !== 'forward') return false;
    const first = childByField(m, 'parameters')?.children.find((c) => c.named);
    return first !== undefined && file.textOf(first) === 'self';
  });
}

function classBases(file: SourceFile, cls: SyntaxNode): string {
  const sup = childByField(cls, 'superclasses');
  return sup === null ? '' : file.textOf(sup);
}

/** What one top-level statement contributes to the model facts; purely syntactic, so cached per unit. */
interface UnitModelData {
  /** (name, bases, whether it defines `forward(self, ...)`). */
  readonly classes: readonly (readonly [string, string, boolean])[];
  readonly markers: readonly string[];
  /** Every `requires_grad` switch of the statement, in walk order (grad-toggles.ts sorts the file's). */
  readonly toggles: readonly GradToggle[];
  /** The networks its literal switches turn off / on (see GradToggle.literal). */
  readonly frozen: readonly string[];
  readonly unfrozen: readonly string[];
  readonly functions: readonly string[];
  /** Assignments `key = <call or name>` that may bind a module. */
  readonly candidates: readonly { readonly key: string; readonly rhs: SyntaxNode; readonly head: string }[];
  /** Keys whose `.parameters()` an optimizer is built from (`Adam(self.actor_local.parameters())`). */
  readonly optimized: readonly string[];
  /** All of the above as text (interned): equal tokens mean equal contributions. */
  readonly token: string;
}

/**
 * For a call that may build a module, the first name of its callee ('' when the callee's own name
 * already says so: a capitalised constructor, `.to(...)`, `from_pretrained`); anything else
 * (`criterion(out, y)`) is decided later by whether the head is a model zoo (`models.resnet50()`).
 */
function callHead(file: SourceFile, call: SyntaxNode): string | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  const lastNode = fn.type === 'attribute' ? childByField(fn, 'attribute') : fn;
  const last = lastNode === null ? '' : file.textOf(lastNode);
  if (/^[A-Z]/.test(last) || MODULE_METHODS.has(last) || MODULE_BUILDERS.has(last)) return '';
  return file.textOf(fn).split('.')[0];
}

const OPTIMIZER_FACTORY = /^(optimizer|optimizer_class|optimizer_cls|optim_cls|(make|build|get|create)_optimizer)$/i;
/** Expressions a `.parameters()` may sit in on its way into an optimizer's arguments. */
const PARAMETER_CONTAINERS = new Set(['argument_list', 'list', 'tuple', 'binary_operator', 'parenthesized_expression', 'list_comprehension', 'generator_expression', 'for_in_clause', 'dictionary', 'pair', 'keyword_argument', 'list_splat', 'call']);

/**
 * `Adam(net.parameters())`, `optim.SGD([{'params': self.actor.parameters()}], ...)`,
 * `Adam(list(a.parameters()) + list(b.parameters()))`: the parameters are an optimizer's argument.
 * Syntactic (the unit walk is cached without the imports): the optimizer is known by its class name.
 */
function builtForOptimizer(file: SourceFile, call: SyntaxNode): boolean {
  for (let p = call.parent; p !== null && PARAMETER_CONTAINERS.has(p.type); p = p.parent) {
    if (p.type !== 'call') continue;
    const fn = childByField(p, 'function');
    const last = fn === null ? '' : file.textOf(fn.type === 'attribute' ? (childByField(fn, 'attribute') ?? fn) : fn);
    // `optimizer = torch.optim.Adam` ... `optimizer(chain(G.parameters(), ...))` (DiscoGAN), `build_optimizer(model.parameters())`:
    // a callee named as an optimizer (or its factory) takes the parameters it is given to train them.
    if (isOptimizerClass(last) || OPTIMIZER_FACTORY.test(last)) return true;
    if (!/^(list|tuple|chain|filter)$/.test(last)) return false;
  }
  return false;
}

/** The contributions of a statement's nodes, in walk order (see walkSplittingFunctions). */
interface ModelParts {
  readonly classes: [string, string, boolean][];
  readonly markers: string[];
  readonly toggles: GradToggle[];
  readonly functions: string[];
  readonly candidates: { key: string; rhs: SyntaxNode; head: string }[];
  readonly optimized: string[];
}

const unitModelCache = new NodeMemo<UnitModelData>('models.unit');
/** The parts of each function's body, so an edit in one method of a giant class re-walks that method only. */
const functionModelParts = new NodeMemo<ModelParts>('models.functionParts');
/** The parts of each statement of a long function's body (see SPLIT_FUNCTION_LINES). */
const statementModelParts = new NodeMemo<ModelParts>('models.statementParts');

function unitModelData(file: SourceFile, unit: SyntaxNode): UnitModelData {
  return unitModelCache.get(file, unit, '', () => {
    const { classes, markers, toggles, functions, candidates, optimized } = walkSplittingFunctions(file, functionModelParts, '', unit, modelWalk(file));
    const frozen = toggles.filter((t) => t.literal && t.off === true).map((t) => t.target);
    // `noise.requires_grad_()` counts as unfrozen too: harmless, only keys that are also frozen are read.
    const unfrozen = toggles.filter((t) => t.literal && t.off === false).map((t) => t.target);
    const token = intern(file, JSON.stringify([classes, markers, frozen, unfrozen, functions, candidates.map((c) => [c.key, file.textOf(c.rhs), c.head]), optimized]));
    return { classes, markers, toggles, frozen, unfrozen, functions, candidates, optimized, token };
  });
}

/** The `requires_grad` switches of one top-level statement, in walk order (from the model facts' cached walk). */
export function unitGradToggles(file: SourceFile, unit: SyntaxNode): readonly GradToggle[] {
  return unitModelData(file, unit).toggles;
}

function modelWalk(file: SourceFile): FunctionSplitWalk<ModelParts> {
  return {
    order: 'reverse',
    // Every visit reads its node's subtree (builtForOptimizer climbs expressions only, never a statement).
    statements: statementModelParts,
    fresh: () => ({ classes: [], markers: [], toggles: [], functions: [], candidates: [], optimized: [] }),
    merge: (acc, part) => {
      for (const c of part.classes) acc.classes.push(c);
      for (const m of part.markers) acc.markers.push(m);
      for (const t of part.toggles) acc.toggles.push(t);
      for (const f of part.functions) acc.functions.push(f);
      for (const c of part.candidates) acc.candidates.push(c);
      for (const o of part.optimized) acc.optimized.push(o);
    },
    visit: (n, acc) => {
      if (n.type === 'class_definition') {
        const name = childByField(n, 'name');
        if (name !== null) acc.classes.push([file.textOf(name), classBases(file, n), definesForward(file, n)]);
      } else if (n.type === 'function_definition') {
        const name = childByField(n, 'name');
        if (name !== null) acc.functions.push(file.textOf(name));
      } else if (n.type === 'call') {
        for (const t of nodeGradToggles(file, n)) acc.toggles.push(t);
        const fn = childByField(n, 'function');
        if (fn?.type !== 'attribute') return;
        const attr = childByField(fn, 'attribute');
        const method = attr === null ? '' : file.textOf(attr);
        if (method === 'eval' || method === 'train') {
          const key = keyOf(file, childByField(fn, 'object'));
          if (key !== null && positionalArguments(n).length <= 1) acc.markers.push(key);
        } else if (method === 'parameters' && builtForOptimizer(file, n)) {
          const key = keyOf(file, childByField(fn, 'object'));
          if (key !== null && key !== 'self') acc.optimized.push(key);
        }
      } else if (n.type === 'assignment') {
        for (const t of nodeGradToggles(file, n)) acc.toggles.push(t);
        const left = childByField(n, 'left');
        const right = childByField(n, 'right');
        // `self.eval_net, self.target_net = Net(), Net()`: pair the targets with the values.
        if ((left?.type === 'pattern_list' || left?.type === 'tuple_pattern') && (right?.type === 'expression_list' || right?.type === 'tuple')) {
          const targets = left.children.filter((c) => c.named);
          const values = right.children.filter((c) => c.named);
          if (targets.length === values.length) {
            targets.forEach((t, i) => {
              const k = keyOf(file, t);
              const v = values[i];
              if (k !== null && v.type === 'call') {
                const head = callHead(file, v);
                if (head !== null) acc.candidates.push({ key: k, rhs: v, head });
              }
            });
          }
        }
        const key = keyOf(file, left);
        if (key !== null && right !== null && (right.type === 'call' || right.type === 'identifier' || right.type === 'attribute' || right.type === 'parenthesized_expression')) {
          const head = right.type === 'call' ? callHead(file, right) : null;
          if (head !== null || right.type !== 'call') acc.candidates.push({ key, rhs: right, head: head ?? '' });
        }
      }
    },
  };
}

function computeFacts(file: SourceFile): ModelFacts {
  const units = unitsOf(file).map((u) => unitModelData(file, u));
  // Classes: resolve bases defined in the same file transitively.
  const bases = new Map<string, string>();
  const forwardDefiners: string[] = [];
  for (const u of units) {
    for (const [name, b, forward] of u.classes) {
      bases.set(name, b);
      if (forward) forwardDefiners.push(name);
    }
  }
  const classIs = (test: RegExp): Set<string> => {
    const out = new Set<string>();
    const visit = (name: string, seen: Set<string>): boolean => {
      if (out.has(name)) return true;
      const b = bases.get(name);
      if (b === undefined || seen.has(name)) return false;
      seen.add(name);
      if (test.test(b)) return true;
      return (b.match(/[A-Za-z_][\w.]*/g) ?? []).some((base) => visit(lastSegment(base), seen));
    };
    for (const name of bases.keys()) if (visit(name, new Set())) out.add(name);
    return out;
  };
  const moduleClasses = classIs(/\b(Module|LightningModule|PreTrainedModel|Sequential)\b|\bnn\./);
  // `class QNet_dqn(BaseQNet)` with `def forward(self, states)`, its base imported from another file: a
  // module all the same (an `autograd.Function`'s static `forward(ctx, ...)` does not count). A base
  // defined here decides by itself (it was judged above).
  for (const name of forwardDefiners) {
    const names = (bases.get(name) ?? '').match(/[A-Za-z_][\w.]*/g) ?? [];
    if (names.length > 0 && names.every((b) => !bases.has(lastSegment(b)) && b !== 'object' && !/(^|\.)Function$/.test(b))) moduleClasses.add(name);
  }
  const lightningClasses = classIs(/Lightning|\bCallback\b/);
  const markerReceivers = new Set<string>();
  const frozen = new Set<string>();
  const unfrozen = new Set<string>();
  const functions = new Set<string>();
  for (const u of units) {
    for (const m of u.markers) markerReceivers.add(m);
    for (const f of u.frozen) frozen.add(f);
    for (const f of u.unfrozen) unfrozen.add(f);
    for (const f of u.functions) functions.add(f);
  }

  // Whatever an optimizer is built from the parameters of is a module, whatever its name
  // (`self.actor_local = self.create_NN(...)`, a factory of a base class in another file).
  const assigned = new Set<string>(units.flatMap((u) => u.optimized));
  // Local names bound to model zoos (`from torchvision import models`, `import timm`).
  const builderHeads = new Set<string>();
  for (const [local, b] of importBindings(file)) if (/^(torchvision|timm|torch\.hub)/.test(b.qualified)) builderHeads.add(local);
  // Classes this file shows to build modules: another instance of the same class is optimized, put in
  // eval/train mode or named as a model (`encoder = sm.EncoderRNN(...)`, then `encoder_test =
  // sm.EncoderRNN(10, 10, 2)` in a smoke test). The class is in another file; its instances are modules here.
  const shownConstructors = new Set<string>();
  for (const u of units) {
    for (const { key, rhs, head } of u.candidates) {
      if (head !== '' || rhs.type !== 'call' || !(assigned.has(key) || markerReceivers.has(key) || isModelKeyByName(key))) continue;
      const fn = childByField(rhs, 'function');
      const name = fn === null ? null : qualifiedName(file, fn);
      if (name !== null && /^[A-Z]/.test(lastSegment(name)) && !WRAPPERS.test(name)) shownConstructors.add(name);
    }
  }
  const isModuleExpr = (expr: SyntaxNode | null, depth = 0): boolean => {
    if (expr === null || depth > 8) return false;
    const key = keyOf(file, expr);
    if (key !== null) return assigned.has(key) || markerReceivers.has(key) || isModelKeyByName(key);
    if (expr.type === 'parenthesized_expression') return isModuleExpr(expr.children.find((c) => c.named) ?? null, depth + 1);
    // `models.vgg19(pretrained=True).features`: a submodule of a module just built.
    if (expr.type === 'attribute') return childByField(expr, 'object')?.type === 'call' && isModuleExpr(childByField(expr, 'object'), depth + 1);
    if (expr.type !== 'call') return false;
    const fn = childByField(expr, 'function');
    if (fn === null) return false;
    // Cheap syntactic filter before resolving names: constructors are capitalised, builders known.
    const lastNode = fn.type === 'attribute' ? childByField(fn, 'attribute') : fn;
    const last = lastNode === null ? '' : file.textOf(lastNode);
    const head = fn.type === 'attribute' ? file.textOf(fn).split('.')[0] : last;
    if (!/^[A-Z]/.test(last) && !MODULE_METHODS.has(last) && !MODULE_BUILDERS.has(last) && !builderHeads.has(head) && !moduleClasses.has(last)) return false;
    if (fn.type === 'attribute') {
      const method = last;
      const object = childByField(fn, 'object');
      if (MODULE_METHODS.has(method)) return isModuleExpr(object, depth + 1);
      if (method === 'from_pretrained') {
        const owner = object === null ? '' : file.textOf(object);
        return /Model|For[A-Z]|Net\b/.test(owner) && !/Tokenizer|Processor|Config|FeatureExtractor/.test(owner);
      }
    }
    const name = qualifiedName(file, fn);
    if (name === null) return false;
    if (WRAPPERS.test(name)) return positionalArguments(expr).some((a) => isModuleExpr(a, depth + 1));
    if (name.startsWith('torch.nn.') && /^[A-Z]/.test(lastSegment(name))) return !NOT_CALLABLE_MODULES.test(name);
    if (name.startsWith('torchvision.models.') || name === 'timm.create_model' || name === 'torch.hub.load') return true;
    return moduleClasses.has(name) || shownConstructors.has(name);
  };
  for (let pass = 0; pass < 2; pass++) {
    for (const u of units) {
      for (const { key, rhs, head } of u.candidates) {
        if (head !== '' && !builderHeads.has(head) && !moduleClasses.has(head)) continue;
        if (!assigned.has(key) && isModuleExpr(rhs)) assigned.add(key);
      }
    }
  }
  return { assigned, markerReceivers, moduleClasses, lightningClasses, frozen, unfrozen, functions };
}

/** Changes whenever the model facts (or the imports they were resolved through) change. */
export function modelSignature(file: SourceFile): string {
  // modelFacts is the same object while the contributions are (factsByContent), so the sorted lists are
  // built once per distinct facts, not per version (a giant class lists hundreds of function names).
  const f = modelFacts(file);
  const imports = importSignature(file);
  return signatureByFacts.get(file, [f, imports], () => {
    const list = (set: ReadonlySet<string>): string => [...set].sort().join(',');
    return intern(file, [imports, list(f.assigned), list(f.markerReceivers), list(f.moduleClasses), list(f.lightningClasses), list(f.frozen), list(f.unfrozen), list(f.functions)].join('|'));
  });
}

const signatureByFacts = new KeyMemo<string>('models.signature', 4);

function isModelKeyByName(key: string): boolean {
  const dot = key.lastIndexOf('.');
  if (dot < 0) return looksLikeModelName(key);
  const base = key.slice(0, dot);
  const last = key.slice(dot + 1);
  if (CONFIG_OBJECTS.test(base)) return false;
  // `self.policy_net`, `model.encoder`: attributes of self or of a model; elsewhere only bare names
  // (`accelerator.unwrap_model` is a method).
  if (base === 'self' || looksLikeModelName(lastSegment(base))) return looksLikeModelName(last);
  return BARE_MODEL_NAME.test(last);
}

/** True when a dotted key names a module in this file. */
export function isModelKey(file: SourceFile, key: string): boolean {
  const facts = modelFacts(file);
  if (facts.assigned.has(key) || facts.markerReceivers.has(key)) return true;
  if (facts.functions.has(key)) return false;
  return isModelKeyByName(key);
}

/** The class a method is defined in, or null. */
export function enclosingClass(fn: SyntaxNode): SyntaxNode | null {
  let p = fn.parent;
  if (p?.type === 'decorated_definition') p = p.parent;
  if (p?.type !== 'block') return null;
  return p.parent?.type === 'class_definition' ? p.parent : null;
}

function className(file: SourceFile, cls: SyntaxNode | null): string | null {
  const name = cls === null ? null : childByField(cls, 'name');
  return name === null ? null : file.textOf(name);
}

/** Inside a method of an nn.Module subclass? (Then `self(x)` is a forward pass.) */
function inModuleClass(file: SourceFile, node: SyntaxNode): boolean {
  for (let p = node.parent; p !== null; p = p.parent) {
    if (p.type === 'class_definition') return modelFacts(file).moduleClasses.has(className(file, p) ?? '');
  }
  return false;
}

/**
 * The module a call runs, as a dotted key ("model", "self.encoder", "self"), when the call is a forward
 * pass: `model(x)`, `self.net(x)`, `model.forward(x)`, `self(x)` in a Module. Null otherwise.
 * `model.generate(...)` is not one: Hugging Face decorates generate() with no_grad itself.
 */
export function forwardReceiver(file: SourceFile, call: SyntaxNode): string | null {
  return forwardCache.get(file, call, modelSignature(file), () => computeForwardReceiver(file, call));
}

const forwardCache = new NodeMemo<string | null>('models.forwardReceiver');

export interface ScopeCalls {
  /** Forward passes whose nearest scope is this one. */
  readonly forwards: SyntaxNode[];
  /** Backward-like calls whose nearest scope is this one. */
  readonly backwards: SyntaxNode[];
}

interface UnitCalls {
  readonly byScope: Map<SyntaxNode, ScopeCalls>;
  readonly moduleLevel: ScopeCalls;
}

const unitCallsCache = new NodeMemo<UnitCalls>('models.unitCalls');
/** The calls of each function's body, so an edit in one method of a giant class re-walks that method only. */
const functionCallsCache = new NodeMemo<UnitCalls>('models.functionCalls');
/** The calls of each statement of a long function's body (see SPLIT_FUNCTION_LINES), main's own scope relocated. */
const statementCallsCache = new NodeMemo<UnitCalls>('models.statementCalls');

/** The node types the walk below acts on (it reads them from the statement's by-type index). */
const CALL_TYPES: readonly string[] = Object.freeze(['call']);

/**
 * Forward and backward calls of a statement by scope. A function body's calls have that function or a
 * nested one as scope, so merging its map at the function's place keeps the walk's insertion order.
 */
function callsWalk(file: SourceFile): FunctionSplitWalk<UnitCalls> {
  return {
    order: 'document',
    types: CALL_TYPES,
    // A call's receiver is memoised on the call under the model signature (its walk's deps); its scope is
    // the one thing read outside its statement, relocated below.
    statements: statementCallsCache,
    relocate: (part, from, to) => {
      if (!part.byScope.has(from)) return part;
      const byScope = new Map<SyntaxNode, ScopeCalls>();
      for (const [scope, calls] of part.byScope) byScope.set(scope === from ? to : scope, calls);
      return { byScope, moduleLevel: part.moduleLevel };
    },
    fresh: () => ({ byScope: new Map(), moduleLevel: { forwards: [], backwards: [] } }),
    merge: (acc, part) => {
      // A scope's calls are copied, not shared: the statements of a long function each hold some of the
      // function's own calls (kept parts are never changed in place), and a scope keeps its first place.
      for (const [scope, calls] of part.byScope) {
        const have = acc.byScope.get(scope);
        if (have === undefined) acc.byScope.set(scope, { forwards: [...calls.forwards], backwards: [...calls.backwards] });
        else {
          for (const c of calls.forwards) have.forwards.push(c);
          for (const c of calls.backwards) have.backwards.push(c);
        }
      }
      for (const c of part.moduleLevel.forwards) acc.moduleLevel.forwards.push(c);
      for (const c of part.moduleLevel.backwards) acc.moduleLevel.backwards.push(c);
    },
    visit: (n, acc) => {
      if (n.type !== 'call') return;
      const isForward = forwardReceiver(file, n) !== null;
      const isBackward = !isForward && backwardTargets(file, n) !== null;
      if (!isForward && !isBackward) return;
      const scope = scopeOf(n);
      if (scope === null) return;
      let entry = scope.type === 'module' ? acc.moduleLevel : acc.byScope.get(scope);
      if (entry === undefined) {
        entry = { forwards: [], backwards: [] };
        acc.byScope.set(scope, entry);
      }
      (isForward ? entry.forwards : entry.backwards).push(n);
    },
  };
}
const scopeCallsCache = new VersionMemo<ReadonlyMap<SyntaxNode, ScopeCalls>>('models.callsByScope');

/** Forward and backward calls grouped by scope (cached per top-level statement). */
export function callsByScope(file: SourceFile): ReadonlyMap<SyntaxNode, ScopeCalls> {
  return scopeCallsCache.get(file, computeCallsByScope);
}

function computeCallsByScope(file: SourceFile): ReadonlyMap<SyntaxNode, ScopeCalls> {
  const map = new Map<SyntaxNode, ScopeCalls>();
  const sig = modelSignature(file);
  const moduleLevel: ScopeCalls = { forwards: [], backwards: [] };
  for (const unit of unitsOf(file)) {
    const data = unitCallsCache.get(file, unit, sig, () => walkSplittingFunctions(file, functionCallsCache, sig, unit, callsWalk(file)));
    for (const [scope, calls] of data.byScope) map.set(scope, calls);
    moduleLevel.forwards.push(...data.moduleLevel.forwards);
    moduleLevel.backwards.push(...data.moduleLevel.backwards);
  }
  if (moduleLevel.forwards.length > 0 || moduleLevel.backwards.length > 0) map.set(file.root, moduleLevel);
  return map;
}

/**
 * Whether any value in the scope can carry autograd history: only forward passes, names that are
 * backpropagated, and tensors created with requires_grad / create_graph start one (see flow.ts).
 */
export function hasTaintSource(file: SourceFile, scope: SyntaxNode): boolean {
  const calls = callsByScope(file).get(scope);
  if (calls !== undefined && (calls.forwards.length > 0 || calls.backwards.length > 0)) return true;
  const text = file.textOf(scope);
  return text.includes('requires_grad') || text.includes('create_graph');
}

/**
 * `Model(cfg)`, `nn.Transformer(...)`, `Generator()`: a capitalised callee is a class being constructed,
 * not a module being run, unless the file binds that very name to a module instance.
 */
function isConstructorCall(file: SourceFile, key: string): boolean {
  if (!/^[A-Z]/.test(lastSegment(key))) return false;
  const facts = modelFacts(file);
  return !facts.assigned.has(key) && !facts.markerReceivers.has(key);
}

/**
 * `from timm.utils import reparameterize_model`: an imported snake_case name that merely ends in a model
 * word is a helper function (libraries export functions and classes, not model instances).
 */
function isImportedModelHelper(file: SourceFile, name: string): boolean {
  return name.includes('_') && !BARE_MODEL_NAME.test(name) && importBindings(file).has(name);
}

/** `swap_model(model)`, `fuse_model(net, ...)`: a call handed a module is a transformation of it, not its forward pass. */
function takesModelArgument(file: SourceFile, call: SyntaxNode): boolean {
  return positionalArguments(call).some((a) => {
    const key = keyOf(file, a);
    return key !== null && isModelKey(file, key);
  });
}

/**
 * torch's functional forms of a forward pass, which take the module as their first argument:
 * `data_parallel(model, x)` scatters `x` over the GPUs, runs `model` on each and gathers the outputs on
 * the first one; `functional_call(model, params, x)` runs `model` with other parameters. Their result is
 * the module's output, graph included, exactly as `model(x)`'s.
 */
const FUNCTIONAL_FORWARD = /^torch\.(nn\.parallel\.(data_parallel\.)?data_parallel|func\.functional_call|nn\.utils\.stateless\.functional_call)$/;

/** The module run by such a functional forward (its first positional argument), or null. */
function functionalForwardModule(file: SourceFile, call: SyntaxNode, fn: SyntaxNode): string | null {
  if (fn.type !== 'identifier' && fn.type !== 'attribute') return null;
  if (!/(data_parallel|functional_call)$/.test(file.textOf(fn)) || !FUNCTIONAL_FORWARD.test(qualifiedName(file, fn) ?? '')) return null;
  const module = positionalArguments(call)[0] ?? keywordArgument(file, call, 'module');
  const key = module === undefined || module === null ? null : keyOf(file, module);
  return key !== null && (key === 'self' ? inModuleClass(file, call) : isModelKey(file, key)) ? key : null;
}

function computeForwardReceiver(file: SourceFile, call: SyntaxNode): string | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  const functional = functionalForwardModule(file, call, fn);
  if (functional !== null) return functional;
  if (fn.type === 'identifier') {
    const name = file.textOf(fn);
    if (name === 'self') return inModuleClass(file, call) ? 'self' : null;
    if (isConstructorCall(file, name) || isImportedModelHelper(file, name) || takesModelArgument(file, call)) return null;
    return isModelKey(file, name) ? name : null;
  }
  if (fn.type !== 'attribute') return null;
  const attr = childByField(fn, 'attribute');
  const object = childByField(fn, 'object');
  const objectKey = keyOf(file, object);
  if (attr !== null && /^forward(_\w+)?$/.test(file.textOf(attr))) {
    if (objectKey === 'self') return inModuleClass(file, call) ? 'self' : null;
    return objectKey !== null && isModelKey(file, objectKey) ? objectKey : null;
  }
  const key = keyOf(file, fn);
  return key !== null && !isConstructorCall(file, key) && isModelKey(file, key) ? key : null;
}

/** Lightning runs validation/test/predict hooks under no_grad itself. */
export function isLightningNoGradHook(file: SourceFile, fn: SyntaxNode): boolean {
  const name = file.textOf(childByField(fn, 'name') ?? fn);
  if (!/^(validation|test|predict|val)_|^on_(validation|test|predict)/.test(name)) return false;
  const cls = enclosingClass(fn);
  if (cls === null) return false;
  if (modelFacts(file).lightningClasses.has(className(file, cls) ?? '')) return true;
  // The hook names themselves: a LightningModule subclassed through a base class from another file.
  return /^(validation_step|test_step|predict_step|validation_step_end|test_step_end|validation_epoch_end|test_epoch_end)$|^on_(validation|test|predict)_/.test(name);
}

// ---- Gradient computations ---------------------------------------------------------------------

/**
 * Receivers whose `backward(loss)` backpropagates its argument: accelerate, Fabric, DeepSpeed engines, and
 * optimizers that own the loss scaling (apex's FP16_Optimizer, Megatron's and LOMO's `optimizer.backward(loss)`).
 */
const ENGINE_RECEIVER = /(^|\.|_)(accelerator|fabric|engine|model_engine|trainer|deepspeed|amp|optimizer)$/i;
/**
 * `fused_backward`, `scaled_backward`: a method named for the backward pass it runs on its argument. Not
 * `forward_backward(batch)` (a whole step, handed a batch) nor a custom Function's `ctx.save_for_backward(x)`.
 */
const NAMED_BACKWARD = /^(?!.*(forward|save_for))[A-Za-z]\w*_backward$/;

/** `NAMED_BACKWARD` on a method name; the suffix test first, since a callee's text may be a long chain of calls. */
function isNamedBackward(name: string): boolean {
  return name.endsWith('_backward') && NAMED_BACKWARD.test(name);
}

/**
 * The tensors a backward-like call backpropagates from: `loss.backward()` -> [loss],
 * `accelerator.backward(loss)` -> [loss], `torch.autograd.grad(out, x)` -> [out]. Null when the call
 * is not one.
 */
export function backwardTargets(file: SourceFile, call: SyntaxNode): SyntaxNode[] | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  const last = fn.type === 'attribute' ? childByField(fn, 'attribute') : fn;
  if (last === null) return null;
  const lastText = file.textOf(last);
  if (lastText !== 'backward' && lastText !== 'grad' && lastText !== 'manual_backward' && !isNamedBackward(lastText)) return null;
  const name = qualifiedName(file, fn);
  if (name === 'torch.autograd.backward' || name === 'torch.autograd.grad' || name === 'autograd.grad' || name === 'autograd.backward') {
    const first = positionalArguments(call)[0] ?? keywordArgument(file, call, 'outputs') ?? keywordArgument(file, call, 'tensors');
    return first === undefined || first === null ? [] : [first];
  }
  if (fn.type === 'identifier') return null;
  if (fn.type !== 'attribute') return null;
  const attr = childByField(fn, 'attribute');
  const method = attr === null ? '' : file.textOf(attr);
  const object = childByField(fn, 'object');
  // `self.manual_backward(loss)`, `self.optimizer.fused_backward(loss, lr)` (LOMO), `self.scaled_backward(loss)`:
  // methods that backpropagate the loss they are handed.
  if (method === 'manual_backward' || isNamedBackward(method)) return positionalArguments(call).slice(0, 1);
  if (method !== 'backward' || object === null) return null;
  if (ENGINE_RECEIVER.test(file.textOf(object))) return positionalArguments(call).slice(0, 1);
  return [object];
}

/** The call computes or applies gradients (backward, autograd.grad, optimizer.step, zero_grad...). */
const GRADIENT_METHODS = new Set(['backward', 'grad', 'manual_backward', 'step', 'zero_grad', 'requires_grad_', 'enable_grad']);

export function isGradientCall(file: SourceFile, call: SyntaxNode): boolean {
  const fn = childByField(call, 'function');
  if (fn === null) return false;
  if (!GRADIENT_METHODS.has(lastName(file, fn)) && !isNamedBackward(lastName(file, fn)) && !file.textOf(fn).includes('autograd')) return false;
  if (backwardTargets(file, call) !== null) return true;
  const name = qualifiedName(file, fn) ?? '';
  if (name.startsWith('torch.autograd.functional.') || name === 'torch.enable_grad' || name.endsWith('.enable_grad')) return true;
  if (fn.type !== 'attribute') return false;
  const attr = childByField(fn, 'attribute');
  const method = attr === null ? '' : file.textOf(attr);
  const object = childByField(fn, 'object');
  const receiver = object === null ? '' : file.textOf(object);
  if (method === 'step') return /optim|opt\b|opt_|_opt|scaler|^opt/i.test(receiver);
  if (method === 'zero_grad') return true;
  if (method === 'requires_grad_') return !/False/.test(file.textOf(childByField(call, 'arguments') ?? call));
  return false;
}

/** Gradients with respect to inputs (attacks, saliency, penalties): autograd.grad, requires_grad_(). */
function lastName(file: SourceFile, fn: SyntaxNode): string {
  const last = fn.type === 'attribute' ? childByField(fn, 'attribute') : fn;
  return last === null ? '' : file.textOf(last);
}

export function isInputGradientCall(file: SourceFile, call: SyntaxNode): boolean {
  const fn = childByField(call, 'function');
  if (fn === null) return false;
  if (!GRADIENT_METHODS.has(lastName(file, fn)) && !isNamedBackward(lastName(file, fn)) && !file.textOf(fn).includes('autograd')) return false;
  const name = qualifiedName(file, fn) ?? '';
  // MAML's inner loop differentiates the weights (weight-gradients.ts): no input gradient.
  if (name === 'torch.autograd.grad' || name === 'autograd.grad') return !differentiatesWeights(file, call);
  if (name.startsWith('torch.autograd.functional.')) return true;
  if (name === 'torch.enable_grad' || name.endsWith('.enable_grad')) return true;
  if (fn.type !== 'attribute') return false;
  const method = file.textOf(childByField(fn, 'attribute') ?? fn);
  return method === 'requires_grad_' && !/False/.test(file.textOf(childByField(call, 'arguments') ?? call));
}

const gradientScopes = [new NodeMemo<boolean>('models.computesGradients'), new NodeMemo<boolean>('models.computesInputGradients')] as const;

/**
 * True when the scope (a function, with nested defs, or the module's top-level code) computes
 * gradients: backward/autograd.grad/optimizer steps, reads of `.grad`, `requires_grad = True`. With
 * `inputsOnly`, only gradients with respect to inputs count (autograd.grad, requires_grad, `.grad`).
 */
export function computesGradients(file: SourceFile, scope: SyntaxNode, inputsOnly = false): boolean {
  return gradientScopes[inputsOnly ? 1 : 0].get(file, scope, importSignature(file), () => scanGradients(file, scope, inputsOnly));
}

function scanGradients(file: SourceFile, scope: SyntaxNode, inputsOnly: boolean): boolean {
  return gradientSites(file, scope, inputsOnly, true).length > 0;
}

/**
 * Every place where the scope takes gradients with respect to inputs (`x.requires_grad_()`,
 * `torch.autograd.grad`, reads of `x.grad`): where they sit decides which forwards they concern.
 */
export function inputGradientSites(file: SourceFile, scope: SyntaxNode): readonly SyntaxNode[] {
  return gradientSites(file, scope, true, false);
}

function gradientSites(file: SourceFile, scope: SyntaxNode, inputsOnly: boolean, firstOnly: boolean): SyntaxNode[] {
  const sites: SyntaxNode[] = [];
  const isGradient = inputsOnly ? isInputGradientCall : isGradientCall;
  // The calls and attributes of the scope's whole subtree from the by-type index (a walk read every
  // node's children), sorted at the end into the order the stack walk this replaced found them in.
  for (const n of subtreeNodesOfType(file, scope, 'call')) {
    if (isGradient(file, n)) sites.push(n);
    if (firstOnly && sites.length > 0) return sites;
  }
  for (const n of subtreeNodesOfType(file, scope, 'attribute')) {
    const name = childByField(n, 'attribute');
    const text = name === null ? '' : file.textOf(name);
    // Logging a parameter's gradient or toggling a parameter's requires_grad (WGAN's critic freeze) takes no
    // gradient with respect to inputs.
    if (inputsOnly && (text === 'grad' || text === 'requires_grad') && isParameterLoopVariable(file, childByField(n, 'object'))) continue;
    if (text === 'grad' && n.field !== 'function' && !/autograd$/.test(file.textOf(childByField(n, 'object') ?? n))) sites.push(n);
    else if (text === 'requires_grad' && n.field === 'left' && n.parent?.type === 'assignment' && !/False/.test(file.textOf(childByField(n.parent, 'right') ?? n))) sites.push(n);
    if (firstOnly && sites.length > 0) return sites;
  }
  return sites.sort(beforeInReverseWalk);
}

/** `p` in `for p in model.parameters():` / `for name, p in net.named_parameters():`. */
function isParameterLoopVariable(file: SourceFile, object: SyntaxNode | null): boolean {
  if (object?.type !== 'identifier') return false;
  const name = file.textOf(object);
  for (let p = object.parent; p !== null; p = p.parent) {
    if (p.type === 'function_definition' || p.type === 'class_definition') return false;
    if (p.type !== 'for_statement') continue;
    const left = childByField(p, 'left');
    const right = childByField(p, 'right');
    if (left === null || right === null || !left.children.concat([left]).some((c) => c.type === 'identifier' && file.textOf(c) === name)) continue;
    return /\.(named_)?parameters\(\s*\)\s*\)?$/.test(file.textOf(right));
  }
  return false;
}

/** Not inside any def or class: module-level script code. */
export function topLevelCode(node: SyntaxNode): boolean {
  for (let p = node.parent; p !== null; p = p.parent) if (p.type === 'function_definition' || p.type === 'class_definition') return false;
  return true;
}

/** The function a node runs in, the module for top-level code, or null in a class body. */
export function scopeOf(node: SyntaxNode): SyntaxNode | null {
  for (let p = node.parent; p !== null; p = p.parent) {
    if (p.type === 'function_definition') return p;
    if (p.type === 'class_definition') return null;
    if (p.type === 'module') return p;
  }
  return null;
}
