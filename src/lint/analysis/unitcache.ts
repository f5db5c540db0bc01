// Helpers over the session's memos (see ../session.ts) shared by the analyses and rules: signatures
// of file-wide inputs, findings kept relative to a node, per-scope checks reused across edits.
// Positions must never be cached as absolute offsets: keep nodes, or offsets relative to a node.
import { firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import { beforeInDocument, inSubtree } from './scope-nodes';
import type { Fix, RuleFinding } from '../types';
import { importSignature } from './imports';
import { isDefinition, ModuleCodeMemo, moduleCode, NodeMemo, VersionMemo } from '../session';

export { importSignature, isDefinition, moduleCode };

/** The nodes of `type` in one top-level statement of `file`, in document order (like SourceFile.nodesOfType). */
export function unitNodesOfType(file: SourceFile, unit: SyntaxNode, type: string): readonly SyntaxNode[] {
  return file.nodesOfTypeInUnit(unit, type);
}

/** The file's top-level statements (the units PythonDocument reuses across edits). */
export function unitsOf(file: SourceFile): readonly SyntaxNode[] {
  return file.root.children;
}

/**
 * The identity of the outermost function around `node` (its decorated definition when it has decorators),
 * or of its top-level statement when no function holds it, as a token for `deps`. While that node is
 * reused, everything between it and `node` is unchanged (the document reuses whole subtrees only), so a
 * per-reader memo (NodeMemo.getTracked) on a node inside a method of a giant class that reads the method's
 * parameters, decorators or enclosing blocks stays right without a stamp that moves on every edit.
 */
export function enclosingPieceToken(file: SourceFile, node: SyntaxNode): string {
  let piece = node;
  let fn: SyntaxNode | null = null;
  for (let p: SyntaxNode | null = node; p !== null && p.type !== 'module'; p = p.parent) {
    piece = p;
    if (p.type === 'function_definition') fn = p.parent?.type === 'decorated_definition' ? p.parent : p;
  }
  return `@${file.session.nodeId(fn ?? piece)}`;
}

/**
 * Where a per-reader memo on `node` is anchored inside its outermost function: the statement of that
 * function's body on the path to `node` (`piece`), so that an edit elsewhere in a giant `def main():`
 * leaves the memo's anchor alone. `token` (for `deps`) names the piece and the function's header: every
 * child of the definition but its body (name, parameters, return type) and its decorators, by node
 * identity (the document reuses a header an edit did not touch). While the token is equal, everything
 * on the path from the function to `node` is unchanged except the function's body block, whose other
 * statements a reader must declare (NodeMemo.getTrackedWithin checks the ones its index reads reached).
 * `body` is that block; null when `node` is in no function body (a module-level statement, or the
 * function's header), and then the token is enclosingPieceToken's.
 */
export function enclosingPiece(file: SourceFile, node: SyntaxNode): { readonly token: string; readonly body: SyntaxNode | null } {
  let fn: SyntaxNode | null = null;
  let piece: SyntaxNode | null = null;
  // Walking up: `child` is p's child on the path, `grandchild` that child's (null at the start).
  let grandchild: SyntaxNode | null = null;
  let child = node;
  for (let p = node.parent; p !== null && p.type !== 'module'; grandchild = child, child = p, p = p.parent) {
    if (p.type !== 'function_definition') continue;
    // The outermost function decides: each one met on the way up replaces the last.
    fn = p;
    piece = child.type === 'block' && child.field === 'body' ? grandchild : null;
  }
  if (fn === null || piece === null) return { token: enclosingPieceToken(file, node), body: null };
  const session = file.session;
  const ids: number[] = [session.nodeId(piece)];
  for (const c of fn.children) if (c !== piece.parent) ids.push(session.nodeId(c));
  const decorated = fn.parent?.type === 'decorated_definition' ? fn.parent : null;
  if (decorated !== null) for (const c of decorated.children) if (c !== fn) ids.push(session.nodeId(c));
  return { token: `@${ids.join('.')}`, body: piece.parent };
}

/** A short token for a long signature (interned in the file's session). */
export function intern(file: SourceFile, signature: string): string {
  return file.session.intern(signature);
}

const combined = new VersionMemo<string>('combine');

/**
 * The interned combination of several signatures, memoized per file version and name; in a one-shot
 * session (no later version to tell apart) the parts are not computed (AnalysisSession.versionToken).
 */
export function combine(file: SourceFile, name: string, parts: () => readonly string[]): string {
  return combined.keyed(file, name, () => file.session.versionToken(name, () => parts().join('|')));
}

/** A finding stored relative to an anchor node's start, so it stays right when the node shifts. */
export interface RelativeFinding {
  readonly anchor: SyntaxNode;
  readonly start: number;
  readonly end: number;
  readonly message: string;
  readonly fix: Fix | null;
}

export function toRelative(anchor: SyntaxNode, findings: readonly RuleFinding[]): RelativeFinding[] {
  const base = anchor.start;
  return findings.map((f) => ({
    anchor,
    start: f.start - base,
    end: f.end - base,
    message: f.message,
    fix: f.fix ? { title: f.fix.title, edits: f.fix.edits.map((e) => ({ start: e.start - base, end: e.end - base, newText: e.newText })) } : null,
  }));
}

export function fromRelative(findings: readonly RelativeFinding[]): RuleFinding[] {
  return findings.map((f) => {
    const base = f.anchor.start;
    return {
      start: f.start + base,
      end: f.end + base,
      message: f.message,
      fix: f.fix ? { title: f.fix.title, edits: f.fix.edits.map((e) => ({ start: e.start + base, end: e.end + base, newText: e.newText })) } : null,
    };
  });
}

/** Every scope of the file: its function definitions, then the module itself. */
export function scopesOf(file: SourceFile): SyntaxNode[] {
  return [...file.nodesOfType('function_definition'), file.root];
}

/**
 * Findings anchored to the last top-level statement starting at or before them (the one holding them),
 * so they stay right when statements shift. A file without statements has no module findings.
 */
function toRelativeByUnit(file: SourceFile, findings: readonly RuleFinding[]): RelativeFinding[] {
  const units = file.root.children;
  return findings.flatMap((f) => {
    // Binary search (statements are in document order): a scan per finding was quadratic in a long script.
    let lo = 0;
    let hi = units.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (units[mid].start <= f.start) lo = mid + 1;
      else hi = mid;
    }
    return toRelative(units[lo - 1] ?? units[0] ?? file.root, [f]);
  });
}

