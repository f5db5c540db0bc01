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

const keywordCalls = new VersionMemo<ReadonlyMap<string, readonly KeywordCall[]>>('calls.byKeyword');

/**
 * The calls callsMatching lists (in its order) whose keywordArgument(file, call, keyword) is not null,
 * with that value. Grouped once per version for every keyword: a rule asking per subscript or `.get`
 * scanned every call of the file each time, quadratic in a long file.
 */
export function callsWithKeyword(file: SourceFile, keyword: string): readonly KeywordCall[] {
  // Every statement's calls, as callsMatching: a per-reader memo holding the answer holds for this version only.
  file.session.noteWholeFileRead(file);
  return keywordCalls.get(file, groupByKeyword).get(keyword) ?? [];
}

function groupByKeyword(file: SourceFile): ReadonlyMap<string, readonly KeywordCall[]> {
  const byCall: { call: SyntaxNode; method: string }[] = [];
  for (const unit of file.root.children) for (const [method, list] of unitGroups(file, unit)) for (const call of list) byCall.push({ call, method });
  // Stable, as callsMatching's: calls sharing a start (`f(a)(b)`) keep their grouped order.
  byCall.sort((a, b) => a.call.start - b.call.start);
  const out = new Map<string, KeywordCall[]>();
  const seen = new Set<string>();
  for (const { call, method } of byCall) {
    const args = childByField(call, 'arguments');
    if (args === null) continue;
    seen.clear();
    for (const a of args.children) {
      if (a.type !== 'keyword_argument') continue;
      const key = childByField(a, 'name');
      if (key === null) continue;
      // keywordArgument answers with the first keyword of a name, even when it has no value.
      const name = file.textOf(key);
      if (seen.has(name)) continue;
      seen.add(name);
      const value = childByField(a, 'value');
      if (value === null) continue;
      const list = out.get(name);
      if (list === undefined) out.set(name, [{ call, method, value }]);
      else list.push({ call, method, value });
    }
  }
  return out;
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
