// MH012 eval-outputs-on-device: an evaluation loop collects the model's outputs across batches while they
// are still on the accelerator (`preds.append(out.detach())`, `preds = torch.cat([preds, out])`,
// `results[name] = pred[j]`). Device memory then grows with the evaluation set, on top of what the model
// needs, until the loop ends; moving each batch's result to the host (`.cpu()`) keeps it flat.
import { childByField, contains, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import type { Rule, RuleFinding } from '../types';
import { enclosingLoops, positionalArguments } from '../analysis/context';
import { calleeMethod, calleeName } from '../analysis/imports';
import { callsByScope, computesGradients, forwardReceiver, isModelKey, keyOf, scopeOf } from '../analysis/models';
import { flowOf, type ScopeFlow } from '../analysis/flow';
import { gradOffAt } from '../analysis/gradstate';
import { callsNamed } from '../analysis/calls';
import { isTrainingLoop, iteratesBatches, loopIterable } from '../analysis/steps';
import { localCallee, MAX_HELPER_DEPTH } from '../analysis/indirect';
import { returnsOf } from '../analysis/values';
import { onEvaluationPass } from '../analysis/phase-branches';
import { inEvaluationBatchLoop } from '../analysis/eval-loops';
import { usedAsDeviceBank } from '../analysis/device-banks';
import { walksData } from '../analysis/data-loops';

/** Methods whose result lives on the host (or is a Python number). */
const TO_HOST = new Set(['cpu', 'item', 'tolist', 'numpy', '__array__']);
/** Attributes that are metadata, not the tensor's storage. */
const METADATA = new Set(['shape', 'dtype', 'device', 'ndim', 'is_cuda', 'requires_grad', 'grad_fn']);
const CONCAT = /^torch\.(cat|concat|concatenate|vstack|hstack|stack|row_stack|column_stack)$/;
const MAX_STEPS = 200;
const LOADER = /loader|(^|[^a-z])dl([^a-z]|$)|batches/i;
/**
 * A model's own methods that compute features from its inputs (`model.encode(x)`, CLIP's `encode_image`,
 * `net.extract_features(x)`, `model.get_embedding(x)`): forward passes under another name, whose result stays
 * on the module's device. Not `generate`/`predict`/`decode`, which often hand back tokens, text or arrays.
 */
const FEATURE_METHOD = /^(encode\w*|embed\w*|extract\w*|\w*_?features?|\w*_?embeddings?|get_\w*(?:feat|emb|repr|logit)\w*)$/;

/**
 * Whether `expr` may hold (a view of) a forward pass's output that is still on the device: followed
 * through names, tensor methods and torch functions, stopped by host conversions and by functions the
 * file does not show (a `decode(out)` may well return Python objects).
 */
function holdsDeviceOutput(file: SourceFile, flow: ScopeFlow, expr: SyntaxNode, depth = MAX_HELPER_DEPTH - 1): boolean {
  const stack = [expr];
  const seen = new Set<SyntaxNode>();
  let steps = 0;
  while (stack.length > 0 && steps++ < MAX_STEPS) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    switch (n.type) {
      case 'call': {
        if (forwardReceiver(file, n) !== null) return true;
        // A helper of this file (`out = self._predict(x)`): what it returns, in its own flow.
        const callee = depth > 0 ? localCallee(file, n) : null;
        if (callee !== null) {
          if (returnsDeviceOutput(file, callee, depth - 1)) return true;
          continue;
        }
        const fn = childByField(n, 'function');
        if (fn?.type === 'attribute') {
          const method = calleeMethod(file, n) ?? '';
          if (TO_HOST.has(method)) continue;
          const owner = keyOf(file, childByField(fn, 'object'));
          if (FEATURE_METHOD.test(method) && owner !== null && owner !== 'self' && isModelKey(file, owner)) return true;
          if (method === 'to' && /cpu|numpy/.test(file.textOf(childByField(n, 'arguments') ?? n))) continue;
          const name = calleeName(file, n) ?? '';
          if (name.startsWith('torch.')) pushArguments(n, stack);
          else if (!/^(numpy|np|scipy|pandas|math)\./.test(name)) {
            // A tensor method (`out.argmax(1)`, `out.detach()`, `out.max(1)`): follows its receiver.
            const object = childByField(fn, 'object');
            if (object !== null) stack.push(object);
            // A model's post-processing method fed its outputs (`model.detect_objects(locs, scores)`, defined
            // in another file): a module's methods compute on its device, so their result stays there.
            const receiver = keyOf(file, object);
            if (receiver !== null && isModelKey(file, receiver)) pushArguments(n, stack);
          }
        } else if (fn?.type === 'identifier' && (calleeName(file, n) ?? '').startsWith('torch.')) pushArguments(n, stack);
        continue;
      }
      case 'identifier':
      case 'attribute': {
        if (n.type === 'attribute' && METADATA.has(file.textOf(childByField(n, 'attribute') ?? n))) continue;
        const key = keyOf(file, n);
        const defs = key === null ? [] : flow.reachingDefs(key, n);
        if (defs.length === 0 && n.type === 'attribute') {
          const object = childByField(n, 'object');
          if (object !== null) stack.push(object); // `out.data`, `outputs.logits`
        }
        for (const d of defs) if (d.value !== null && (d.kind === 'assign' || d.kind === 'aug')) stack.push(d.value);
        continue;
      }
      case 'subscript':
        stack.push(childByField(n, 'value') ?? n);
        continue;
      case 'dictionary':
        // `{'preds': preds, 'target': y}`: the values are kept.
        for (const pair of n.children) if (pair.type === 'pair') stack.push(childByField(pair, 'value') ?? pair);
        continue;
      case 'parenthesized_expression':
      case 'binary_operator':
      case 'unary_operator':
      case 'tuple':
      case 'list':
      case 'expression_list':
      case 'conditional_expression':
        for (const c of n.children) if (c.named && c.type !== 'comment') stack.push(c);
        continue;
      default:
        continue;
    }
  }
  return false;
}

