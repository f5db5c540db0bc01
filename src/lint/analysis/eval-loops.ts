// Evaluation loops recognised by what they walk or by the mode the model is in, whatever the grad mode:
// `for x, y in val_loader:` / `dataloaders['test']`, or a batch loop after `model.eval()` with no
// `.train()` in between. MH001 reads the loader names; MH012 reads both to see an evaluation loop left
// in a function that trains elsewhere (a validation pass after the epoch's training loop, no no_grad).
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { enclosingLoops, positionalArguments } from './context';
import { callsWithin } from './calls';
import { keyOf } from './models';
import { iteratesBatches } from './steps';

/** Names of evaluation data: `val_loader`, `test_dl`, `loader_val`, `dataloaders['val']`. */
export const EVAL_DATA: readonly RegExp[] = [
  /(?:^|[^a-z])(?:val|valid|validation|test|testing|eval|evaluation|dev|holdout)_?(?:loader|dataloader|dl|data|dataset|ds|set|iter|iterator|batches|gen|generator|samples|queue)s?(?![a-z])/i,
  /(?:^|[^a-z])(?:loader|dataloader|dl|ds)s?_(?:val|valid|test|eval|dev)(?![a-z])/i,
  /\[\s*['"](?:val|valid|validation|test|eval|dev)['"]\s*\]/,
];

/** The for-loop's iterable is named as evaluation data. */
export function iteratesEvalData(file: SourceFile, loop: SyntaxNode): boolean {
  if (loop.type !== 'for_statement') return false;
  const iterable = childByField(loop, 'right');
  return iterable !== null && EVAL_DATA.some((re) => re.test(file.textOf(iterable)));
}

/** The last `X.eval()` / `X.train(...)` call of `scope` before `offset` is an `.eval()` (on any module). */
function evalModeBefore(file: SourceFile, scope: SyntaxNode, offset: number): boolean {
  let evaluating = false;
  for (const call of callsWithin(file, scope)) {
    if (call.start >= offset) break;
    const fn = childByField(call, 'function');
    if (fn?.type !== 'attribute' || keyOf(file, childByField(fn, 'object')) === null) continue;
    const method = file.textOf(childByField(fn, 'attribute') ?? fn);
    const args = positionalArguments(call);
    if (method === 'eval' && args.length === 0) evaluating = true;
    else if (method === 'train' && args.length <= 1) evaluating = args.length === 1 && file.textOf(args[0]) === 'False';
  }
  return evaluating;
}

/**
 * The innermost batch loop around `node` in `scope` evaluates: it walks evaluation data, or the scope put
 * a model in eval mode before it and switched none back to training.
 */
export function inEvaluationBatchLoop(file: SourceFile, scope: SyntaxNode, node: SyntaxNode): boolean {
  const loop = enclosingLoops(node).find((l) => iteratesBatches(file, l));
  if (loop === undefined) return false;
  return iteratesEvalData(file, loop) || evalModeBefore(file, scope, loop.start);
}
