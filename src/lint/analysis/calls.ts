// Calls grouped by the last segment of their callee (`empty_cache`, `zero_grad`, `DataLoader`), so a
// rule looks at the handful of calls it cares about instead of every call in the file.
//
// The grouping is cached per top-level statement node, and within it per function body. The document
// mirror reuses the nodes of statements (and functions) an edit did not touch, so after a one-character
// edit only the edited function (or statement outside functions) is regrouped.
import { childByField, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod } from './imports';
import { enclosingFunction } from './context';
import { IndexDef, NodeMemo, VersionMemo } from '../session';
import { walkSplittingFunctions, type FunctionSplitWalk } from './unitcache';

type Groups = Map<string, SyntaxNode[]>;

const byUnit = new NodeMemo<Groups>('calls.byUnit');

function unitGroups(file: SourceFile, unit: SyntaxNode): Groups {
  // Purely syntactic: the callee's last segment needs no import resolution, so no deps.
  return byUnit.get(file, unit, '', () => walkSplittingFunctions(file, byFunction, '', unit, groupWalk(file)));
}

/** Each function body's groups, so an edit in one method of a giant class regroups that method only. */
const byFunction = new NodeMemo<Groups>('calls.byFunction');
/** The groups of each statement of a long function's body (see SPLIT_FUNCTION_LINES): a giant `main()` regroups the edited statement. */
const byStatement = new NodeMemo<Groups>('calls.byStatement');

/** The node types the walk below acts on (it reads them from the statement's by-type index). */
const CALL_TYPES: readonly string[] = Object.freeze(['call']);

/**
 * Calls grouped in document order. Merging a function body's groups at its place keeps both each
 * group's order and the order in which names first appear (what one walk over the statement gives).
 */
function groupWalk(file: SourceFile): FunctionSplitWalk<Groups> {
  const add = (groups: Groups, method: string, calls: readonly SyntaxNode[]): void => {
    const list = groups.get(method);
    if (list === undefined) groups.set(method, [...calls]);
    else for (const c of calls) list.push(c);
  };
  return {
    order: 'document',
    types: CALL_TYPES,
    // A call's group is its callee's last segment: read from the call's own subtree.
    statements: byStatement,
    fresh: () => new Map(),
    merge: (acc, part) => {
      for (const [method, calls] of part) add(acc, method, calls);
    },
    visit: (n, acc) => {
      if (n.type !== 'call') return;
      const m = calleeMethod(file, n);
      if (m !== null) add(acc, m, [n]);
    },
  };
}

/** The calls of one top-level statement whose callee ends in `method`, in document order. */
export function unitCallsNamed(file: SourceFile, unit: SyntaxNode, method: string): readonly SyntaxNode[] {
  return unitGroups(file, unit).get(method) ?? [];
}

/** The calls of one top-level statement grouped by the last segment of their callee, in document order. */
export function unitCallGroups(file: SourceFile, unit: SyntaxNode): ReadonlyMap<string, readonly SyntaxNode[]> {
  return unitGroups(file, unit);
}

const named = new IndexDef<SyntaxNode>('calls.named', unitGroups);

/**
 * Calls whose callee ends in `method` (`method(...)`, `x.method(...)`), in document order. The array
 * is the same object across versions while no edited statement has such calls (see MergedIndex).
 */
export function callsNamed(file: SourceFile, method: string): readonly SyntaxNode[] {
  return named.get(file, method);
}

/** Calls whose callee's last segment satisfies `pred` (tested once per distinct name), in document order. */
export function callsMatching(file: SourceFile, pred: (method: string) => boolean): SyntaxNode[] {
  // Every statement's groups, not one key of the index: a per-reader memo holding it holds for this version only.
  file.session.noteWholeFileRead(file);
  const verdicts = new Map<string, boolean>();
  const out: SyntaxNode[] = [];
  for (const unit of file.root.children) {
    for (const [method, list] of unitGroups(file, unit)) {
      let ok = verdicts.get(method);
      if (ok === undefined) verdicts.set(method, (ok = pred(method)));
      if (ok) for (const c of list) out.push(c);
    }
  }
  return out.sort((a, b) => a.start - b.start);
}

/** A call with a keyword argument, as callsWithKeyword lists it. */
export interface KeywordCall {
  readonly call: SyntaxNode;
  /** The last segment of its callee (what callsMatching tests). */
  readonly method: string;
  /** The keyword's value: what keywordArgument(file, call, keyword) returns. */
  readonly value: SyntaxNode;
}

