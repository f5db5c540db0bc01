// One analysis session per open document (one per file in the CLI): it owns every cache, index,
// intern table and memo the rules and analyses use, and is dropped with the document. Nothing under
// src/lint keeps mutable state at module level; a module declares *what* it memoises with an
// immutable descriptor (VersionMemo, NodeMemo, ModuleCodeMemo, IndexDef) and the session holds the
// values. A descriptor's `get` names everything the value depends on:
//   - VersionMemo.get(file, compute):             a value of one version (the file is the whole key);
//   - VersionMemo.keyed(file, key, compute):      a value of one version and one key (node, name...);
//   - NodeMemo.get(file, node, deps, compute):    a value computed from one node's subtree that is kept
//                                                 across versions while the node is reused (unchanged
//                                                 statement) and `deps` (every other input) is equal;
//   - ModuleCodeMemo.get(file, deps, compute):    the same for the module's own (non-definition) code;
//   - IndexDef.get(file, key):                    a per-key merge of per-statement parts (MergedIndex);
//   - NodeMemo.getTracked(file, node, deps, compute): like get, but instead of an index stamp in `deps`
//                                                 the entry remembers which index keys its compute read
//                                                 (IndexDef.get records them) and is reused while each
//                                                 of those keys has the same list (see IndexReads).
// `compute` receives no hidden context: a result that depends on anything beyond the key and `deps`
// (another argument, a depth, a setting) must put it in the key or in `deps`.
import type { ProjectContext } from './project/types';
import type { SourceFile, SyntaxNode } from './syntax';

/** The session's store for one descriptor, created on first use. */
interface Store {
  readonly kind: string;
}

export class AnalysisSession {
  /**
   * @param project the project of the document (its path and a lookup of the modules it imports), or
   * null when the document stands alone (an untitled buffer, a test's text).
   * @param oneShot the session will see one version only (a one-shot lint, the CLI): memo keys that
   * exist to tell versions apart need not be computed (see `versionToken`).
   */
  constructor(
    readonly project: ProjectContext | null = null,
    readonly oneShot = false,
  ) {
    // Plain in a one-shot session, whose nodes live exactly as long as it does (see NodeMemo's store).
    this.nodeIds = oneShot ? new Map<SyntaxNode, number>() : new WeakMap<SyntaxNode, number>();
  }

  private readonly stores = new Map<object, Store>();
  private readonly interned = new Map<string, string>();
  private internCounter = 0;
  /** The index reads of the computes running now (innermost last): see `collect`. */
  private readonly frames: OpenFrame[] = [];
  /** Each frame's reads flattened without repeats (see `flatten`), computed once per frame. */
  private readonly flattened = new WeakMap<Reads, Reads>();
  private readonly nodeIds: NodeTable<number>;
  private nodeCounter = 0;

  /** Records that a running compute read `key` of `index` and got `list` (IndexDef.get calls it; nothing else should). */
  noteRead(index: Peekable, key: string, list: readonly unknown[]): void {
    // A one-shot session opens no frame (collect and sealed run computes bare): nothing would keep the read.
    if (this.oneShot) return;
    const frames = this.frames;
    // Three pushes, no object per read: an index is read thousands of times per lint.
    if (frames.length > 0) frames[frames.length - 1].flat.push(index, key, list);
  }

  /**
   * Runs `compute` collecting the index reads it makes (its own, and those of the memos it asks, hit or
   * computed), which also count as reads of the compute running around it. Every memo descriptor runs
   * its computes through this and replays an entry's reads when it hits, so a value derived from the
   * index carries that dependency through any number of memo layers: a per-reader memo
   * (NodeMemo.getTracked) sees every key behind its value, not only those its own code asked for.
   */
  collect<V>(compute: () => V, flatten = false): { value: V; reads: Reads } {
    // One version only: no entry is ever checked against a later one, so reads need not be kept.
    if (this.oneShot) return { value: compute(), reads: NO_READS };
    const frame: OpenFrame = { flat: [], kids: [] };
    this.frames.push(frame);
    let value: V;
    try {
      value = compute();
    } finally {
      this.frames.pop();
    }
    let reads: Reads = frame.flat.length === 0 && frame.kids.length === 0 ? NO_READS : frame;
    // An entry kept across versions holds its reads flat: a tree of the frames it reused would keep every
    // version's frames alive as long as the entry.
    if (flatten) reads = this.flatten(reads);
    this.replay(reads);
    return { value, reads };
  }

