// A collection of model outputs that the same function then uses on the device as a memory bank: the
// concatenated features multiplied with other features (`torch.mm(feature, feature_bank)` for a kNN
// monitor, `distmat.addmm_(1, -2, qf, gf.t())` for re-identification). Keeping it on the accelerator is the
// point there (the similarity matrix is computed on it), so MH012 asks for this as positive evidence against.
import { childByField, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import { keyOf, scopeOf } from './models';

/** Calls (by their last name) that compute similarities or distances between two sets of features. */
const SIMILARITY = new Set(['mm', 'matmul', 'bmm', 'cdist', 'addmm', 'addmm_', 'einsum', 'cosine_similarity']);
const CONCAT = /\b(cat|concat|concatenate|stack|vstack|hstack)\s*\(/;

function mentions(text: string, names: ReadonlySet<string>): boolean {
  for (const n of names) if (new RegExp(`(^|[^\\w.])${n.replace(/\./g, '\\.')}(?![\\w])`).test(text)) return true;
  return false;
}

/**
 * The nodes of a by-type list (in document order) that start in [from, to], in order: `after` below holds
 * only for those, and scanning the file's every call per loop was quadratic in a long file.
 */
function* between(nodes: readonly SyntaxNode[], from: number, to: number): Generator<SyntaxNode> {
  for (let i = firstStartingAtOrAfter(nodes, from); i < nodes.length && nodes[i].start <= to; i++) yield nodes[i];
}

/** In `scope`, after `loop`, `container` is concatenated (possibly renamed, transposed, normalised) and used in a similarity product. */
export function usedAsDeviceBank(file: SourceFile, scope: SyntaxNode, loop: SyntaxNode, container: string): boolean {
  const names = new Set([container]);
  const after = (n: SyntaxNode): boolean => n.start >= loop.end && n.end <= scope.end && scopeOf(n) === scope;
  let concatenated = false;
  for (const asg of between(file.nodesOfType('assignment'), loop.end, scope.end)) {
    if (!after(asg)) continue;
    const left = childByField(asg, 'left');
    const right = childByField(asg, 'right');
    if (left === null || right === null) continue;
    const text = file.textOf(right);
    if (!mentions(text, names)) continue;
    if (CONCAT.test(text)) concatenated = true;
    // `qf, gf = feats[:n], feats[n:]`: every name bound from the bank is the bank too.
    const targets = left.type === 'pattern_list' || left.type === 'tuple_pattern' ? left.children.filter((c) => c.named) : [left];
    for (const t of targets) {
      const key = keyOf(file, t);
      if (concatenated && key !== null) names.add(key);
    }
  }
  if (!concatenated) return false;
  for (const call of between(file.nodesOfType('call'), loop.end, scope.end)) {
    if (!after(call)) continue;
    const fn = childByField(call, 'function');
    const last = fn === null ? '' : file.textOf(fn.type === 'attribute' ? (childByField(fn, 'attribute') ?? fn) : fn);
    if (SIMILARITY.has(last) && mentions(file.textOf(childByField(call, 'arguments') ?? call), names)) return true;
  }
  for (const op of between(file.nodesOfType('binary_operator'), loop.end, scope.end)) {
    if (!after(op) || file.textOf(childByField(op, 'operator') ?? op) !== '@') continue;
    if (mentions(file.textOf(op), names)) return true;
  }
  return false;
}