/**
 * Where a per-scope check keeps its findings: on each function node, and for the module's own code.
 * `tracked`: the check reads file-wide indexes (callsNamed, functionsNamed...) and its entries are reused
 * while the keys it read keep their lists, the statement of the outermost function's body holding the
 * scope and that function's header are the same nodes (enclosingPiece), and so are the other statements
 * of that body its reads reached (NodeMemo.getTrackedWithin), instead of carrying the indexes' stamps in
 * the signature. Such a check must read the enclosing function's other statements through the indexes
 * only, and what it reads of the enclosing functions' grad state must be in `signature`.
 */
export class ScopeFindingsMemo {
  readonly functions: NodeMemo<RelativeFinding[]>;
  readonly module: ModuleCodeMemo<RelativeFinding[]>;
  constructor(
    readonly name: string,
    readonly tracked = false,
  ) {
    this.functions = new NodeMemo(`${name}.functions`);
    this.module = new ModuleCodeMemo(`${name}.module`);
    Object.freeze(this);
  }
}

/**
 * Runs a per-scope check with reuse across edits: function scopes' findings are cached on the function
 * node, the module scope's while its own code is unchanged (see ModuleCodeCache), both under
 * `signature`, which must cover every file-wide input of the check. `applies`, when given, is a cheap
 * test of this version's facts that is false only for scopes whose check finds nothing: those are
 * skipped without a memo entry (in a giant class most scopes have nothing to check, and keying each of
 * them cost more than the test).
 */