  /** `reads` with the reads of every entry it reused, without repeats (same key of the same index), as one frame. */
  flatten(reads: Reads): Reads {
    if (reads === NO_READS || (reads.kids.length === 0 && reads.flat.length === 3)) return reads;
    let out = this.flattened.get(reads);
    if (out !== undefined) return out;
    const seen = new Map<unknown, Set<string>>();
    const flat: unknown[] = [];
    const visited = new Set<Reads>();
    const stack: Reads[] = [reads];
    while (stack.length > 0) {
      const r = stack.pop()!;
      if (visited.has(r)) continue;
      visited.add(r);
      const own = r.flat;
      for (let i = 0; i < own.length; i += 3) {
        let keys = seen.get(own[i]);
        if (keys === undefined) seen.set(own[i], (keys = new Set()));
        const key = own[i + 1] as string;
        if (keys.has(key)) continue;
        keys.add(key);
        flat.push(own[i], key, own[i + 2]);
      }
      for (const k of r.kids) stack.push(k);
    }
    out = flat.length === 0 ? NO_READS : { flat, kids: NO_KIDS };
    this.flattened.set(reads, out);
    return out;
  }

  /**
   * Runs `compute` outside the reads of the computes around it: for a value whose readers declare it by
   * a signature of the value in their deps (VersionMemo's `signed`), not by the index keys behind it.
   */
  sealed<V>(compute: () => V): V {
    // One version only: the frame exists to be dropped (see collect), so a one-shot session skips it.
    if (this.oneShot) return compute();
    this.frames.push({ flat: [], kids: [] });
    try {
      return compute();
    } finally {
      this.frames.pop();
    }
  }

  /** Counts `reads` (those of a memo entry that was reused) as reads of the compute running now. */
  replay(reads: Reads): void {
    const frames = this.frames;
    // By reference: the reader's frame points at the entry's reads (flattened only when it is kept).
    if (reads === NO_READS || frames.length === 0) return;
    const kids = frames[frames.length - 1].kids;
    if (kids[kids.length - 1] !== reads) kids.push(reads);
  }

  /**
   * Records that a running compute scanned the whole file outside any index (every statement's calls,
   * every definition): a per-reader memo holding it is valid for this version only (see getTracked).
   */
  noteWholeFileRead(file: SourceFile): void {
    this.noteRead(WHOLE_FILE, '', file.root.children);
  }

  /** A number naming one node object in this session (identity, not content: a reused node keeps it). */
  nodeId(node: SyntaxNode): number {
    let id = this.nodeIds.get(node);
    if (id === undefined) this.nodeIds.set(node, (id = ++this.nodeCounter));
    return id;
  }

  /** The store of `descriptor`, created by `create` the first time the session sees it. */
  store<S extends Store>(descriptor: object, create: () => S): S {
    let s = this.stores.get(descriptor);
    if (s === undefined) {
      s = create();
      this.stores.set(descriptor, s);
    }
    return s as S;
  }

  /** The store of `descriptor`, or undefined before its first use (lets hot paths skip the closure). */
  existing<S extends Store>(descriptor: object): S | undefined {
    return this.stores.get(descriptor) as S | undefined;
  }

  /**
   * A short token for a long signature, so cache checks compare a few characters. Tokens are unique
   * within the session (the counter never resets), so a dropped entry can never be confused with another.
   */
  intern(signature: string): string {
    let token = this.interned.get(signature);
    if (token === undefined) {
      if (this.interned.size > 10_000) this.interned.clear();
      token = `#${++this.internCounter}`;
      this.interned.set(signature, token);
    }
    return token;
  }

  /**
   * The token of a signature of file-wide inputs, named `name`, of one version: `signature()` interned,
   * or, in a one-shot session, a token of the name alone without computing the signature. Within one
   * version a named signature is constant, so the name tells apart exactly what the signature would
   * (and more: two names never share a token), and a session of one version never compares versions.
   */
  versionToken(name: string, signature: () => string): string {
    return this.oneShot ? `one-shot:${name}` : this.intern(signature());
  }

  /** Descriptors with a store in this session (tests). */
  get storeCount(): number {
    return this.stores.size;
  }
}

