// "The per-step loop": the loop that runs once per training/eval step. MH005, MH006, MH007 and MH009
// share this notion so they agree on what runs every step and what runs once per epoch or per run.
//
// A loop is per-step when
//   - its own body (not counting nested loops or defs) takes an optimisation step: `.backward()`,
//     `optimizer.step()`, `scaler.step(opt)`, `train_step(...)`, or a call to a function of this file
//     that does so without looping itself; or
//   - it iterates batches (`for batch in loader`, `enumerate(tqdm(train_dataloader))`) and its body
//     runs a forward pass, a loss or a step anywhere; or
//   - its own body fetches a batch (`get_batch(...)`, `next(data_iter)`) and runs a forward pass or loss.
// An epoch loop (`for epoch in range(E): for batch in loader: ...`) and a sweep / k-fold / trial loop
// are not per-step: their own body holds no step, only a nested per-step loop.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod, calleeName } from './imports';
import { enclosingLoops, positionalArguments } from './context';
import { VersionMemo } from '../session';
import { isOccasionalCondition } from './periodic-guards';

const LOOP_TYPES = new Set(['for_statement', 'while_statement']);
const SCOPE_TYPES = new Set(['function_definition', 'class_definition', 'lambda']);

/** Method names that take a training step by themselves (CycleGAN, Keras-style, trainer helpers). */
const STEP_METHODS = new Set([
  'train_step',
  'training_step',
  'train_batch',
  'train_on_batch',
  'train_iter',
  'train_iteration',
  'optimize_parameters',
  'update_parameters',
  'optimizer_step',
]);

/** Callee names that run a model forward pass. */
const FORWARD_NAME = /^(model|net|netg|netd|generator|discriminator|encoder|decoder|policy|actor|critic|classifier|backbone|module|ddp_model|raw_model|model_engine|student|teacher)$|(model|net)$/i;
/** Factories and accessors whose names end like a model's: `build_model()`, `get_net()`. */
const NOT_FORWARD = /^(get|build|create|make|load|init|setup|prepare|wrap|save|freeze|unfreeze|copy)_/i;
/** Callee names that compute a loss. */
const LOSS_NAME = /^(criterion|loss_fn|loss_func|lossfn|loss_function|compute_loss|criterion_\w+|\w+_criterion|\w+_loss_fn)$/i;
const FUNCTIONAL_LOSS = /^torch\.nn\.functional\.(\w*loss\w*|cross_entropy|binary_cross_entropy\w*|kl_div)$/;
/** Iterables that yield batches. */
const BATCH_SOURCE = /(loader|batches|batch_iter|data_iter|dataiter|epoch_iterator|(^|_)dl$)/i;
/** Calls that fetch one batch. */
const BATCH_FETCH = /^(get_batch|next_batch|get_next_batch|sample_batch|fetch_batch)$/;

/** Wrappers whose first argument is the real iterable: enumerate(tqdm(loader)). */
const ITERABLE_WRAPPERS = new Set(['enumerate', 'tqdm', 'tqdm.tqdm', 'tqdm.auto.tqdm', 'tqdm.notebook.tqdm', 'track', 'rich.progress.track', 'iter']);

interface LoopInfo {
  ownStep: boolean;
  ownForward: boolean;
  ownBatchFetch: boolean;
  nestedLoops: SyntaxNode[];
  /** Calls local functions that themselves contain a per-step loop (an epoch or run driver). */
  drivesStepLoop: boolean;
  perStep: boolean | null;
}

interface FunctionSummary {
  step: boolean;
  forward: boolean;
  containsStepLoop: boolean;
}

/**
 * One version's loop and function facts. Local calls are followed at most a few levels deep, so a
 * loop's facts depend on the depth at which they are asked: every memo here is keyed by (node, depth).
 */
class StepAnalysis {
  /** Loop facts by depth, then loop. */
  private readonly loops: Map<SyntaxNode, LoopInfo>[] = [];
  /** Function summaries by depth, then definition. */
  private readonly summaries: Map<SyntaxNode, FunctionSummary | 'pending'>[] = [];
  private functionsByName: Map<string, SyntaxNode[]> | null = null;

  constructor(private readonly file: SourceFile) {}