/** Some `return` of a helper of this file hands back a forward pass's output still on the device. */
function returnsDeviceOutput(file: SourceFile, fn: SyntaxNode, depth: number): boolean {
  const flow = flowOf(file, fn);
  return returnsOf(fn).some((r) => {
    const value = r.children.find((c) => c.named && c.type !== 'comment');
    return value !== undefined && holdsDeviceOutput(file, flow, value, depth);
  });
}

function pushArguments(call: SyntaxNode, stack: SyntaxNode[]): void {
  for (const a of positionalArguments(call)) stack.push(a);
}

interface Accumulation {
  /** Where the finding goes (the append call, the concatenating assignment, the subscript store). */
  readonly at: SyntaxNode;
  /** The collection that grows. */
  readonly container: SyntaxNode;
  /** What is added to it. */
  readonly value: SyntaxNode;
}

/** `preds.append(v)` / `preds.extend(v)`, `preds = torch.cat([preds, v])`, `out[name] = v`, from the file's indexes. */
function accumulations(file: SourceFile): Accumulation[] {
  const out: Accumulation[] = [];
  for (const method of ['append', 'extend']) {
    for (const call of callsNamed(file, method)) {
      const fn = childByField(call, 'function');
      const value = positionalArguments(call)[0];
      if (fn?.type === 'attribute' && value !== undefined) out.push({ at: call, container: childByField(fn, 'object') ?? fn, value });
    }
  }
  // `preds += [out]`, `preds += list(out)`: a list extended in place, like `.extend()` (`total += out.sum()`
  // on a number or tensor is a sum, not a collection, so only list operands count).
  for (const a of file.nodesOfType('augmented_assignment')) {
    const left = childByField(a, 'left');
    const right = childByField(a, 'right');
    if (left === null || right === null || file.textOf(childByField(a, 'operator') ?? a) !== '+=') continue;
    if (left.type !== 'identifier' && left.type !== 'attribute') continue;
    if (right.type === 'list') for (const item of right.children.filter((c) => c.named && c.type !== 'comment')) out.push({ at: a, container: left, value: item });
    else if (right.type === 'call' && calleeName(file, right) === 'list' && positionalArguments(right).length === 1) out.push({ at: a, container: left, value: positionalArguments(right)[0] });
  }
  for (const a of file.nodesOfType('assignment')) {
    const left = childByField(a, 'left');
    const assigned = childByField(a, 'right');
    if (left === null || assigned === null) continue;
    // `preds = out if preds is None else torch.cat((preds, out))`: the concatenating branch grows it.
    const right = assigned.type === 'conditional_expression' ? (assigned.children.find((c) => c.type === 'call' && CONCAT.test(calleeName(file, c) ?? '')) ?? assigned) : assigned;
    if (left.type === 'subscript') {
      const index = childByField(left, 'subscript');
      // `metrics["loss"] = v` overwrites one slot every batch; only varying keys grow.
      // A store through a slice (`feats[:, i*b:(i+1)*b] = out.t()`) copies into a tensor allocated before
      // the loop: its memory does not grow, and no view of the batch's output is kept.
      if (index !== null && !/^(string|integer|concatenated_string|unary_operator)$/.test(index.type) && !slicesInto(left)) out.push({ at: a, container: childByField(left, 'value') ?? left, value: right });
      // ...unless the slot is concatenated with itself: `tracker["z"] = torch.cat((tracker["z"], z), 0)` grows
      // the dict's entry, a collection created with the dict.
      else if (right.type === 'call' && CONCAT.test(calleeName(file, right) ?? '')) {
        const parts = positionalArguments(right)[0];
        const slot = file.textOf(left).replace(/\s+/g, '');
        const items = parts !== undefined && (parts.type === 'list' || parts.type === 'tuple') ? parts.children.filter((c) => c.named) : [];
        if (items.some((c) => file.textOf(c).replace(/\s+/g, '') === slot)) {
          for (const item of items) if (file.textOf(item).replace(/\s+/g, '') !== slot) out.push({ at: a, container: childByField(left, 'value') ?? left, value: item });
        }
      }
    } else if ((left.type === 'identifier' || left.type === 'attribute') && right.type === 'call' && CONCAT.test(calleeName(file, right) ?? '')) {
      const parts = positionalArguments(right)[0];
      const key = keyOf(file, left);
      if (parts === undefined || key === null || (parts.type !== 'list' && parts.type !== 'tuple')) continue;
      const items = parts.children.filter((c) => c.named);
      if (!items.some((c) => keyOf(file, c) === key)) continue;
      for (const item of items) if (keyOf(file, item) !== key) out.push({ at: a, container: left, value: item });
    }
  }
  return out;
}