export function checkScopes(
  file: SourceFile,
  cache: ScopeFindingsMemo,
  signature: string,
  check: (scope: SyntaxNode) => RuleFinding[],
  scopeDeps?: (scope: SyntaxNode) => string,
  applies?: (scope: SyntaxNode) => boolean,
): RuleFinding[] {
  const out: RuleFinding[] = [];
  // A reused node keeps its text, not its column: a fix that re-indents or decorates reads the indentation
  // before the node (outside it), so the findings of a scope are kept only while its code's columns are too.
  const column = (n: SyntaxNode): number => n.start - file.lineStarts[file.lineOf(n.start)];
  for (const scope of scopesOf(file)) {
    if (applies !== undefined && !applies(scope)) continue;
    if (file.session.oneShot) {
      // One version: no scope is checked twice, so neither its deps nor a memo entry are worth computing
      // (the findings take the same relative round trip as a memoised check).
      out.push(...fromRelative(scope.type === 'module' ? toRelativeByUnit(file, check(scope)) : toRelative(scope, check(scope))));
      continue;
    }
    // scopeDeps: inputs that differ per scope (the helpers it reaches), so an edit re-checks only the scopes that read it.
    const columns = scope.type === 'module' ? moduleColumns.get(file, () => moduleCode(file).map(column).join(',')) : String(column(scope));
    const deps = `${scopeDeps === undefined ? signature : `${signature}|${scopeDeps(scope)}`}|@${columns}`;
    if (scope.type === 'module') {
      const compute = (): RelativeFinding[] => toRelativeByUnit(file, check(scope));
      out.push(...fromRelative(cache.tracked ? cache.module.getTracked(file, deps, compute) : cache.module.get(file, deps, compute)));
    } else if (cache.tracked) {
      // Anchored on the statement of the outermost function's body that holds the scope (a nested step
      // function of a giant `def main():`), with the other statements of that body the check's index
      // reads reached (NodeMemo.getTrackedWithin).
      const piece = enclosingPiece(file, scope);
      out.push(...fromRelative(cache.functions.getTrackedWithin(file, scope, `${deps}|${piece.token}`, piece.body, () => toRelative(scope, check(scope)))));
    } else out.push(...fromRelative(cache.functions.get(file, scope, deps, () => toRelative(scope, check(scope)))));
  }
  out.sort((a, b) => a.start - b.start);
  return out;
}

/** The columns of the module's own statements, per version (every rule using checkScopes asks). */
const moduleColumns = new VersionMemo<string>('checkScopes.moduleColumns');

/**
 * How a per-statement walk accumulates: `fresh` makes an empty accumulator, `visit` adds one node's
 * contribution, `merge` appends a function body's accumulator (walked on its own) to another.
 */
export interface FunctionSplitWalk<A> {
  readonly fresh: () => A;
  readonly visit: (n: SyntaxNode, acc: A) => void;
  readonly merge: (acc: A, part: A) => void;
  /** 'reverse': children pushed in order, so popped last first; 'document': popped in document order. */
  readonly order: 'reverse' | 'document';
  /**
   * With order 'document' only: the node types `visit` acts on (it must ignore every other type, and
   * `function_definition` nodes are passed to it in any case). The walk then reads those nodes from the
   * statement's by-type index (see SourceFile.nodesOfTypeInUnit) instead of visiting every node, in the
   * same order: a walk for the calls of a file no longer reads every node's children.
   */
  readonly types?: readonly string[];
  /**
   * Where a long function body's statements keep their parts (see SPLIT_FUNCTION_LINES): given only by a
   * walk whose `visit` of a node in a function body reads nothing outside the body statement holding it
   * (besides `deps`) and whose parts hold no node outside that statement, but for the function itself as
   * the scope of its own code, which `relocate` replaces.
   * The function's part is then merged from its statements' parts, so an edit in one statement of a giant
   * `def main():` re-walks that statement only.
   */
  readonly statements?: NodeMemo<A>;
  /**
   * For a walk whose parts name the scope a node belongs to (`scopeOf`, which for the code of a function's
   * own body is the function): a part like `part` with every mention of scope `from` replaced by `to`
   * (`part` itself when it names no `from`; never changed in place). A statement's part is kept with
   * OWN_SCOPE in place of the function being split, whose node is new on every edit of its body, and
   * relocated to the function of the version merging it.
   */
  readonly relocate?: (part: A, from: SyntaxNode, to: SyntaxNode) => A;
}