  isPerStepLoop(loop: SyntaxNode, depth = 0): boolean {
    const info = this.info(loop, depth);
    if (info.perStep !== null) return info.perStep;
    info.perStep = false; // guards recursion through malformed trees
    let perStep = info.ownStep;
    if (!perStep && iteratesBatches(this.file, loop)) perStep = info.ownForward || this.anyNested(info, (l) => this.info(l, depth).ownStep || this.info(l, depth).ownForward);
    if (!perStep && info.ownBatchFetch && info.ownForward) perStep = true;
    info.perStep = perStep;
    return perStep;
  }

  /** Per-step loops nested anywhere inside `loop`'s body (not crossing defs), outermost first. */
  nestedStepLoops(loop: SyntaxNode): SyntaxNode[] {
    const out: SyntaxNode[] = [];
    const visit = (l: SyntaxNode): void => {
      for (const n of this.info(l, 0).nestedLoops) {
        if (this.isPerStepLoop(n)) out.push(n);
        visit(n);
      }
    };
    visit(loop);
    return out;
  }

  /** True when the loop's body contains a per-step loop, directly or through a local function it calls. */
  containsStepLoop(loop: SyntaxNode): boolean {
    return this.info(loop, 0).drivesStepLoop || this.nestedStepLoops(loop).length > 0;
  }

  /** True when the loop (or a loop nested in it) takes an optimisation step: a training loop. */
  trains(loop: SyntaxNode): boolean {
    const info = this.info(loop, 0);
    return info.ownStep || this.anyNested(info, (l) => this.info(l, 0).ownStep);
  }

  private anyNested(info: LoopInfo, pred: (l: SyntaxNode) => boolean): boolean {
    const stack = [...info.nestedLoops];
    while (stack.length > 0) {
      const l = stack.pop()!;
      if (pred(l)) return true;
      stack.push(...this.info(l, 0).nestedLoops);
    }
    return false;
  }

  private info(loop: SyntaxNode, depth: number): LoopInfo {
    const loops = (this.loops[depth] ??= new Map());
    let info = loops.get(loop);
    if (info !== undefined) return info;
    info = { ownStep: false, ownForward: false, ownBatchFetch: false, nestedLoops: [], drivesStepLoop: false, perStep: null };
    loops.set(loop, info);
    const body = childByField(loop, 'body');
    if (body !== null) {
      const region = scanRegion(body);
      info.nestedLoops = region.loops;
      for (const call of region.calls) {
        const kind = classifyCall(this.file, call);
        if (kind === 'step') info.ownStep = true;
        else if (kind === 'forward') info.ownForward = true;
        else if (kind === 'fetch') info.ownBatchFetch = true;
        else {
          const summary = this.localCallSummary(call, depth);
          if (summary === null) continue;
          if (summary.containsStepLoop) info.drivesStepLoop = true;
          else if (summary.step) info.ownStep = true;
          else if (summary.forward) info.ownForward = true;
        }
      }
    }
    return info;
  }

  /** Summary of the function of this file a call invokes (`f(...)` or `self.f(...)`), or null. */
  private localCallSummary(call: SyntaxNode, depth: number): FunctionSummary | null {
    if (depth > 3) return null;
    const fn = childByField(call, 'function');
    if (fn === null) return null;
    let name: string | null = null;
    if (fn.type === 'identifier') name = this.file.textOf(fn);
    else if (fn.type === 'attribute') {
      const obj = childByField(fn, 'object');
      const attr = childByField(fn, 'attribute');
      if (obj !== null && attr !== null && obj.type === 'identifier' && this.file.textOf(obj) === 'self') name = this.file.textOf(attr);
    }
    if (name === null) return null;
    const defs = this.functions().get(name);
    if (defs === undefined || defs.length !== 1) return null; // ambiguous: several defs share the name
    return this.summary(defs[0], depth + 1);
  }