/** A memo of values computed from one version of the file (weakly held: dropped with the version). */
export class VersionMemo<V> {
  /**
   * @param signed the value has a signature function (as functionNetworksSignature) that every reader
   * keeping a result across versions puts in its deps: then the index reads behind the value are not
   * counted as the reader's (see NodeMemo.getTracked), since the signature already tells when it changes.
   */
  constructor(
    readonly name: string,
    readonly signed = false,
  ) {
    Object.freeze(this);
  }

  /** The value for `file`, computed once per version. */
  get(file: SourceFile, compute: (file: SourceFile) => V): V {
    const session = file.session;
    const store =
      session.existing<{ kind: string; byFile: WeakMap<SourceFile, Entry<V>> }>(this) ?? session.store(this, () => ({ kind: 'version', byFile: new WeakMap<SourceFile, Entry<V>>() }));
    let e = store.byFile.get(file);
    if (e === undefined) {
      // A one-shot session collects no reads (see collect): its computes run bare.
      if (session.oneShot) e = { value: compute(file), reads: NO_READS };
      else e = this.signed ? { value: session.sealed(() => compute(file)), reads: NO_READS } : session.collect(() => compute(file));
      store.byFile.set(file, e);
    } else session.replay(e.reads);
    return e.value;
  }

  /**
   * The value for (`file`, `key`), computed once per version and key. With `whileComputing`, a
   * recursive request for the same key during `compute` gets that value (a recursion guard).
   */
  keyed<K>(file: SourceFile, key: K, compute: (key: K) => V, ...whileComputing: [] | [V]): V {
    const session = file.session;
    const store =
      session.existing<{ kind: string; byFile: WeakMap<SourceFile, Map<unknown, Entry<V>>> }>(this) ??
      session.store(this, () => ({ kind: 'version-keyed', byFile: new WeakMap<SourceFile, Map<unknown, Entry<V>>>() }));
    let perFile = store.byFile.get(file);
    if (perFile === undefined) store.byFile.set(file, (perFile = new Map<unknown, Entry<V>>()));
    const hit = perFile.get(key);
    if (hit !== undefined) {
      session.replay(hit.reads);
      return hit.value;
    }
    // The guard's placeholder has no reads of its own: the running compute's frame collects them.
    if (whileComputing.length > 0) perFile.set(key, { value: whileComputing[0] as V, reads: NO_READS });
    const e: Entry<V> = session.oneShot ? { value: compute(key), reads: NO_READS } : session.collect(() => compute(key));
    perFile.set(key, e);
    return e.value;
  }
}

/** A memo's value and the index reads behind it (replayed into the reader's frame when reused). */
interface Entry<V> {
  readonly value: V;
  readonly reads: Reads;
}

interface NodeEntry<V> extends Entry<V> {
  readonly deps: string;
  /** getTrackedWithin: the statements of the anchoring body that the compute's index reads reached. */
  readonly pieces?: readonly SyntaxNode[];
}

const NO_PIECES: readonly SyntaxNode[] = Object.freeze([]);

/**
 * A memo of values computed from one node's subtree, kept on the node across versions: the document
 * reuses (as the same object) every subtree an edit did not touch. `deps` must cover every input
 * outside the subtree (imports, file-wide facts, options): the entry is recomputed when it differs.
 * Values must not hold absolute offsets of other nodes; keep nodes, or offsets relative to a node.
 */
export class NodeMemo<V> {
  constructor(readonly name: string) {
    Object.freeze(this);
  }

  get(file: SourceFile, node: SyntaxNode, deps: string, compute: (node: SyntaxNode) => V): V {
    const session = file.session;
    const store = this.storeOf(session);
    const hit = store.byNode.get(node);
    if (hit !== undefined && hit.deps === deps) {
      session.replay(hit.reads);
      return hit.value;
    }
    if (session.oneShot) {
      // No reads to collect (see collect): no closure and no result object per compute, millions in a long file.
      const value = compute(node);
      store.byNode.set(node, { deps, value, reads: NO_READS });
      return value;
    }
    const { value, reads } = session.collect(() => compute(node), true);
    store.byNode.set(node, { deps, value, reads });
    return value;
  }