/**
 * Stands for "the function whose body holds the statement" in a kept statement part (see
 * FunctionSplitWalk.relocate); never reaches a walk's consumers. Immutable, so not module state.
 */
export const OWN_SCOPE: SyntaxNode = Object.freeze({
  type: '(enclosing function)',
  named: true,
  field: null,
  missing: false,
  start: -1,
  end: -1,
  children: Object.freeze([]) as unknown as SyntaxNode[],
  parent: null,
});

/**
 * The part of one statement of `fn`'s body (split by splitBody), kept on the statement node; `walkStatement`
 * walks it into a fresh accumulator. Scopes are relocated from `fn` to OWN_SCOPE when kept and back to the
 * `fn` of this version when read.
 */
function statementPart<A>(file: SourceFile, deps: string, fn: SyntaxNode, statement: SyntaxNode, walk: FunctionSplitWalk<A>, walkStatement: (own: A) => void): A {
  const kept = walk.statements!.get(file, statement, deps, () => {
    const own = walk.fresh();
    walkStatement(own);
    return walk.relocate === undefined ? own : walk.relocate(own, fn, OWN_SCOPE);
  });
  return walk.relocate === undefined ? kept : walk.relocate(kept, OWN_SCOPE, fn);
}

/**
 * A function spanning at least this many lines has its part merged from per-statement parts (when the walk
 * allows it). Shorter ones are walked whole: re-walking a short body costs less than a memo entry per
 * statement kept as long as the document.
 */
export const SPLIT_FUNCTION_LINES = 100;

/** The function's body block when its part is to be merged from per-statement parts, else null. */
function splitBody<A>(file: SourceFile, fn: SyntaxNode, walk: FunctionSplitWalk<A>): SyntaxNode | null {
  if (walk.statements === undefined || file.session.oneShot) return null;
  if (file.lineOf(fn.end) - file.lineOf(fn.start) < SPLIT_FUNCTION_LINES) return null;
  const body = fn.children[fn.children.length - 1];
  // The body must be the last child (a trailing comment or an error tree: walk the function whole), and
  // a typed walk must not act on the block itself (it is visited in no statement's part).
  if (body === undefined || body.type !== 'block' || body.field !== 'body') return null;
  if (walk.types !== undefined && walk.types.includes('block')) return null;
  return body;
}

/**
 * A stack walk of `root`'s subtree (pop a node, push its children, visit it) in which the descendants of
 * every function definition are walked once per function node and memoised on it under `deps`. A stack
 * walk visits a node's descendants contiguously right after the node, so splicing the function body's
 * accumulator at that point gives the same order as one walk over the whole subtree. This is what keeps
 * a one-character edit inside one method of a giant class from re-walking the whole class: the document
 * reuses every untouched method node. `visit` must read nothing outside the visited node's subtree
 * except what `deps` covers (a function node itself is visited in its parent's walk, so its visit may
 * read its decorators and enclosing class).
 */