  private summary(def: SyntaxNode, depth: number): FunctionSummary | null {
    const summaries = (this.summaries[depth] ??= new Map());
    const cached = summaries.get(def);
    if (cached === 'pending') return null; // recursion
    if (cached !== undefined) return cached;
    summaries.set(def, 'pending');
    const result: FunctionSummary = { step: false, forward: false, containsStepLoop: false };
    const body = childByField(def, 'body');
    if (body !== null) {
      const region = scanRegion(body);
      for (const call of region.calls) {
        const kind = classifyCall(this.file, call);
        if (kind === 'step') result.step = true;
        else if (kind === 'forward') result.forward = true;
      }
      const stack = [...region.loops];
      while (stack.length > 0 && !result.containsStepLoop) {
        const l = stack.pop()!;
        if (this.isPerStepLoop(l, depth)) result.containsStepLoop = true;
        stack.push(...this.info(l, depth).nestedLoops);
      }
    }
    summaries.set(def, result);
    return result;
  }

  private functions(): Map<string, SyntaxNode[]> {
    if (this.functionsByName === null) {
      const map = new Map<string, SyntaxNode[]>();
      for (const def of this.file.nodesOfType('function_definition')) {
        const name = childByField(def, 'name');
        if (name === null) continue;
        const key = this.file.textOf(name);
        const list = map.get(key);
        if (list === undefined) map.set(key, [def]);
        else list.push(def);
      }
      this.functionsByName = map;
    }
    return this.functionsByName;
  }
}

interface Region {
  calls: SyntaxNode[];
  /** Loops directly nested in the region (their bodies are not part of it). */
  loops: SyntaxNode[];
}

/** Calls executed by a block itself, excluding nested loops' bodies and nested scopes. */
function scanRegion(block: SyntaxNode): Region {
  const calls: SyntaxNode[] = [];
  const loops: SyntaxNode[] = [];
  const stack: SyntaxNode[] = [...block.children];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (SCOPE_TYPES.has(n.type)) continue;
    if (LOOP_TYPES.has(n.type)) {
      loops.push(n);
      // The iterable / condition is evaluated by the enclosing region; the body is the nested loop's.
      for (const c of n.children) if (c.field === 'right' || c.field === 'condition') stack.push(c);
      continue;
    }
    if (n.type === 'call') calls.push(n);
    for (const c of n.children) stack.push(c);
  }
  loops.sort((a, b) => a.start - b.start);
  return { calls, loops };
}

type CallKind = 'step' | 'forward' | 'fetch' | null;

function classifyCall(file: SourceFile, call: SyntaxNode): CallKind {
  const method = calleeMethod(file, call);
  if (method === null) return null;
  if (method === 'backward') return 'step';
  if (STEP_METHODS.has(method)) return 'step';
  const fn = childByField(call, 'function');
  if (method === 'step' && fn !== null && fn.type === 'attribute') {
    const receiver = childByField(fn, 'object');
    if (receiver !== null && isOptimizerLike(file, receiver)) return 'step';
    return null;
  }
  if (BATCH_FETCH.test(method)) return 'fetch';
  if (method === 'next' && fn !== null && fn.type === 'identifier') {
    const arg = positionalArguments(call)[0];
    if (arg !== undefined && /iter|loader/i.test(file.textOf(arg))) return 'fetch';
  }
  if (method === 'forward') return 'forward';
  // `sliding_window_inference(inputs, roi, 4, model)`, `run(model, batch)`: the model runs inside.
  if (positionalArguments(call).some((a) => a.type === 'identifier' && /^(model|net|ddp_model|raw_model)$/.test(file.textOf(a)))) return 'forward';
  if (fn !== null && (fn.type === 'identifier' || fn.type === 'attribute')) {
    // Lower-case callables only: `Net()` constructs a model, `net(x)` runs it.
    if (/^[a-z_]/.test(method) && !NOT_FORWARD.test(method) && (FORWARD_NAME.test(method) || LOSS_NAME.test(method))) return 'forward';
    if (/loss|entropy|kl_div/.test(method)) {
      const name = calleeName(file, call);
      if (name !== null && FUNCTIONAL_LOSS.test(name)) return 'forward';
    }
  }
  return null;
}

