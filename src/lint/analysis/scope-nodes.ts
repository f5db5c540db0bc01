// The nodes of a given type in one scope (a function body, or the module's own code), read from the
// mirror's per-statement by-type index instead of walking the scope: rules ask this per scope and per
// type set several times in one lint (MH002 three times, MH004, consumers), and each walk read every
// node's children. A function's lists are kept on its node (purely syntactic: no deps), so after an
// edit only the edited function's lists are rebuilt.
import { firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import { isDefinition, moduleCode, NodeMemo, VersionMemo } from '../session';

/** Per function node: its in-scope nodes by type, filled type by type as rules ask. */
const functionLists = new NodeMemo<Map<string, readonly SyntaxNode[]>>('scopeNodes.function');
/** The module's own code, per version and type. */
const moduleLists = new VersionMemo<readonly SyntaxNode[]>('scopeNodes.module');

/** The top-level statement holding `node` (the root's child on its parent chain). */
function unitOf(node: SyntaxNode): SyntaxNode {
  let n = node;
  while (n.parent !== null && n.parent.type !== 'module') n = n.parent;
  return n;
}

/**
 * Whether `node` belongs to function `fn`'s own scope: under its body, with no definition (def, class,
 * decorated definition) in between. This is what a walk of the body that skips definitions visits.
 */
function inFunctionScope(node: SyntaxNode, fn: SyntaxNode): boolean {
  let child = node;
  for (let p = node.parent; p !== null; child = p, p = p.parent) {
    if (p === fn) return child.field === 'body';
    if (isDefinition(p)) return false;
  }
  return false;
}

/** Whether `node`, inside the non-definition top-level statement `unit`, has no definition above it. */
function inModuleScope(node: SyntaxNode, unit: SyntaxNode): boolean {
  for (let p = node.parent; p !== null && p !== unit; p = p.parent) if (isDefinition(p)) return false;
  return true;
}

/** The nodes of `type` whose nearest scope is `scope`, in document order (definitions themselves excluded). */
export function scopeNodesOfType(file: SourceFile, scope: SyntaxNode, type: string): readonly SyntaxNode[] {
  if (scope.type === 'module') {
    return moduleLists.keyed(file, type, () => {
      const out: SyntaxNode[] = [];
      for (const unit of moduleCode(file)) for (const n of file.nodesOfTypeInUnit(unit, type)) if (!isDefinition(n) && inModuleScope(n, unit)) out.push(n);
      return out;
    });
  }
  const lists = functionLists.get(file, scope, '', () => new Map());
  let list = lists.get(type);
  if (list === undefined) {
    const all = file.nodesOfTypeInUnit(unitOf(scope), type);
    const out: SyntaxNode[] = [];
    // The unit's list is in document order, so sorted by start: the scope's nodes lie in its range
    // (a zero-width node may sit at its end: `<=`, and inFunctionScope decides).
    for (let i = firstStartingAtOrAfter(all, scope.start); i < all.length && all[i].start <= scope.end; i++) {
      const n = all[i];
      if (!isDefinition(n) && inFunctionScope(n, scope)) out.push(n);
    }
    lists.set(type, (list = out));
  }
  return list;
}

/**
 * Document (pre-)order between two nodes of one tree: by start, then the longer (an ancestor) first;
 * nodes of equal range are ordered by depth (the ancestor first).
 */
export function beforeInDocument(a: SyntaxNode, b: SyntaxNode): boolean {
  if (a.start !== b.start) return a.start < b.start;
  if (a.end !== b.end) return a.end > b.end;
  for (let p = b.parent; p !== null; p = p.parent) if (p === a) return true;
  return false;
}

/**
 * The nodes of the given types whose nearest scope is `scope` (nested defs and classes excluded,
 * lambdas included), in document order: what a walk of the scope's body that skips definitions visits.
 */
export function nodesInScope(file: SourceFile, scope: SyntaxNode, types: ReadonlySet<string>): readonly SyntaxNode[] {
  const lists: (readonly SyntaxNode[])[] = [];
  for (const type of types) {
    const list = scopeNodesOfType(file, scope, type);
    if (list.length > 0) lists.push(list);
  }
  if (lists.length === 0) return [];
  if (lists.length === 1) return lists[0];
  // Merge the per-type lists (each in document order) into one.
  const out: SyntaxNode[] = [];
  const at = lists.map(() => 0);
  for (;;) {
    let best = -1;
    for (let k = 0; k < lists.length; k++) {
      if (at[k] < lists[k].length && (best < 0 || beforeInDocument(lists[k][at[k]], lists[best][at[best]]))) best = k;
    }
    if (best < 0) return out;
    out.push(lists[best][at[best]++]);
  }
}

/** Whether `n` is in `owner`'s subtree (`owner` itself included). */
export function inSubtree(n: SyntaxNode, owner: SyntaxNode): boolean {
  // Ranges nest or are disjoint, so a node strictly inside the owner's range is a descendant; only a
  // node at its edges (a zero-width node, an ancestor of the same range) needs the parent chain.
  if (n.start > owner.start && n.end < owner.end) return true;
  for (let p: SyntaxNode | null = n; p !== null; p = p.parent) if (p === owner) return true;
  return false;
}

/**
 * The nodes of `type` anywhere in a scope, nested definitions included: a function's whole subtree, or
 * every statement of the module's own code. Unit lists in document order; not memoised (a slice).
 */
export function subtreeNodesOfType(file: SourceFile, scope: SyntaxNode, type: string): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  if (scope.type === 'module') {
    for (const unit of moduleCode(file)) for (const n of file.nodesOfTypeInUnit(unit, type)) out.push(n);
    return out;
  }
  const all = file.nodesOfTypeInUnit(unitOf(scope), type);
  for (let i = firstStartingAtOrAfter(all, scope.start); i < all.length && all[i].start <= scope.end; i++) if (inSubtree(all[i], scope)) out.push(all[i]);
  return out;
}

/**
 * The order in which a stack walk that pushes children in order (so pops the last child first) visits
 * two nodes: an ancestor first, otherwise the one later in the document (the reverse of post-order).
 */
export function beforeInReverseWalk(a: SyntaxNode, b: SyntaxNode): number {
  if (a.end !== b.end) return b.end - a.end;
  if (a.start !== b.start) {
    // Same end, different starts: the longer one contains the other, unless the shorter is a zero-width
    // node (an error tree's MISSING token) placed right after it, outside it: then it comes later in the
    // document and is visited first.
    const zeroWidth = a.start === a.end ? a : b.start === b.end ? b : null;
    if (zeroWidth === null) return a.start - b.start;
    const other = zeroWidth === a ? b : a;
    // An ancestor ending where it does is reached through nodes that all end there too: a short walk.
    for (let p = zeroWidth.parent; p !== null && p.end === zeroWidth.end; p = p.parent) if (p === other) return other === a ? -1 : 1;
    return b.start - a.start;
  }
  if (a === b) return 0;
  for (let p = b.parent; p !== null; p = p.parent) if (p === a) return -1;
  return 1;
}