/** The subscript's index is, or contains, a slice: a write into existing storage (a dict key cannot be one). */
function slicesInto(subscript: SyntaxNode): boolean {
  return subscript.children.some((c) => c.field === 'subscript' && (c.type === 'slice' || c.children.some((d) => d.type === 'slice')));
}

/** The batch loop the collection grows across: its container was created before that loop. */
function growingAcross(file: SourceFile, flow: ScopeFlow, acc: Accumulation): SyntaxNode | null {
  // `results["pred"].append(out)`: a list held in a fixed slot of a dict (or other container) created with it.
  const container = acc.container.type === 'subscript' && CONSTANT_INDEX.test(childByField(acc.container, 'subscript')?.type ?? '') ? (childByField(acc.container, 'value') ?? acc.container) : acc.container;
  const key = keyOf(file, container);
  if (key === null) return null;
  const created = flow.reachingDefs(key, container).filter((d) => d.kind === 'assign');
  if (created.length === 0) return null;
  for (const loop of enclosingLoops(acc.at)) {
    if (!iteratesBatches(file, loop) && !iteratesBoundLoader(file, flow, loop) && !iteratesLoaderIterator(file, loop) && !walksData(file, loop)) continue;
    if (resetInLoop(file, key, loop, acc.at)) return null;
    return created.every((d) => !contains(loop, d.stmt) || seedsEmpty(file, key, loop, d.stmt)) && created.some((d) => !contains(loop, d.stmt)) ? loop : null;
  }
  return null;
}

