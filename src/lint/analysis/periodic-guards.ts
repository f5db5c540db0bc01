// Guards that make a statement inside the per-step loop run only now and then: `if step % 100 == 0:`,
// `if step == 0:` (first step only), OOM recovery, and the same test moved into a predicate function
// (`if every_n_steps(state, args.gc_collect_freq):`, Meta Lingua). MH005 and MH006 share this notion so
// a cleanup under such a guard is "every N steps" for both, never "every step".
import { childByField, walk, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod } from './imports';
import { functionsNamed } from './values';

/** Text of a periodic, first-step-only or OOM-recovery test. */
const OCCASIONAL_TEXT = /%|[^=!<>]==[^=]|out of memory|OutOfMemory|\boom\b/i;
/**
 * Predicates defined in another file (`from utils import every_n_steps`) are judged by name: `every`,
 * `interval` and `period` name how often something runs, which a per-step condition never needs.
 */
const PERIODIC_NAME = /every|interval|period/i;

/** True when `cond` (an `if`/`elif` condition) holds only on some steps. */
export function isOccasionalCondition(file: SourceFile, cond: SyntaxNode): boolean {
  if (OCCASIONAL_TEXT.test(file.textOf(cond))) return true;
  let periodic = false;
  walk(cond, (n) => {
    if (periodic) return false;
    if (n.type !== 'call') return true;
    const name = calleeMethod(file, n);
    if (name !== null && (PERIODIC_NAME.test(name) || functionsNamed(file, name).some((fn) => testsModulo(fn)))) periodic = true;
    return !periodic;
  });
  return periodic;
}

/**
 * A function of this file whose body takes a remainder (`return step % freq == 0`): a predicate that is
 * true every N steps. String formatting (`'%d' % n`) is not a remainder.
 */
function testsModulo(fn: SyntaxNode): boolean {
  const body = childByField(fn, 'body');
  if (body === null) return false;
  let found = false;
  walk(body, (n) => {
    if (found) return false;
    if (n.type === 'binary_operator' && childByField(n, 'operator')?.type === '%') {
      const left = childByField(n, 'left');
      if (left !== null && left.type !== 'string' && left.type !== 'concatenated_string') found = true;
    }
    return !found;
  });
  return found;
}
