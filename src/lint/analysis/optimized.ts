// Which models' parameters something may optimize: `opt = Adam(model.parameters())` binds `opt` to
// `model`; a `.parameters()` handed to any call other than a counting/clipping/zipping helper may feed
// an optimizer. Iterating them (`for p in target.parameters(): p.data.copy_(...)`) optimizes nothing.
// MH010 asks which model an optimizer steps; MH011 asks whether a model is ever optimized.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { callsNamed } from './calls';
import { keyOf } from './models';
import { combine } from './unitcache';
import { VersionMemo } from '../session';

export interface OptimizedModels {
  /** Model keys whose parameters may reach an optimizer (`self` excluded: see selfOptimizing). */
  readonly optimized: ReadonlySet<string>;
  /** Classes that hand `self.parameters()` to an optimizer (a LightningModule, an agent network with its own optimizer). */
  readonly selfOptimizing: ReadonlySet<string>;
  /** Assigned key (`d_optimizer`, `self.optG`) -> the models whose parameters its value was built from. */
  readonly byOptimizer: ReadonlyMap<string, ReadonlySet<string>>;
}

/** Calls that read parameters without optimizing them (clipping is not one: it means the gradients are used). */
const READ_ONLY_CALLS = /^(sum|len|print|zip|enumerate|list|tuple|numel|count_parameters|parameters_to_vector|any|all|next|iter|map|filter|sorted|max|min|copy_params|soft_update|hard_update|update_target|polyak_update)$/;
const COMPREHENSIONS = new Set(['list_comprehension', 'generator_expression', 'set_comprehension', 'dictionary_comprehension']);

const memo = new VersionMemo<OptimizedModels>('optimized.models');

export function optimizedModels(file: SourceFile): OptimizedModels {
  return memo.get(file, compute);
}

/** Changes whenever the optimized models (or optimizer bindings) change. */
export function optimizedSignature(file: SourceFile): string {
  return combine(file, 'optimized', () => {
    const o = optimizedModels(file);
    return [[...o.optimized].sort().join(','), [...o.selfOptimizing].sort().join(','), [...o.byOptimizer].map(([k, v]) => `${k}=${[...v].sort().join('+')}`).sort().join(',')];
  });
}

function compute(file: SourceFile): OptimizedModels {
  const optimized = new Set<string>();
  const selfOptimizing = new Set<string>();
  const byOptimizer = new Map<string, Set<string>>();
  for (const method of ['parameters', 'named_parameters']) {
    for (const call of callsNamed(file, method)) {
      const fn = childByField(call, 'function');
      if (fn?.type !== 'attribute') continue;
      const model = keyOf(file, childByField(fn, 'object'));
      if (model === null || !mayReachOptimizer(file, call)) continue;
      // `params = net.named_parameters()` then `dict(params)`: (name, tensor) pairs are for copying, not for an optimizer.
      if (method === 'named_parameters' && call.parent?.type === 'assignment') continue;
      if (model === 'self') {
        const cls = enclosingClassName(file, call);
        if (cls !== null) selfOptimizing.add(cls);
      } else optimized.add(model);
      const target = assignedKey(file, call);
      if (target === null) continue;
      let models = byOptimizer.get(target);
      if (models === undefined) byOptimizer.set(target, (models = new Set()));
      models.add(model);
    }
  }
  return { optimized, selfOptimizing, byOptimizer };
}

/** False when the parameters are only iterated, counted, clipped or zipped (soft target updates). */
function mayReachOptimizer(file: SourceFile, call: SyntaxNode): boolean {
  let child = call;
  for (let p = call.parent; p !== null; child = p, p = p.parent) {
    if (p.type === 'for_statement') return child.field !== 'right';
    if (p.type === 'for_in_clause' && child.field === 'right') {
      // `[p for p in m.parameters() if p.requires_grad]` may still be an optimizer's argument.
      continue;
    }
    if (p.type === 'call') {
      const fn = childByField(p, 'function');
      const last = fn === null ? '' : file.textOf(fn.type === 'attribute' ? (childByField(fn, 'attribute') ?? fn) : fn);
      if (!READ_ONLY_CALLS.test(last)) return true;
      // `list(m.parameters())`, `zip(...)`: look at what the result feeds.
      if (last !== 'list' && last !== 'tuple' && last !== 'iter' && last !== 'filter') return false;
    }
    if (p.type === 'expression_statement' || p.type === 'block' || p.type === 'module') return p.type === 'expression_statement' ? false : true;
    if (p.type === 'assignment' || p.type === 'augmented_assignment' || p.type === 'return_statement' || p.type === 'keyword_argument' || p.type === 'pair') return true;
    if (COMPREHENSIONS.has(p.type) || p.type === 'argument_list' || p.type === 'parenthesized_expression' || p.type === 'binary_operator' || p.type === 'list' || p.type === 'tuple' || p.type === 'dictionary') continue;
  }
  return true;
}

/** `opt` in `opt = Adam(model.parameters())` / `self.opt_d = optim.SGD([{'params': D.parameters()}])`. */
function assignedKey(file: SourceFile, call: SyntaxNode): string | null {
  for (let p = call.parent; p !== null; p = p.parent) {
    if (p.type === 'assignment') return keyOf(file, childByField(p, 'left'));
    if (p.type === 'expression_statement' || p.type === 'block' || p.type === 'function_definition' || p.type === 'lambda') return null;
  }
  return null;
}

/** The name of the class a node is in (its nearest enclosing class), or null. */
export function enclosingClassName(file: SourceFile, node: SyntaxNode): string | null {
  for (let p = node.parent; p !== null; p = p.parent) {
    if (p.type === 'class_definition') {
      const name = childByField(p, 'name');
      return name === null ? null : file.textOf(name);
    }
  }
  return null;
}