/**
 * The collection is rebound inside the batch loop to a value that does not contain it (`preds = None`,
 * `losses_host, preds_host = None, None` after moving them to the host every `eval_accumulation_steps`, as
 * Hugging Face's evaluation loop does): device memory is bounded by the batches between two resets, not by
 * the evaluation set. Reaching definitions stop at the loop's back edge, so later resets in the body are
 * looked up here; a first-batch seed (`if preds is None: preds = out`) is no reset.
 */
function resetInLoop(file: SourceFile, key: string, loop: SyntaxNode, at: SyntaxNode): boolean {
  const name = new RegExp(`(^|[^\\w.])${key.replace(/[.[\]]/g, '\\$&')}($|[^\\w])`);
  // Only the loop's assignments (by start, in document order): a scan of the file's per loop was quadratic in a long file.
  const assignments = file.nodesOfType('assignment');
  for (let i = firstStartingAtOrAfter(assignments, loop.start); i < assignments.length && assignments[i].start <= loop.end; i++) {
    const a = assignments[i];
    if (a === at || !contains(loop, a)) continue;
    const left = childByField(a, 'left');
    const right = childByField(a, 'right');
    if (left === null || right === null || name.test(file.textOf(right))) continue;
    const targets = left.type === 'pattern_list' || left.type === 'tuple_pattern' ? left.children.filter((c) => c.named) : [left];
    if (targets.some((t) => keyOf(file, t) === key) && !seedsEmpty(file, key, loop, a)) return true;
  }
  return false;
}

const CONSTANT_INDEX = /^(string|integer|concatenated_string)$/;

/**
 * `if preds is None: preds = out` (or `if not preds:`, `if len(preds) == 0:`, `if i == 0:`) inside the batch loop: the
 * first batch seeds the collection that the other batches concatenate to; it is no reset per batch.
 */
function seedsEmpty(file: SourceFile, key: string, loop: SyntaxNode, stmt: SyntaxNode): boolean {
  const name = key.replace(/[.[\]]/g, '\\$&');
  const emptyTest = new RegExp(`^(?:\\(\\s*)?(?:${name}\\s+is\\s+None|not\\s+${name}|len\\(\\s*${name}\\s*\\)\\s*==\\s*0|${name}\\s+is\\s+not\\s+None|${name}|\\w+\\s*==\\s*0)(?:\\s*\\))?$`);
  for (let p = stmt.parent; p !== null && p !== loop; p = p.parent) {
    if (p.type !== 'if_statement') continue;
    const condition = childByField(p, 'condition');
    if (condition !== null && emptyTest.test(file.textOf(condition).trim())) return true;
  }
  return false;
}

/**
 * `for x, y in dataloader['test_loader'].get_iterator():`: a project's own loader class walked through an
 * iterator method (no arguments) of an object named as a loader.
 */
function iteratesLoaderIterator(file: SourceFile, loop: SyntaxNode): boolean {
  const found = loopIterable(file, loop);
  const it = found?.iterable;
  if (it?.type !== 'call' || positionalArguments(it).length > 0) return false;
  const fn = childByField(it, 'function');
  if (fn?.type !== 'attribute' || !/^(get_)?iter(ator)?$|^__iter__$/.test(file.textOf(childByField(fn, 'attribute') ?? fn))) return false;
  const object = childByField(fn, 'object');
  return object !== null && LOADER.test(file.textOf(object));
}

/** `pbar = tqdm(test_loader)` then `for batch in pbar:`: the loop walks the loader bound to the name. */
function iteratesBoundLoader(file: SourceFile, flow: ScopeFlow, loop: SyntaxNode): boolean {
  const found = loopIterable(file, loop);
  const key = found === null ? null : keyOf(file, found.iterable);
  if (found === null || key === null) return false;
  return flow.reachingDefs(key, found.iterable).some((d) => d.kind === 'assign' && d.value !== null && LOADER.test(file.textOf(d.value)));
}

