// Caches that survive edits. PythonDocument reuses the mirrored subtree of every top-level statement
// an edit did not touch (the nodes are shifted in place), so results computed from one statement's
// subtree can be kept on its nodes, as long as whatever else they depend on (imports, file-wide facts)
// is unchanged: each entry carries the signature of those inputs and is recomputed when it differs.
// Positions must never be cached as absolute offsets: keep nodes, or offsets relative to a node.
import type { SourceFile, SyntaxNode } from '../syntax';
import type { Fix, RuleFinding } from '../types';
import { importBindings } from './imports';

interface Entry<T> {
  readonly signature: string;
  readonly value: T;
}

/** A cache of values keyed by node and validated by a signature. */
export class NodeCache<T> {
  private readonly map = new WeakMap<SyntaxNode, Entry<T>>();

  get(node: SyntaxNode, signature: string, compute: () => T): T {
    const hit = this.map.get(node);
    if (hit !== undefined && hit.signature === signature) return hit.value;
    const value = compute();
    this.map.set(node, { signature, value });
    return value;
  }
}

/** The nodes of `type` in one top-level statement of `file`, in document order (like SourceFile.nodesOfType). */
export function unitNodesOfType(file: SourceFile, unit: SyntaxNode, type: string): readonly SyntaxNode[] {
  return file.nodesOfTypeInUnit(unit, type);
}

/** The file's top-level statements (the units PythonDocument reuses across edits). */
export function unitsOf(file: SourceFile): readonly SyntaxNode[] {
  return file.root.children;
}

const interned = new Map<string, string>();

/** A short token for a long signature, so cache checks compare a few characters. */
export function intern(signature: string): string {
  let token = interned.get(signature);
  if (token === undefined) {
    if (interned.size > 10_000) interned.clear(); // tokens stay unique: the counter below never resets
    token = `#${++internCounter}`;
    interned.set(signature, token);
  }
  return token;
}

let internCounter = 0;

const combined = new WeakMap<SourceFile, Map<string, string>>();

/** The interned combination of several signatures, memoized per file version. */
export function combine(file: SourceFile, name: string, parts: () => readonly string[]): string {
  let perFile = combined.get(file);
  if (perFile === undefined) {
    perFile = new Map();
    combined.set(file, perFile);
  }
  let sig = perFile.get(name);
  if (sig === undefined) {
    sig = intern(parts().join('|'));
    perFile.set(name, sig);
  }
  return sig;
}

// Keyed by the bindings map, which versions with the same import statements share (see importBindings).
const importSignatures = new WeakMap<ReadonlyMap<string, unknown>, string>();

/** Changes whenever an import binding changes. */
export function importSignature(file: SourceFile): string {
  const bindings = importBindings(file);
  let sig = importSignatures.get(bindings);
  if (sig === undefined) {
    const parts: string[] = [];
    for (const [local, b] of bindings) parts.push(`${local}=${b.qualified}`);
    sig = intern(parts.sort().join(','));
    importSignatures.set(bindings, sig);
  }
  return sig;
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

const moduleCodeOf = new WeakMap<SourceFile, readonly SyntaxNode[]>();

/** The module's own code: its top-level statements that are not definitions (in order). */
export function moduleCode(file: SourceFile): readonly SyntaxNode[] {
  let code = moduleCodeOf.get(file);
  if (code === undefined) {
    code = file.root.children.filter((u) => !isDefinition(u));
    moduleCodeOf.set(file, code);
  }
  return code;
}

/**
 * A cache for results computed over the module's own code. The module node is new in every version,
 * but the statements are reused across edits: an entry is valid while every top-level statement that
 * is not a definition is the same (reused) node and the signature, which must cover every other
 * input, is unchanged. A few entries are kept for documents edited in turn.
 */
export class ModuleCodeCache<T> {
  private entries: { code: readonly SyntaxNode[]; signature: string; value: T }[] = [];

  get(file: SourceFile, signature: string, compute: () => T): T {
    const code = moduleCode(file);
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i];
      if (e.signature !== signature || e.code.length !== code.length || !e.code.every((n, k) => n === code[k])) continue;
      if (i > 0) this.entries.unshift(...this.entries.splice(i, 1));
      return e.value;
    }
    const value = compute();
    this.entries.unshift({ code, signature, value });
    if (this.entries.length > 4) this.entries.pop();
    return value;
  }
}

/**
 * Findings anchored to the last top-level statement starting at or before them (the one holding them),
 * so they stay right when statements shift. A file without statements has no module findings.
 */
function toRelativeByUnit(file: SourceFile, findings: readonly RuleFinding[]): RelativeFinding[] {
  const units = file.root.children;
  return findings.flatMap((f) => {
    let anchor: SyntaxNode | undefined;
    for (const u of units) {
      if (u.start > f.start) break;
      anchor = u;
    }
    return toRelative(anchor ?? units[0] ?? file.root, [f]);
  });
}

/** Where a per-scope check keeps its findings: on each function node, and for the module's own code. */
export class ScopeFindingsCache {
  readonly functions = new NodeCache<RelativeFinding[]>();
  readonly module = new ModuleCodeCache<RelativeFinding[]>();
}

/**
 * Runs a per-scope check with reuse across edits: function scopes' findings are cached on the function
 * node, the module scope's while its own code is unchanged (see ModuleCodeCache), both under
 * `signature`, which must cover every file-wide input of the check.
 */
export function checkScopes(file: SourceFile, cache: ScopeFindingsCache, signature: string, check: (scope: SyntaxNode) => RuleFinding[]): RuleFinding[] {
  const out: RuleFinding[] = [];
  for (const scope of scopesOf(file)) {
    if (scope.type === 'module') out.push(...fromRelative(cache.module.get(file, signature, () => toRelativeByUnit(file, check(scope)))));
    else out.push(...fromRelative(cache.functions.get(scope, signature, () => toRelative(scope, check(scope)))));
  }
  out.sort((a, b) => a.start - b.start);
  return out;
}