/**
 * The calls callsMatching lists (in its order) whose keywordArgument(file, call, keyword) is not null,
 * with that value: an index read of one key (per-statement parts, each split per function body), so a
 * per-reader memo holding the answer is reused while that keyword's calls are unchanged, and an edit in
 * one method of a giant class regroups that method's calls only (a per-version grouping of every call of
 * the file was 5% of a re-lint of a 6k-line class).
 */
export function callsWithKeyword(file: SourceFile, keyword: string): readonly KeywordCall[] {
  return withKeyword.get(file, keyword);
}

/** One statement's calls by keyword, in the order callsMatching gives them (see keywordPart). */
const withKeyword = new IndexDef<KeywordCall>('calls.withKeyword', keywordPart);

/** Each function body's calls by keyword (in the walk's document order), so an edit regroups that body only. */
const keywordsByFunction = new NodeMemo<KeywordGroups>('calls.withKeyword.function');
const keywordsByStatement = new NodeMemo<KeywordGroups>('calls.withKeyword.statement');

type KeywordGroups = Map<string, KeywordCall[]>;

/**
 * One statement's part: its calls by keyword (keywordArgument answers with the first keyword of a name,
 * even one without a value, which then lists nothing), ordered as callsMatching orders the statement's
 * calls: by start, and calls sharing a start (`a.b(x).c(y)`) by their callee group's place in the
 * statement's groups (unitGroups), then in document order. The walk gives document order; the stable
 * sort below adds the group tie-break.
 */
function keywordPart(file: SourceFile, unit: SyntaxNode): ReadonlyMap<string, readonly KeywordCall[]> {
  const groups = walkSplittingFunctions(file, keywordsByFunction, '', unit, keywordWalk(file));
  if (groups.size === 0) return groups;
  const groupIndex = new Map<string, number>();
  for (const method of unitGroups(file, unit).keys()) groupIndex.set(method, groupIndex.size);
  for (const list of groups.values()) list.sort((a, b) => a.call.start - b.call.start || groupIndex.get(a.method)! - groupIndex.get(b.method)!);
  return groups;
}

function keywordWalk(file: SourceFile): FunctionSplitWalk<KeywordGroups> {
  return {
    order: 'document',
    types: CALL_TYPES,
    // A call's keywords and callee: its own subtree.
    statements: keywordsByStatement,
    fresh: () => new Map(),
    merge: (acc, part) => {
      for (const [keyword, calls] of part) {
        const list = acc.get(keyword);
        if (list === undefined) acc.set(keyword, [...calls]);
        else for (const c of calls) list.push(c);
      }
    },
    visit: (call, acc) => {
      if (call.type !== 'call') return;
      const method = calleeMethod(file, call);
      const args = childByField(call, 'arguments');
      if (method === null || args === null) return;
      const seen = new Set<string>();
      for (const a of args.children) {
        if (a.type !== 'keyword_argument') continue;
        const key = childByField(a, 'name');
        if (key === null) continue;
        const name = file.textOf(key);
        if (seen.has(name)) continue;
        seen.add(name);
        const value = childByField(a, 'value');
        if (value === null) continue;
        const list = acc.get(name);
        if (list === undefined) acc.set(name, [{ call, method, value }]);
        else list.push({ call, method, value });
      }
    },
  };
}

const namedByFunction = new VersionMemo<ReadonlyMap<SyntaxNode | null, readonly SyntaxNode[]>>('calls.namedByFunction');

/**
 * callsNamed(file, method) grouped by the nearest enclosing function (null: module or class level), in
 * document order: a rule asking per function scans that function's calls, not every such call of the file.
 */
export function callsNamedByFunction(file: SourceFile, method: string): ReadonlyMap<SyntaxNode | null, readonly SyntaxNode[]> {
  return namedByFunction.keyed(file, method, () => {
    const byFunction = new Map<SyntaxNode | null, SyntaxNode[]>();
    for (const call of callsNamed(file, method)) {
      const fn = enclosingFunction(call);
      const list = byFunction.get(fn);
      if (list === undefined) byFunction.set(fn, [call]);
      else list.push(call);
    }
    return byFunction;
  });
}

/** Every call that starts inside `node` (nested functions included), in source order. */
export function callsWithin(file: SourceFile, node: SyntaxNode): SyntaxNode[] {
  const calls = file.nodesOfType('call');
  const out: SyntaxNode[] = [];
  for (let i = firstStartingAtOrAfter(calls, node.start); i < calls.length && calls[i].start < node.end; i++) out.push(calls[i]);
  return out;
}