/**
 * The innermost loop around `at` runs a forward pass with autograd off (`with torch.no_grad(): preds =
 * model(x)` nested in the test loop's body, the append right after the block): that loop evaluates even
 * in a scope that trains elsewhere. Whether the loop itself trains is checked afterwards.
 */
function forwardsWithGradOff(file: SourceFile, scope: SyntaxNode, at: SyntaxNode): boolean {
  const loop = enclosingLoops(at)[0];
  if (loop === undefined) return false;
  return (callsByScope(file).get(scope)?.forwards ?? []).some((f) => contains(loop, f) && gradOffAt(file, f));
}

/**
 * Not memoised per scope: whether a loop trains (steps.ts) may depend on functions defined elsewhere in
 * the file, so it is asked afresh; the costly parts (flows, model facts, call indexes) are memoised by
 * their own modules, and the candidates come from the file's indexes (no walk per scope).
 */
function check(file: SourceFile): RuleFinding[] {
  const findings: RuleFinding[] = [];
  const seen = new Set<SyntaxNode>();
  for (const acc of accumulations(file)) {
    const scope = scopeOf(acc.at);
    if (scope === null || seen.has(acc.at)) continue;
    if (enclosingLoops(acc.at).length === 0) continue;
    // Evaluation: autograd is off there, nothing in the scope trains, or it runs only on the evaluation pass
    // of a shared train/eval loop (`if split == "valid":` while every step sits under `if split == "train":`).
    const evalPass = enclosingLoops(acc.at).some((l) => onEvaluationPass(file, acc.at, l));
    // ...or it is an evaluation batch loop of a function that trains elsewhere (a validation pass after the
    // epoch's training loop, left without no_grad: the outputs grow on the device all the same).
    if (!gradOffAt(file, acc.at) && computesGradients(file, scope) && !evalPass && !forwardsWithGradOff(file, scope, acc.at) && !inEvaluationBatchLoop(file, scope, acc.at)) continue;
    const flow = flowOf(file, scope);
    const loop = growingAcross(file, flow, acc);
    if (loop === null || (isTrainingLoop(file, loop) && !evalPass) || !holdsDeviceOutput(file, flow, acc.value)) continue;
    // A memory bank the function then multiplies with other features on the device (kNN, re-id distances).
    const key = keyOf(file, acc.container);
    if (key !== null && usedAsDeviceBank(file, scope, loop, key)) continue;
    seen.add(acc.at);
    findings.push(finding(file, acc));
  }
  return findings.sort((a, b) => a.start - b.start);
}

function finding(file: SourceFile, acc: Accumulation): RuleFinding {
  const container = file.textOf(acc.container);
  return {
    start: acc.at.start,
    end: acc.at.end,
    message:
      `\`${container}\` collects model outputs that are still on the accelerator, batch after batch: device memory grows with the ` +
      `evaluation set until the loop ends. Move each batch's result to the host first (\`.cpu()\`, or \`.item()\`/\`.tolist()\` for scalars) ` +
      'and concatenate there.',
  };
}

/**
 * Only scripts that put models on an accelerator. A device held by a configuration object counts
 * (`.to(args.device)`, `.to(cfg.DEVICE)`, `.to(self.config.device)`): a module of a project whose device is
 * chosen in its entry script never says `cuda` itself.
 */
const ACCELERATOR = /\.cuda\(|cuda|\.to\(\s*(?:[A-Za-z_]\w*\.)*device\b|accelerator|xla|\bmps\b/i;

export const evalOutputsOnDevice: Rule = {
  code: 'MH012',
  name: 'eval-outputs-on-device',
  severity: 'warning',
  summary: 'Evaluation outputs collected across batches while still on the accelerator: device memory grows with the evaluation set.',
  check(file) {
    return ACCELERATOR.test(file.text) ? check(file) : [];
  },
};

export const rule = evalOutputsOnDevice;