  /**
   * Like `get`, for a value that reads file-wide indexes (IndexDef) beyond `node`: `deps` needs no index
   * stamp, because the entry is reused only while every index key its compute read (directly or through
   * other memos) still has the same list in this version. A list keeps its identity while its contents
   * are unchanged (see MergedIndex), so an edit elsewhere in a one-class file no longer invalidates it.
   * `deps` must still cover every other input outside `node`'s subtree: what the compute reads through
   * parents or whole-file scans (SourceFile.nodesOfType, the text) is not an index read.
   */
  getTracked(file: SourceFile, node: SyntaxNode, deps: string, compute: (node: SyntaxNode) => V): V {
    return this.tracked(file, node, deps, null, compute);
  }

  /**
   * Like `getTracked`, for a node whose `deps` name only one statement of a function's body (`body`, the
   * block: see unitcache's enclosingPiece) rather than the whole function: what the compute reached in
   * the body's other statements through its index reads (a value's assignment, a call, a nested def) is
   * read where it sits, its parents up to the block included (the scope of an assignment, a `with`
   * around a name), so the entry also holds those statements and is reused only while each of them is
   * still a statement of this version's `body` (the document reuses a statement an edit did not touch).
   * A compute must reach the body's other statements through the indexes only, never by walking the
   * block. With `body` null this is `getTracked`.
   */
  getTrackedWithin(file: SourceFile, node: SyntaxNode, deps: string, body: SyntaxNode | null, compute: (node: SyntaxNode) => V): V {
    return this.tracked(file, node, deps, body, compute);
  }

  private tracked(file: SourceFile, node: SyntaxNode, deps: string, body: SyntaxNode | null, compute: (node: SyntaxNode) => V): V {
    const session = file.session;
    const store = this.storeOf(session);
    const hit = store.byNode.get(node);
    if (session.oneShot) {
      // One version: an entry's reads always hold (they are NO_READS) and its body is this version's.
      if (hit !== undefined && hit.deps === deps) return hit.value;
      const value = compute(node);
      store.byNode.set(node, { deps, value, reads: NO_READS });
      return value;
    }
    if (hit !== undefined && hit.deps === deps && readsHold(file, hit.reads) && (hit.pieces ?? NO_PIECES).every((p) => p.parent === body)) {
      session.replay(hit.reads);
      return hit.value;
    }
    const { value, reads } = session.collect(() => compute(node), true);
    store.byNode.set(node, body === null || session.oneShot ? { deps, value, reads } : { deps, value, reads, pieces: piecesReached(reads, body) });
    return value;
  }

  private storeOf(session: AnalysisSession): { kind: string; byNode: NodeTable<NodeEntry<V>> } {
    return (
      session.existing<{ kind: string; byNode: NodeTable<NodeEntry<V>> }>(this) ??
      // A one-shot session's nodes live exactly as long as it does (one version, dropped with the document),
      // so a plain Map holds nothing longer than a WeakMap would; a WeakMap's entries are ephemerons, which
      // every garbage collection of a long file's lint re-traced (hundreds of thousands of them).
      session.store(this, () => ({ kind: 'node', byNode: session.oneShot ? new Map<SyntaxNode, NodeEntry<V>>() : new WeakMap<SyntaxNode, NodeEntry<V>>() }))
    );
  }
}

/** A memo's entries by node: weakly held across an editor document's versions, a plain Map in a one-shot session. */
interface NodeTable<E> {
  get(node: SyntaxNode): E | undefined;
  set(node: SyntaxNode, entry: E): unknown;
}

/** What a read is checked against: an index's current list for a key, without recording a read. */
interface Peekable {
  peek(file: SourceFile, key: string): readonly unknown[];
}

/**
 * The index reads behind a value: its compute's own, as (index, key, list) triples, and the reads of the
 * memo entries it reused. An entry stays valid (NodeMemo.getTracked) while every key has the same list.
 */
export interface Reads {
  readonly flat: readonly unknown[];
  readonly kids: readonly Reads[];
}

/** A running compute's reads (see AnalysisSession.collect). */
interface OpenFrame {
  readonly flat: unknown[];
  readonly kids: Reads[];
}

const NO_KIDS: readonly Reads[] = Object.freeze([]);
const NO_READS: Reads = Object.freeze({ flat: Object.freeze([]), kids: NO_KIDS });

/**
 * The pseudo-index of a whole-file scan: its one list is the version's statements array, new in every
 * version (the module node is), so such a read holds within the version that made it only.
 */
const WHOLE_FILE: Peekable = Object.freeze({ peek: (file: SourceFile): readonly unknown[] => file.root.children });

