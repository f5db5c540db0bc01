// The by-type index of a rebuilt top-level statement, spliced from the old statement's index instead
// of re-walking the statement. A one-character edit inside one method of a giant class rebuilds only
// the path from the class to the edit; the rest of the class is reused as whole old subtrees, whose
// entries in each type's list are contiguous runs of the old list (pre-order keeps a subtree's nodes
// together), so the new lists are those runs sliced out and joined with the few new nodes. Walking
// the whole statement per edit (a Map lookup per node) was half of the document update on a 6k-line
// class.
import { firstStartingAtOrAfter, type NodeIndex, type SyntaxNode } from './syntax';

/** One piece of the rebuilt statement's pre-order, in order. */
export type IndexSegment =
  /** A new node on its own (its children follow as later segments). */
  | { readonly kind: 'node'; readonly node: SyntaxNode }
  /** A freshly copied subtree with its own index. */
  | { readonly kind: 'fresh'; readonly index: NodeIndex }
  /**
   * Old sibling subtrees `first`..`last` (consecutive children of one old node), reused whole; their
   * offsets must still be the old statement's (read before they are shifted).
   */
  | { kind: 'reused'; readonly first: SyntaxNode; last: SyntaxNode };

/** Appends a reused subtree; joins it to the previous segment when that ends with its old previous sibling. */
export function pushReused(segments: IndexSegment[], node: SyntaxNode, previousOldSibling: SyntaxNode | null): void {
  const last = segments[segments.length - 1];
  if (previousOldSibling !== null && last !== undefined && last.kind === 'reused' && last.last === previousOldSibling) last.last = node;
  else segments.push({ kind: 'reused', first: node, last: node });
}

/**
 * The index of the rebuilt statement, from the old statement's index (`old`, offsets unshifted) and
 * the segments of its new pre-order; null when a reused subtree is zero-width (its run cannot be told
 * from offsets), and the caller must walk the statement.
 */
export function spliceIndex(old: NodeIndex, segments: readonly IndexSegment[]): NodeIndex | null {
  // Types that a new node or a copied subtree adds to; the others only lose the nodes of replaced subtrees.
  const added = new Set<string>();
  for (const s of segments) {
    if (s.kind === 'node') added.add(s.node.type);
    else if (s.kind === 'fresh') for (const t of s.index.keys()) added.add(t);
  }
  const out: NodeIndex = new Map();
  for (const [type, oldList] of old) {
    if (added.has(type)) continue;
    // Only reused runs: when they tile the old list, it is kept as it is (lists are never mutated).
    let covered = 0;
    let tiles = true;
    const runs: number[] = [];
    for (const s of segments) {
      if (s.kind !== 'reused') continue;
      const from = runStart(oldList, s.first);
      const to = runEnd(oldList, s.last);
      if (from === null || to === null) return null;
      if (from === to) continue;
      if (from !== covered) tiles = false;
      covered = to;
      runs.push(from, to);
    }
    if (tiles && covered === oldList.length) out.set(type, oldList);
    else {
      const list: SyntaxNode[] = [];
      for (let k = 0; k < runs.length; k += 2) for (let i = runs[k]; i < runs[k + 1]; i++) list.push(oldList[i]);
      if (list.length > 0) out.set(type, list);
    }
  }
  for (const type of added) {
    const oldList = old.get(type);
    const list: SyntaxNode[] = [];
    for (const s of segments) {
      if (s.kind === 'node') {
        if (s.node.type === type) list.push(s.node);
      } else if (s.kind === 'fresh') {
        const part = s.index.get(type);
        if (part !== undefined) for (const n of part) list.push(n);
      } else if (oldList !== undefined) {
        const from = runStart(oldList, s.first);
        const to = runEnd(oldList, s.last);
        if (from === null || to === null) return null;
        for (let i = from; i < to; i++) list.push(oldList[i]);
      }
    }
    if (list.length > 0) out.set(type, list);
  }
  return out;
}

/**
 * Index in `list` (pre-order, so sorted by start) of the first node of `subtree`'s run; null for a
 * zero-width subtree (nodes after it may start where it starts and ends).
 */
function runStart(list: readonly SyntaxNode[], subtree: SyntaxNode): number | null {
  if (subtree.start === subtree.end) return null;
  let i = firstStartingAtOrAfter(list, subtree.start);
  // Nodes starting where the subtree starts are its ancestors and zero-width nodes before it (both
  // earlier in pre-order), then itself and its descendants.
  while (i < list.length && list[i].start === subtree.start && !isInside(list[i], subtree)) i++;
  return i;
}

/** Index in `list` just past the run of `subtree`; null for a zero-width subtree. */
function runEnd(list: readonly SyntaxNode[], subtree: SyntaxNode): number | null {
  if (subtree.start === subtree.end) return null;
  let i = firstStartingAtOrAfter(list, subtree.end);
  // Only a zero-width node may start where the subtree ends and still be inside it (an empty block
  // at the end of a def); such nodes come before any that follow the subtree.
  while (i < list.length && list[i].start === subtree.end && list[i].end === subtree.end && isInside(list[i], subtree)) i++;
  return i;
}

/** Whether `n` is `subtree` or one of its descendants (every node between them lies within its range). */
function isInside(n: SyntaxNode, subtree: SyntaxNode): boolean {
  for (let x: SyntaxNode | null = n; x !== null && x.start >= subtree.start && x.end <= subtree.end; x = x.parent) {
    if (x === subtree) return true;
  }
  return false;
}
