// Statistics of the update just taken (MH001): a function that performs one training update per call
// (`train_from_torch(batch)`, `learn()`, `train_step(batch)`: no loop around its backward/step) and, after
// the update, runs a model again on the very inputs the update was computed from, to log diagnostics
// (rlkit's TD3 recomputes `self.policy(obs)` for its `eval_statistics`). Such a forward's graph dies when
// the function returns, and on the same batch it holds no more than the update's own forward already did,
// so it adds no peak; labellers of real code do not want it reported. A prediction after a training
// *loop* (a script's final test forward) or on other inputs (`model(test_x)`) stays reported.
import { childByField, contains, type SourceFile, type SyntaxNode } from '../syntax';
import { enclosingLoops, positionalArguments } from './context';
import { forwardsFeedingBackward } from './backprop';
import { callsWithin } from './calls';
import { forwardReceiver, keyOf } from './models';
import { flowOf } from './flow';

/** A call's argument values (positional and keyword). */
function argumentValues(call: SyntaxNode): SyntaxNode[] {
  const args = positionalArguments(call);
  for (const a of childByField(call, 'arguments')?.children ?? []) {
    const value = a.type === 'keyword_argument' ? childByField(a, 'value') : null;
    if (value !== null) args.push(value);
  }
  return args;
}

/**
 * Whether the forward `call` in `region` (after the scope's training steps) is a statistic of the scope's
 * single update: `scope` is a function whose every backward/step before `region` sits in no loop of it,
 * and every argument of `call` is a name that some forward pass feeding that update's backward also took,
 * or the output of another such statistic in the region (`q = self.qf(obs, self.policy(obs))` in two lines).
 */
export function statisticOfSingleUpdate(file: SourceFile, scope: SyntaxNode, call: SyntaxNode, region: SyntaxNode, isStepOrBackward: (c: SyntaxNode) => boolean): boolean {
  if (scope.type !== 'function_definition') return false;
  const steps = callsWithin(file, scope).filter((c) => c.end <= region.start && isStepOrBackward(c));
  if (steps.length === 0 || steps.some((c) => enclosingLoops(c).some((l) => contains(scope, l)))) return false;
  const trainedOn = new Set<string>();
  for (const f of forwardsFeedingBackward(file, scope)) {
    if (f.start >= region.start) continue;
    for (const a of argumentValues(f)) {
      const key = keyOf(file, a);
      if (key !== null) trainedOn.add(key);
    }
  }
  const flow = flowOf(file, scope);
  const statistic = (forward: SyntaxNode, depth: number): boolean => {
    const args = argumentValues(forward);
    return args.length > 0 && args.every((a) => {
      const key = keyOf(file, a);
      if (key === null) return false;
      if (trainedOn.has(key)) return true;
      if (depth === 0) return false;
      const defs = flow.reachingDefs(key, a);
      return defs.length > 0 && defs.every((d) => contains(region, d.stmt) && d.value?.type === 'call' && forwardReceiver(file, d.value) !== null && statistic(d.value, depth - 1));
    });
  };
  return statistic(call, 2);
}