/** Whether every read key still has the list the compute got (identity: see MergedIndex). */
function readsHold(file: SourceFile, reads: Reads): boolean {
  // Kept entries hold their reads flattened (AnalysisSession.collect with `flatten`).
  const flat = reads.flat;
  for (let i = 0; i < flat.length; i += 3) if ((flat[i] as Peekable).peek(file, flat[i + 1] as string) !== flat[i + 2]) return false;
  return true;
}

/**
 * The statements of `body` (children of the block) holding a node of the lists that `reads` (flattened)
 * got: an index value is a node or a record of nodes (an assignment target, a call with its keyword).
 * Each node is walked up to `body` once; nodes outside it count for nothing here (their own statements
 * are kept by identity in the lists).
 */
function piecesReached(reads: Reads, body: SyntaxNode): readonly SyntaxNode[] {
  const flat = reads.flat;
  if (flat.length === 0) return NO_PIECES;
  const pieces = new Set<SyntaxNode>();
  // Nodes already walked (their piece, or null outside `body`): lists of one key share many ancestors.
  const seen = new Map<SyntaxNode, SyntaxNode | null>();
  const pieceOf = (node: SyntaxNode): void => {
    const path: SyntaxNode[] = [];
    let found: SyntaxNode | null | undefined;
    for (let n: SyntaxNode | null = node; n !== null; n = n.parent) {
      found = seen.get(n);
      if (found !== undefined) break;
      if (n.parent === body) {
        found = n;
        break;
      }
      path.push(n);
    }
    found ??= null;
    for (const n of path) seen.set(n, found);
    if (found !== null) pieces.add(found);
  };
  for (let i = 2; i < flat.length; i += 3) {
    const list = flat[i];
    if (!Array.isArray(list)) continue;
    for (const v of list) {
      if (isNode(v)) pieceOf(v);
      else if (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
        for (const f of Object.values(v as Record<string, unknown>)) if (isNode(f)) pieceOf(f);
      }
    }
  }
  return pieces.size === 0 ? NO_PIECES : [...pieces];
}

/** A mirror node (SyntaxNode), told apart from an index's plain records by its `children` array and `type`. */
function isNode(v: unknown): v is SyntaxNode {
  return typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string' && Array.isArray((v as { children?: unknown }).children) && 'parent' in v;
}

/**
 * A memo keyed by explicit parts (strings, nodes, numbers: compared with ===), shared by the versions
 * of the document: the `capacity` most recently used keys are kept. Put in `key` every input the
 * value depends on; `compute` gets nothing else.
 */
export class KeyMemo<V> {
  constructor(
    readonly name: string,
    readonly capacity: number,
  ) {
    Object.freeze(this);
  }

  get<const K extends readonly unknown[]>(file: SourceFile, key: K, compute: (...key: NoInfer<K>) => V): V {
    const session = file.session;
    const store = session.store(this, () => ({ kind: 'key', entries: [] as { key: readonly unknown[]; value: V; reads: Reads }[] }));
    const entries = store.entries;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (e.key.length !== key.length || !e.key.every((p, k) => p === key[k])) continue;
      if (i > 0) entries.unshift(...entries.splice(i, 1));
      session.replay(e.reads);
      return e.value;
    }
    const { value, reads } = session.collect(() => compute(...key), true);
    entries.unshift({ key, value, reads });
    if (entries.length > this.capacity) entries.pop();
    return value;
  }
}

/** The module's own code: its top-level statements that are not definitions (in order). */
export function moduleCode(file: SourceFile): readonly SyntaxNode[] {
  return moduleCodeMemo.get(file, (f) => f.root.children.filter((u) => !isDefinition(u)));
}
const moduleCodeMemo = new VersionMemo<readonly SyntaxNode[]>('moduleCode');

export function isDefinition(n: SyntaxNode): boolean {
  return n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'decorated_definition';
}

/**
 * A memo of a result computed over the module's own code. The module node is new in every version,
 * but its statements are reused across edits: an entry is valid while every top-level statement that
 * is not a definition is the same (reused) node and `deps`, which must cover every other input, is
 * equal. A few entries are kept (undo/redo).
 */
export class ModuleCodeMemo<V> {
  constructor(readonly name: string) {
    Object.freeze(this);
  }

  get(file: SourceFile, deps: string, compute: (file: SourceFile) => V): V {
    return this.lookup(file, deps, false, compute);
  }