/** Nodes of the given types whose nearest scope is `scope` (nested defs, lambdas and classes excluded). */
export function nodesInScope(scope: SyntaxNode, types: ReadonlySet<string>): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const roots = scope.type === 'module' ? scope.children.filter((c) => !isDefinition(c)) : scope.children.filter((c) => c.field === 'body');
  const stack = [...roots].reverse();
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (isDefinition(n)) continue;
    if (types.has(n.type)) out.push(n);
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
  return out;
}

function isDefinition(n: SyntaxNode): boolean {
  return n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'decorated_definition';
}

/** A lookup an index answered while a dependency recorder was active (see recordLookups). */
export interface Lookup {
  readonly index: MergedIndex<unknown>;
  readonly key: string;
  readonly result: readonly unknown[];
}

let recorder: Lookup[] | null = null;

/**
 * Runs `compute` and returns, with its value, every MergedIndex lookup it made. A result computed
 * from one statement's nodes plus those lookups stays valid while the statement is reused and every
 * lookup returns the same array again (see lookupsStillHold): an index keeps a key's array across
 * versions exactly while no changed statement has that key.
 */
export function recordLookups<T>(compute: () => T): { value: T; lookups: readonly Lookup[] } {
  const outer = recorder;
  const lookups: Lookup[] = [];
  recorder = lookups;
  try {
    return { value: compute(), lookups };
  } finally {
    recorder = outer;
    if (outer !== null) outer.push(...lookups);
  }
}

export function lookupsStillHold(file: SourceFile, lookups: readonly Lookup[]): boolean {
  for (const l of lookups) if (l.index.get(file, l.key) !== l.result) return false;
  return true;
}

interface Lineage<V> {
  /** The version the memo is valid for (the newest one seen). */
  file: SourceFile;
  units: readonly SyntaxNode[];
  readonly memo: Map<string, V[]>;
}

/** Changed statements beyond which a version starts a fresh memo instead of updating one. */
const MAX_CHANGED_UNITS = 16;

/**
 * Values by key merged over the file's top-level statements in document order, from per-statement
 * parts. The merged arrays are kept across versions of a document: a new version is compared with the
 * last one by statement identity (reused statements are the same nodes), and only the keys that a
 * removed or added statement has are merged again. So a key's array is the same object in a later
 * version exactly while no statement having that key changed.
 */
export class MergedIndex<V> {
  private readonly parts = new WeakMap<SyntaxNode, ReadonlyMap<string, readonly V[]>>();
  private readonly byFile = new WeakMap<SourceFile, Lineage<V>>();
  private lineages: Lineage<V>[] = [];

  constructor(private readonly partOf: (file: SourceFile, unit: SyntaxNode) => ReadonlyMap<string, readonly V[]>) {}

  get(file: SourceFile, key: string): readonly V[] {
    const lineage = this.lineageOf(file);
    let list = lineage.memo.get(key);
    if (list === undefined) {
      list = [];
      for (const unit of lineage.units) {
        const part = this.part(file, unit).get(key);
        if (part !== undefined) for (const v of part) list.push(v);
      }
      lineage.memo.set(key, list);
    }
    if (recorder !== null) recorder.push({ index: this, key, result: list });
    return list;
  }

  private part(file: SourceFile, unit: SyntaxNode): ReadonlyMap<string, readonly V[]> {
    let part = this.parts.get(unit);
    if (part === undefined) {
      part = this.partOf(file, unit);
      this.parts.set(unit, part);
    }
    return part;
  }

  private lineageOf(file: SourceFile): Lineage<V> {
    let lineage = this.byFile.get(file);
    if (lineage !== undefined) {
      if (lineage.file === file) return lineage;
      // An older version than the lineage's: it gets a memo of its own.
      lineage = { file, units: [...unitsOf(file)], memo: new Map() };
      this.byFile.set(file, lineage);
      return lineage;
    }
    const units = [...unitsOf(file)];
    lineage = this.advance(file, units) ?? { file, units, memo: new Map() };
    if (!this.lineages.includes(lineage)) this.lineages = [lineage, ...this.lineages.slice(0, 3)];
    this.byFile.set(file, lineage);
    return lineage;
  }

  /** The recent lineage closest to `units`, moved to this version, or null when none is close. */
  private advance(file: SourceFile, units: readonly SyntaxNode[]): Lineage<V> | null {
    for (const lineage of this.lineages) {
      const old = lineage.units;
      const max = Math.min(old.length, units.length);
      let prefix = 0;
      while (prefix < max && old[prefix] === units[prefix]) prefix++;
      let suffix = 0;
      while (suffix < max - prefix && old[old.length - 1 - suffix] === units[units.length - 1 - suffix]) suffix++;
      const removed = old.slice(prefix, old.length - suffix);
      const added = units.slice(prefix, units.length - suffix);
      if (removed.length + added.length > MAX_CHANGED_UNITS || (prefix + suffix === 0 && old.length > 0)) continue;
      for (const unit of removed) {
        const part = this.parts.get(unit);
        if (part === undefined) {
          // Never split into parts: no merge ran since it appeared, so nothing merged is kept.
          lineage.memo.clear();
          break;
        }
        for (const key of part.keys()) lineage.memo.delete(key);
      }
      for (const unit of added) for (const key of this.part(file, unit).keys()) lineage.memo.delete(key);
      lineage.file = file;
      lineage.units = units;
      return lineage;
    }
    return null;
  }
}
