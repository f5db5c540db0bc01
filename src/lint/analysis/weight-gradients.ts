// `torch.autograd.grad(loss, weights)` with respect to a network's weights, not its inputs: MAML's inner
// loop (`grad = torch.autograd.grad(loss, net.parameters())`, then `fast_weights = [p - lr * g for ...]`,
// and again `torch.autograd.grad(loss, fast_weights)`) updates weights functionally, as an optimizer step
// would. It is no input gradient (an attack, a saliency map, a gradient penalty), so it says nothing about
// the other forward passes of the function; for MH001 it ends an iteration's update like `optimizer.step()`.
import { childByField, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import { keywordArgument, positionalArguments } from './context';
import { qualifiedName } from './imports';

const PARAMETERS = /\.(named_)?parameters\(\s*\)/;

/** `torch.autograd.grad(outputs, inputs)` whose inputs are weights: `.parameters()`, or a fast-weight list built from them. */
export function differentiatesWeights(file: SourceFile, call: SyntaxNode): boolean {
  const fn = childByField(call, 'function');
  const name = fn === null ? '' : (qualifiedName(file, fn) ?? '');
  if (name !== 'torch.autograd.grad' && name !== 'autograd.grad') return false;
  const inputs = positionalArguments(call)[1] ?? keywordArgument(file, call, 'inputs');
  if (inputs === null || inputs === undefined) return false;
  if (PARAMETERS.test(file.textOf(inputs))) return true;
  return inputs.type === 'identifier' && fastWeights(file, call, file.textOf(inputs));
}

/**
 * Every assignment to `name` in the function around `at` is built from `.parameters()` or from `name`
 * itself (`fast_weights = list(map(lambda p: p[1] - lr * p[0], zip(grad, fast_weights)))`), and one is
 * built from `.parameters()`: the list holds weights, however many inner steps updated them.
 */
function fastWeights(file: SourceFile, at: SyntaxNode, name: string): boolean {
  let scope: SyntaxNode | null = at.parent;
  while (scope !== null && scope.type !== 'function_definition' && scope.type !== 'module') scope = scope.parent;
  if (scope === null) return false;
  const self = new RegExp(`(^|[^\\w.])${name}\\b`);
  let fromParameters = false;
  // Only the scope's assignments (by start, in document order): a scan of the file's per question was quadratic in a long file.
  const assignments = file.nodesOfType('assignment');
  for (let i = firstStartingAtOrAfter(assignments, scope.start); i < assignments.length && assignments[i].start <= scope.end; i++) {
    const a = assignments[i];
    if (a.end > scope.end) continue;
    const left = childByField(a, 'left');
    const right = childByField(a, 'right');
    if (left?.type !== 'identifier' || file.textOf(left) !== name || right === null) continue;
    const text = file.textOf(right);
    if (PARAMETERS.test(text)) fromParameters = true;
    else if (!self.test(text)) return false;
  }
  return fromParameters;
}
