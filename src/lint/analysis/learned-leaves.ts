// Learned scalars that are not a module's parameters: `self.log_alpha = torch.zeros(1, requires_grad=True)`
// handed to its own optimizer (`Adam([self.log_alpha])`), as SAC's entropy temperature is. A value derived
// from one (`self.alpha = self.log_alpha.exp()`) carries autograd history; MH002 asks which keys these are.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { keywordArgument, positionalArguments } from './context';
import { calleeName } from './imports';
import { keyOf } from './models';
import { VersionMemo } from '../session';

/** torch.optim classes (by their last name: `optim.Adam`, `torch.optim.Adam`, `Adam`). */
const OPTIMIZERS = /(^|\.)(Adam|AdamW|Adamax|SparseAdam|NAdam|RAdam|SGD|RMSprop|Adagrad|Adadelta|ASGD|Rprop|LBFGS)$/;
/** Calls that create a leaf tensor when asked to require grad. */
const PARAMETER = /(^|\.)Parameter$/;

const memo = new VersionMemo<ReadonlySet<string>>('learned-leaves');

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

function compute(file: SourceFile): ReadonlySet<string> {
  const created = new Set<string>();
  for (const a of file.nodesOfType('assignment')) {
    const right = childByField(a, 'right');
    const key = keyOf(file, childByField(a, 'left'));
    if (key !== null && right?.type === 'call' && createsLeaf(file, right)) created.add(key);
  }
  if (created.size === 0) return created;
  const out = new Set<string>();
  for (const call of file.nodesOfType('call')) {
    if (!OPTIMIZERS.test(calleeName(file, call) ?? '')) continue;
    const params = positionalArguments(call)[0] ?? keywordArgument(file, call, 'params');
    if (params === null || params === undefined || (params.type !== 'list' && params.type !== 'tuple')) continue;
    for (const item of params.children) {
      const key = item.named ? keyOf(file, item) : null;
      if (key !== null && created.has(key)) out.add(key);
    }
  }
  return out;
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
