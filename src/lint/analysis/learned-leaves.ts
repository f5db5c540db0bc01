// Learned scalars that are not a module's parameters: `self.log_alpha = torch.zeros(1, requires_grad=True)`
// handed to its own optimizer (`Adam([self.log_alpha])`), as SAC's entropy temperature is. A value derived
// from one (`self.alpha = self.log_alpha.exp()`) carries autograd history; MH002 asks which keys these are.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { keywordArgument, positionalArguments } from './context';
import { calleeName, importSignature } from './imports';
import { keyOf } from './models';
import { NodeMemo, VersionMemo } from '../session';
import { walkSplittingFunctions, type FunctionSplitWalk } from './unitcache';
import { isTorchOptimizerName } from './vocabulary';

/** Calls that create a leaf tensor when asked to require grad. */
const PARAMETER = /(^|\.)Parameter$/;

const memo = new VersionMemo<ReadonlySet<string>>('learned-leaves');

/** What one statement (or one function body) contributes: keys bound to a new leaf, keys an optimizer lists. */
interface LeafParts {
  readonly created: string[];
  readonly listed: string[];
}

/** Per top-level statement and per function body, under the import signature (calleeName resolves through imports). */
const unitParts = new NodeMemo<LeafParts>('learned-leaves.unit');
const functionParts = new NodeMemo<LeafParts>('learned-leaves.function');
const statementParts = new NodeMemo<LeafParts>('learned-leaves.statement');

/**
 * Keys (`self.log_alpha`, `log_alpha`) bound to a tensor created with `requires_grad=True` (or an
 * `nn.Parameter`) and listed directly in an optimizer's parameters: tensors the training updates, so
 * anything computed from them outside no_grad has history.
 */
export function learnedLeaves(file: SourceFile): ReadonlySet<string> {
  return memo.get(file, compute);
}

/** Changes whenever the set of learned leaves does (for callers' caches). */
export function learnedLeavesSignature(file: SourceFile): string {
  return [...learnedLeaves(file)].sort().join(',');
}

/**
 * The file's answer from per-statement parts: each part reads only its own subtree and the imports, so an
 * edit re-walks the statement it changed (and, in a giant class, only the method it changed); what is
 * left per version is a union over the statements' short lists. A key is learned when some statement
 * creates it and some (maybe another) lists it, as when one walk over the file collected both.
 */
function compute(file: SourceFile): ReadonlySet<string> {
  const deps = importSignature(file);
  const walk = leafWalk(file);
  const parts = file.root.children.map((unit) => unitParts.get(file, unit, deps, () => walkSplittingFunctions(file, functionParts, deps, unit, walk)));
  const created = new Set<string>();
  for (const part of parts) for (const key of part.created) created.add(key);
  const out = new Set<string>();
  if (created.size === 0) return out;
  for (const part of parts) for (const key of part.listed) if (created.has(key)) out.add(key);
  return out;
}

/** The node types leafWalk acts on (read from the statement's by-type index). */
const LEAF_TYPES: readonly string[] = Object.freeze(['assignment', 'call']);

function leafWalk(file: SourceFile): FunctionSplitWalk<LeafParts> {
  return {
    order: 'document',
    types: LEAF_TYPES,
    // An assignment's or call's own subtree, resolved through the imports (in deps).
    statements: statementParts,
    fresh: () => ({ created: [], listed: [] }),
    merge: (acc, part) => {
      for (const key of part.created) acc.created.push(key);
      for (const key of part.listed) acc.listed.push(key);
    },
    visit: (n, acc) => {
      if (n.type === 'assignment') {
        const right = childByField(n, 'right');
        const key = keyOf(file, childByField(n, 'left'));
        if (key !== null && right?.type === 'call' && createsLeaf(file, right)) acc.created.push(key);
      } else if (buildsOptimizer(file, n)) {
        const params = positionalArguments(n)[0] ?? keywordArgument(file, n, 'params');
        if (params === null || params === undefined || (params.type !== 'list' && params.type !== 'tuple')) return;
        for (const item of params.children) {
          const key = item.named ? keyOf(file, item) : null;
          if (key !== null) acc.listed.push(key);
        }
      }
    },
  };
}

/** `optim.Adam([self.log_alpha], lr=lr)`: a call that builds a torch optimizer (from the leaves it is handed). */
export function buildsOptimizer(file: SourceFile, call: SyntaxNode): boolean {
  return call.type === 'call' && isTorchOptimizerName(calleeName(file, call) ?? '');
}

function createsLeaf(file: SourceFile, call: SyntaxNode): boolean {
  const callee = calleeName(file, call) ?? '';
  if (PARAMETER.test(callee)) return true;
  // `torch.tensor(0.0, device=d).requires_grad_()`: the in-place flag on a freshly created tensor
  const fn = childByField(call, 'function');
  const method = fn?.type === 'attribute' ? childByField(fn, 'attribute') : null;
  if (method !== null && file.textOf(method) === 'requires_grad_') {
    const flag = positionalArguments(call)[0] ?? keywordArgument(file, call, 'requires_grad');
    return flag === null || flag === undefined || file.textOf(flag) === 'True';
  }
  const flag = keywordArgument(file, call, 'requires_grad');
  return flag !== null && file.textOf(flag) === 'True';
}