export function walkSplittingFunctions<A>(file: SourceFile, memo: NodeMemo<A>, deps: string, root: SyntaxNode, walk: FunctionSplitWalk<A>): A {
  const acc = walk.fresh();
  if (walk.types !== undefined && walk.order === 'document') {
    if (root.parent?.type !== 'module') throw new Error(`a typed walk starts at a top-level statement, not ${root.type}@${root.start}`);
    const types = walk.types.includes('function_definition') ? walk.types : [...walk.types, 'function_definition'];
    walkTyped(file, memo, deps, root, types.map((t) => file.nodesOfTypeInUnit(root, t)), root, true, walk, acc);
  } else walkInto(file, memo, deps, [root], walk, acc);
  return acc;
}

/**
 * The typed form of walkInto: visits, in document order, the nodes of `owner`'s subtree (with `self`,
 * the owner too) found in `lists` (one by-type list of the statement `unit` per type, each in document
 * order), splitting at function definitions as walkInto does.
 */
function walkTyped<A>(
  file: SourceFile,
  memo: NodeMemo<A>,
  deps: string,
  unit: SyntaxNode,
  lists: readonly (readonly SyntaxNode[])[],
  owner: SyntaxNode,
  self: boolean,
  walk: FunctionSplitWalk<A>,
  acc: A,
  limit = Infinity,
): void {
  const at = lists.map((list) => firstStartingAtOrAfter(list, owner.start));
  // The lists are the unit's own nodes, so every node in them is in the unit's subtree: no test needed.
  // A nested owner (a function) tests each node once (`tested[k]` is the position last found inside):
  // the test walks parents for a node starting where the owner starts, and `f(x)(x)...` is thousands of
  // calls starting at one offset, so testing every list's head again on every step was quadratic.
  const everyNodeInside = owner === unit && self;
  const tested = lists.map(() => -1);
  /** The next node of list k in the owner's subtree (skipping the owner unless `self`), or null. */
  const head = (k: number): SyntaxNode | null => {
    const list = lists[k];
    while (at[k] < list.length && list[at[k]].start <= owner.end && list[at[k]].start < limit) {
      const n = list[at[k]];
      if (tested[k] === at[k] || everyNodeInside || ((self || n !== owner) && inSubtree(n, owner))) {
        tested[k] = at[k];
        return n;
      }
      at[k]++;
    }
    return null;
  };
  for (;;) {
    let best = -1;
    let node: SyntaxNode | null = null;
    for (let k = 0; k < lists.length; k++) {
      const n = head(k);
      if (n !== null && (node === null || beforeInDocument(n, node))) {
        best = k;
        node = n;
      }
    }
    if (node === null) return;
    at[best]++;
    walk.visit(node, acc);
    if (node.type !== 'function_definition') continue;
    const fn = node;
    // One version (the CLI): no later edit reuses a function's part, so its descendants go straight into
    // `acc` (merging a part at this place is the same walk); a part and a memo entry per function were
    // a few small Maps per function kept as long as the document.
    if (file.session.oneShot) walkTyped(file, memo, deps, unit, lists, fn, false, walk, acc);
    else {
      walk.merge(
        acc,
        memo.get(file, fn, deps, () => {
          const part = walk.fresh();
          const body = splitBody(file, fn, walk);
          if (body === null) walkTyped(file, memo, deps, unit, lists, fn, false, walk, part);
          else {
            // Document order: the header's nodes (parameters' defaults, return type) start before the body,
            // then each statement of the body with its subtree.
            walkTyped(file, memo, deps, unit, lists, fn, false, walk, part, body.start);
            for (const statement of body.children) {
              walk.merge(part, statementPart(file, deps, fn, statement, walk, (own) => walkTyped(file, memo, deps, unit, lists, statement, true, walk, own)));
            }
          }
          return part;
        }),
      );
    }
    // Its descendants were walked with it: every list moves past them.
    for (let k = 0; k < lists.length; k++) {
      const list = lists[k];
      let i = Math.max(at[k], firstStartingAtOrAfter(list, fn.end));
      while (i < list.length && list[i].start === fn.end && inSubtree(list[i], fn)) i++;
      at[k] = i;
    }
  }
}