  /** Like `get`, with the index reads checked per key instead of a stamp in `deps` (see NodeMemo.getTracked). */
  getTracked(file: SourceFile, deps: string, compute: (file: SourceFile) => V): V {
    return this.lookup(file, deps, true, compute);
  }

  private lookup(file: SourceFile, deps: string, tracked: boolean, compute: (file: SourceFile) => V): V {
    const session = file.session;
    const store = session.store(this, () => ({ kind: 'module', entries: [] as { code: readonly SyntaxNode[]; deps: string; value: V; reads: Reads }[] }));
    const entries = store.entries;
    const code = moduleCode(file);
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (e.deps !== deps || e.code.length !== code.length || !e.code.every((n, k) => n === code[k])) continue;
      if (tracked && !readsHold(file, e.reads)) continue;
      if (i > 0) entries.unshift(...entries.splice(i, 1));
      session.replay(e.reads);
      return e.value;
    }
    const { value, reads } = session.collect(() => compute(file), true);
    entries.unshift({ code, deps, value, reads });
    if (entries.length > 4) entries.pop();
    return value;
  }
}

/**
 * A file-wide index (values by key, merged over the top-level statements in document order) built
 * from per-statement parts that `partOf` computes from the statement's subtree alone. See MergedIndex.
 */
export class IndexDef<V> {
  constructor(
    readonly name: string,
    readonly partOf: (file: SourceFile, unit: SyntaxNode) => ReadonlyMap<string, readonly V[]>,
  ) {
    Object.freeze(this);
  }

  /** The values of `key` in document order (recorded as a read of the compute running now). */
  get(file: SourceFile, key: string): readonly V[] {
    const list = this.index(file).get(file, key);
    file.session.noteRead(this, key, list);
    return list;
  }

  /** `get` without recording the read (a memo checking the reads it recorded). */
  peek(file: SourceFile, key: string): readonly V[] {
    return this.index(file).get(file, key);
  }

  /**
   * A token that changes whenever any key's merged values may have changed since the previous version:
   * what a memo that read this index (with any key) must put in its `deps`.
   */
  stamp(file: SourceFile): string {
    return this.index(file).stamp(file);
  }

  private index(file: SourceFile): MergedIndex<V> {
    return file.session.store(this, () => new MergedIndex<V>(this.partOf));
  }
}

interface Lineage<V> {
  /** The version the memo is valid for (the newest one seen). */
  file: SourceFile;
  units: readonly SyntaxNode[];
  readonly memo: Map<string, V[]>;
  /**
   * Whether the memo holds every key the units have (merged in one pass over them), except `stale`
   * ones: then a key in neither has no values. Merging key by key would cost a pass over every
   * statement per distinct key, quadratic in a long file.
   */
  complete: boolean;
  /** Keys dropped from a complete memo since (merged again one by one when asked). */
  readonly stale: Set<string>;
  /**
   * The arrays of dropped keys: a key merged again to the same values gets its old array back, so a list
   * keeps its identity while its contents are unchanged (an edit to one method of a one-class file
   * changes the class statement, which holds nearly every key, but few keys' values).
   */
  readonly retired: Map<string, V[]>;
  /** Bumped whenever a key of the memo is dropped (see IndexDef.stamp). */
  generation: number;
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
class MergedIndex<V> implements Store {
  readonly kind = 'index';
  private readonly parts = new WeakMap<SyntaxNode, ReadonlyMap<string, readonly V[]>>();
  private readonly byFile = new WeakMap<SourceFile, Lineage<V>>();
  private lineages: Lineage<V>[] = [];
  private generations = 0;

  constructor(private readonly partOf: (file: SourceFile, unit: SyntaxNode) => ReadonlyMap<string, readonly V[]>) {}

  get(file: SourceFile, key: string): readonly V[] {
    const lineage = this.lineageOf(file);
    let list = lineage.memo.get(key);
    if (list !== undefined) return list;
    if (!lineage.complete) {
      this.mergeAll(file, lineage);
      list = lineage.memo.get(key);
      if (list !== undefined) return list;
    }
    list = [];
    if (lineage.stale.delete(key)) {
      for (const unit of lineage.units) {
        const part = this.part(file, unit).get(key);
        if (part !== undefined) for (const v of part) list.push(v);
      }
    }
    list = this.revived(lineage, key, list);
    lineage.memo.set(key, list);
    return list;
  }