/** `optimizer`, `opt_g`, `self.optimizers[i]`, `scaler`, `model_engine` — never `scheduler` or `env`. */
function isOptimizerLike(file: SourceFile, receiver: SyntaxNode): boolean {
  let n = receiver;
  while (n.type === 'subscript') {
    const value = childByField(n, 'value');
    if (value === null) return false;
    n = value;
  }
  let last: string;
  if (n.type === 'identifier') last = file.textOf(n);
  else if (n.type === 'attribute') {
    const attr = childByField(n, 'attribute');
    if (attr === null) return false;
    last = file.textOf(attr);
  } else if (n.type === 'call') {
    // `self.optimizers()` (Lightning manual optimisation) or `trainer.optimizer()`.
    const m = calleeMethod(file, n);
    return m !== null && /optim/i.test(m);
  } else return false;
  const lower = last.toLowerCase();
  if (lower.includes('sched') || lower.includes('env')) return false;
  return lower.includes('optim') || /^opt(_?[a-z0-9]{0,3})?$/.test(lower) || lower.includes('scaler') || lower.endsWith('engine');
}

/** The iterable a for-loop really walks, under enumerate()/tqdm() wrappers. */
export function loopIterable(file: SourceFile, loop: SyntaxNode): { iterable: SyntaxNode; enumerated: boolean } | null {
  if (loop.type !== 'for_statement') return null;
  let it = childByField(loop, 'right');
  let enumerated = false;
  while (it !== null && it.type === 'call') {
    const name = calleeName(file, it);
    // `metric_logger.log_every(data_loader, print_freq, header)`: torchvision's reference scripts.
    if (name === null || (!ITERABLE_WRAPPERS.has(name) && !name.endsWith('.log_every'))) break;
    if (name === 'enumerate') enumerated = true;
    it = positionalArguments(it)[0] ?? null;
  }
  return it === null ? null : { iterable: it, enumerated };
}

/** True when a for-loop walks batches: a loader, a batch list or iterator. */
export function iteratesBatches(file: SourceFile, loop: SyntaxNode): boolean {
  const found = loopIterable(file, loop);
  if (found === null) return false;
  const it = found.iterable;
  if (it.type === 'subscript') {
    // `dataloaders[phase]`: one loader picked from a collection.
    const value = childByField(it, 'value');
    return value !== null && (value.type === 'identifier' || value.type === 'attribute') && BATCH_SOURCE.test(file.textOf(value).replace(/s$/, ''));
  }
  if (it.type !== 'identifier' && it.type !== 'attribute') return false;
  // `for loader in loaders` walks loaders, not batches.
  return BATCH_SOURCE.test(file.textOf(it).replace(/\s+/g, '')) && !/loaders$/i.test(file.textOf(it));
}

const cache = new VersionMemo<StepAnalysis>('steps.analysis');

function analysis(file: SourceFile): StepAnalysis {
  return cache.get(file, (f) => new StepAnalysis(f));
}

export function isPerStepLoop(file: SourceFile, loop: SyntaxNode): boolean {
  return analysis(file).isPerStepLoop(loop);
}

export function nestedStepLoops(file: SourceFile, loop: SyntaxNode): SyntaxNode[] {
  return analysis(file).nestedStepLoops(loop);
}

export function containsStepLoop(file: SourceFile, loop: SyntaxNode): boolean {
  return analysis(file).containsStepLoop(loop);
}

/** True when the loop or a loop inside it takes optimisation steps. */
export function isTrainingLoop(file: SourceFile, loop: SyntaxNode): boolean {
  return analysis(file).trains(loop);
}

/** The nearest enclosing per-step loop of a node (not crossing defs), or null. */
export function enclosingStepLoop(file: SourceFile, node: SyntaxNode): SyntaxNode | null {
  for (const loop of enclosingLoops(node)) if (isPerStepLoop(file, loop)) return loop;
  return null;
}

/**
 * True when `node` runs only on some steps: under `except` (OOM recovery) or an `if` whose test picks
 * steps (`step % 100 == 0`, `step == 0`), between the node and `loop`.
 */
export function isOccasionalInLoop(file: SourceFile, node: SyntaxNode, loop: SyntaxNode): boolean {
  let child = node;
  for (let p = node.parent; p !== null && p !== loop; child = p, p = p.parent) {
    if (p.type === 'except_clause' || p.type === 'except_group_clause') return true;
    if ((p.type === 'if_statement' || p.type === 'elif_clause') && child.field === 'consequence') {
      const cond = childByField(p, 'condition');
      // `step % 100 == 0`, `num_updates == 0` (first step only), OOM recovery, `every_n_steps(...)`.
      if (cond !== null && isOccasionalCondition(file, cond)) return true;
    }
  }
  return false;
}