function walkInto<A>(file: SourceFile, memo: NodeMemo<A>, deps: string, start: SyntaxNode[], walk: FunctionSplitWalk<A>, acc: A): void {
  const stack = start;
  const reverse = walk.order === 'reverse';
  const oneShot = file.session.oneShot;
  while (stack.length > 0) {
    const n = stack.pop()!;
    walk.visit(n, acc);
    // One version (the CLI): a function's body is walked on in place, like any node's children, without a
    // part kept per function (see walkTyped).
    if (n.type === 'function_definition' && !oneShot) {
      walk.merge(acc, functionBody(file, memo, deps, n, walk));
      continue;
    }
    if (reverse) for (const c of n.children) stack.push(c);
    else for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
}

function functionBody<A>(file: SourceFile, memo: NodeMemo<A>, deps: string, fn: SyntaxNode, walk: FunctionSplitWalk<A>): A {
  return memo.get(file, fn, deps, () => {
    const part = walk.fresh();
    const body = splitBody(file, fn, walk);
    if (body === null) {
      const children = walk.order === 'reverse' ? [...fn.children] : [...fn.children].reverse();
      walkInto(file, memo, deps, children, walk, part);
      return part;
    }
    // The same sequence as the stack walk of the whole function: a stack walk visits each child's subtree
    // contiguously, so the body's statements' parts merge in at their places (last first in 'reverse').
    const header = fn.children.slice(0, -1);
    const merge = (statement: SyntaxNode): void => walk.merge(part, statementPart(file, deps, fn, statement, walk, (own) => walkInto(file, memo, deps, [statement], walk, own)));
    if (walk.order === 'reverse') {
      walk.visit(body, part);
      for (let i = body.children.length - 1; i >= 0; i--) merge(body.children[i]);
      walkInto(file, memo, deps, header, walk, part);
    } else {
      walkInto(file, memo, deps, header.reverse(), walk, part);
      walk.visit(body, part);
      for (const statement of body.children) merge(statement);
    }
    return part;
  });
}

/**
 * The nodes of one type that satisfy a predicate reading only the node's own subtree, in document order,
 * kept per top-level statement and per function body (see walkSplittingFunctions): a file-wide question
 * about a few assignments or calls asked on every version walks the statements an edit rebuilt, and the
 * rest is a concatenation of short lists. `deps` must cover whatever else `test` reads (the imports...).
 */
export class FilteredNodes {
  private readonly units: NodeMemo<SyntaxNode[]>;
  private readonly functions: NodeMemo<SyntaxNode[]>;
  private readonly statements: NodeMemo<SyntaxNode[]>;
  constructor(
    readonly name: string,
    readonly type: string,
    readonly test: (file: SourceFile, node: SyntaxNode) => boolean,
  ) {
    this.units = new NodeMemo(`${name}.unit`);
    this.functions = new NodeMemo(`${name}.function`);
    this.statements = new NodeMemo(`${name}.statement`);
    Object.freeze(this);
  }

  /** The file's matching nodes in document order (a new array: callers may keep it). */
  get(file: SourceFile, deps: string): SyntaxNode[] {
    const out: SyntaxNode[] = [];
    const walk: FunctionSplitWalk<SyntaxNode[]> = {
      order: 'document',
      types: [this.type],
      // `test` reads the node's own subtree (see above).
      statements: this.statements,
      fresh: () => [],
      merge: (acc, part) => {
        for (const n of part) acc.push(n);
      },
      visit: (n, acc) => {
        if (n.type === this.type && this.test(file, n)) acc.push(n);
      },
    };
    for (const unit of file.root.children) {
      for (const n of this.units.get(file, unit, deps, () => walkSplittingFunctions(file, this.functions, deps, unit, walk))) out.push(n);
    }
    return out;
  }
}