  /** `list`, or the key's dropped array when that holds the same values (see Lineage.retired). */
  private revived(lineage: Lineage<V>, key: string, list: V[]): V[] {
    const old = lineage.retired.get(key);
    if (old === undefined) return list;
    lineage.retired.delete(key);
    return sameValues(old, list) ? old : list;
  }

  /** Merges every key of every unit (keeping the arrays of keys already merged), then the memo is complete. */
  private mergeAll(file: SourceFile, lineage: Lineage<V>): void {
    const fresh = new Map<string, V[]>();
    for (const unit of lineage.units) {
      for (const [key, part] of this.part(file, unit)) {
        if (lineage.memo.has(key)) continue;
        let list = fresh.get(key);
        if (list === undefined) fresh.set(key, (list = []));
        for (const v of part) list.push(v);
      }
    }
    for (const [key, list] of fresh) lineage.memo.set(key, this.revived(lineage, key, list));
    lineage.complete = true;
    lineage.stale.clear();
    // A retired key no unit has any more: its next list is a new empty one.
    lineage.retired.clear();
  }

  stamp(file: SourceFile): string {
    return `${this.lineageOf(file).generation}`;
  }

  private part(file: SourceFile, unit: SyntaxNode): ReadonlyMap<string, readonly V[]> {
    let part = this.parts.get(unit);
    if (part === undefined) {
      part = this.partOf(file, unit);
      this.parts.set(unit, part);
    }
    return part;
  }

  private fresh(file: SourceFile, units: readonly SyntaxNode[]): Lineage<V> {
    return { file, units, memo: new Map(), complete: false, stale: new Set(), retired: new Map(), generation: ++this.generations };
  }

  private lineageOf(file: SourceFile): Lineage<V> {
    let lineage = this.byFile.get(file);
    if (lineage !== undefined) {
      if (lineage.file === file) return lineage;
      // An older version than the lineage's: it gets a memo of its own.
      lineage = this.fresh(file, [...file.root.children]);
      this.byFile.set(file, lineage);
      return lineage;
    }
    const units = [...file.root.children];
    lineage = this.advance(file, units) ?? this.fresh(file, units);
    if (!this.lineages.includes(lineage)) this.lineages = [lineage, ...this.lineages.slice(0, 3)];
    this.byFile.set(file, lineage);
    return lineage;
  }

  /** Drops a key's merged values (true when it had some); a complete memo remembers to merge it again. */
  private drop(lineage: Lineage<V>, key: string): boolean {
    if (lineage.complete) lineage.stale.add(key);
    const list = lineage.memo.get(key);
    if (list === undefined) return false;
    // The first array dropped is the one readers hold (a key may be dropped again before it is merged).
    if (!lineage.retired.has(key)) lineage.retired.set(key, list);
    return lineage.memo.delete(key);
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
      // No statement in common is not close, unless the file is one statement that the edit replaced (a
      // giant class or `main()`): moving that lineage on keeps the arrays of keys whose values are unchanged.
      const oneReplaced = removed.length === 1 && added.length === 1;
      if (removed.length + added.length > MAX_CHANGED_UNITS || (prefix + suffix === 0 && old.length > 0 && !oneReplaced)) continue;
      let dropped = false;
      for (const unit of removed) {
        const part = this.parts.get(unit);
        if (part === undefined) {
          // Never split into parts: no merge ran since it appeared, so nothing merged is kept.
          lineage.memo.clear();
          lineage.complete = false;
          lineage.stale.clear();
          lineage.retired.clear();
          dropped = true;
          break;
        }
        for (const key of part.keys()) dropped = this.drop(lineage, key) || dropped;
      }
      for (const unit of added) for (const key of this.part(file, unit).keys()) dropped = this.drop(lineage, key) || dropped;
      // A key that no changed statement has keeps its array; any other change moves the stamp.
      if (dropped || removed.length + added.length > 0) lineage.generation = ++this.generations;
      lineage.file = file;
      lineage.units = units;
      return lineage;
    }
    return null;
  }
}

/**
 * Whether two merged lists hold the same values: the same objects, or plain records (an index's own
 * value objects, rebuilt when their statement is walked again) whose fields are the same objects.
 */
function sameValues<V>(a: readonly V[], b: readonly V[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !sameRecord(a[i], b[i])) return false;
  return true;
}

function sameRecord(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => (a as Record<string, unknown>)[k] === (b as Record<string, unknown>)[k]);
}
