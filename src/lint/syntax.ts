// A plain-JS mirror of the tree-sitter tree. Rules walk it many times; crossing into wasm for every
// node access would cost more than the parse itself, so the tree is copied once per top-level
// statement and reused across incremental edits (see document.ts).

export interface SyntaxNode {
  /** tree-sitter-python node type: 'call', 'identifier', '+=', 'ERROR', ... */
  readonly type: string;
  /** Named node (not punctuation or a keyword). */
  readonly named: boolean;
  /** Field name in the parent ('function', 'arguments', 'left', ...), or null. */
  readonly field: string | null;
  /** Inserted by error recovery; has no text. */
  readonly missing: boolean;
  /** UTF-16 offsets into SourceFile.text. Mutable only so reused subtrees can be shifted. */
  start: number;
  end: number;
  /** Never mutated once the node is published (leaves share one empty array, see document.ts). */
  readonly children: readonly SyntaxNode[];
  parent: SyntaxNode | null;
}

export type NodeIndex = Map<string, SyntaxNode[]>;

/**
 * What a mirrored node is, apart from where it is: its type, field, namedness and MISSING flag. A
 * document interns one per combination (a few hundred), so each node holds one reference instead of
 * four fields (see MirrorNode).
 */
export interface NodeKind {
  readonly type: string;
  readonly named: boolean;
  readonly field: string | null;
  readonly missing: boolean;
}

/**
 * The mirror's node. A class of six fields rather than an object of eight: V8 here (no pointer
 * compression) spends 8 bytes per field and 24 per header, so a node takes 72 bytes instead of 88 (the
 * mirror has one node per ~3 characters of source). `named`, `field` and `missing` are read through the
 * kind; one class keeps every read site monomorphic.
 */
export class MirrorNode implements SyntaxNode {
  /**
   * The kind's type, kept as a field of its own: the rules compare it at nearly every node they visit,
   * and a getter is a call until V8 optimises the caller (a one-shot lint runs much code unoptimised).
   * Reading it through the kind would save 8 more bytes per node.
   */
  readonly type: string;

  constructor(
    readonly kind: NodeKind,
    public start: number,
    public end: number,
    public children: SyntaxNode[],
    public parent: SyntaxNode | null,
  ) {
    this.type = kind.type;
  }

  get named(): boolean {
    return this.kind.named;
  }

  get field(): string | null {
    return this.kind.field;
  }

  get missing(): boolean {
    return this.kind.missing;
  }
}

/** Not frozen, for the reason the mirror's leaves share an unfrozen array (document.ts, NO_CHILDREN); readonly to callers. */
const NO_NODES: readonly SyntaxNode[] = [];

export interface Position {
  /** 0-based line. */
  readonly line: number;
  /** 0-based UTF-16 column. */
  readonly character: number;
}

import type { AnalysisSession } from './session';

/**
 * One version of a parsed Python file: text, tree and a by-type index in document order. It belongs
 * to the analysis session of its document, which holds every memo computed from it.
 */
export class SourceFile {
  private readonly merged = new Map<string, readonly SyntaxNode[]>();
  private lineStartsCache: number[] | null = null;
  private unitPositions: Map<SyntaxNode, number> | null = null;

  constructor(
    readonly text: string,
    readonly root: SyntaxNode,
    /** One index per top-level statement, in order; merged lazily per type. */
    private readonly unitIndexes: readonly NodeIndex[],
    /** Known line starts (the document keeps them current across edits). */
    lineStarts: number[] | undefined,
    /** The session of the document this version belongs to. */
    readonly session: AnalysisSession,
  ) {
    this.lineStartsCache = lineStarts ?? null;
  }

  /** Every node of `type` in the file, in document order. */
  nodesOfType(type: string): readonly SyntaxNode[] {
    let nodes = this.merged.get(type);
    if (nodes === undefined) {
      const all: SyntaxNode[] = [];
      for (const index of this.unitIndexes) {
        const part = index.get(type);
        if (part !== undefined) for (const n of part) all.push(n);
      }
      nodes = all;
      this.merged.set(type, nodes);
    }
    return nodes;
  }

  /** Every node of `type` in one top-level statement (a child of `root`), in document order, from its own index. */
  nodesOfTypeInUnit(unit: SyntaxNode, type: string): readonly SyntaxNode[] {
    if (this.unitPositions === null) {
      this.unitPositions = new Map();
      this.root.children.forEach((u, i) => this.unitPositions!.set(u, i));
    }
    const at = this.unitPositions.get(unit);
    if (at === undefined) throw new Error(`not a top-level statement of this file: ${unit.type}@${unit.start}`);
    return this.unitIndexes[at].get(type) ?? NO_NODES;
  }

  textOf(node: SyntaxNode): string {
    return this.text.slice(node.start, node.end);
  }

  get lineStarts(): number[] {
    if (this.lineStartsCache === null) this.lineStartsCache = computeLineStarts(this.text);
    return this.lineStartsCache;
  }

  positionAt(offset: number): Position {
    return positionIn(this.lineStarts, offset);
  }

  /** 0-based line of an offset. */
  lineOf(offset: number): number {
    return positionIn(this.lineStarts, offset).line;
  }

  /** Text of a 0-based line without its line break. */
  lineText(line: number): string {
    const starts = this.lineStarts;
    const start = starts[line] ?? this.text.length;
    let end = line + 1 < starts.length ? starts[line + 1] : this.text.length;
    while (end > start && (this.text[end - 1] === '\n' || this.text[end - 1] === '\r')) end--;
    return this.text.slice(start, end);
  }
}

export function computeLineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 10) starts.push(i + 1);
    else if (ch === 13) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    }
  }
  return starts;
}

/**
 * Line starts after replacing text[start, oldEnd) by `inserted`, derived from the old ones: only the
 * edited lines are rescanned, the rest are shifted (a keystroke must not rescan the whole file).
 */
export function spliceLineStarts(old: readonly number[], newText: string, start: number, oldEnd: number, inserted: number): number[] {
  const delta = inserted - (oldEnd - start);
  // Lines starting at or before `start` are unchanged, except that a CR right before `start`
  // may now pair with an inserted LF: rescan from the line before, to be safe.
  const firstLine = Math.max(0, positionIn(old, start).line - 1);
  const rescanFrom = old[firstLine];
  const middle: number[] = [];
  const rescanTo = Math.min(newText.length, start + inserted + 1);
  for (let i = rescanFrom; i < rescanTo; i++) {
    const ch = newText.charCodeAt(i);
    if (ch === 10) middle.push(i + 1);
    else if (ch === 13) {
      if (newText.charCodeAt(i + 1) === 10) i++;
      middle.push(i + 1);
    }
  }
  // Old line starts past the edit move by `delta`; those the rescan already covered are dropped.
  const last = middle.length > 0 ? middle[middle.length - 1] : rescanFrom;
  let tail = firstAbove(old, oldEnd + 1);
  while (tail < old.length && old[tail] + delta <= last) tail++;
  // A replacement that moves nothing and leaves the same line breaks keeps the (never mutated) old array.
  if (delta === 0 && tail - (firstLine + 1) === middle.length && middle.every((m, k) => m === old[firstLine + 1 + k])) return old as number[];
  const out = old.slice(0, firstLine + 1);
  for (const m of middle) out.push(m);
  for (let k = tail; k < old.length; k++) out.push(old[k] + delta);
  return out;
}

/** Index of the first of sorted `values` above `x`. */
function firstAbove(values: readonly number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function positionIn(lineStarts: readonly number[], offset: number): Position {
  let lo = 0;
  let hi = lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lineStarts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo, character: offset - lineStarts[lo] };
}

// ---- Tree helpers for rules -------------------------------------------------------------------

export function childByField(node: SyntaxNode, field: string): SyntaxNode | null {
  for (const c of node.children) if (c.field === field) return c;
  return null;
}

export function childrenByField(node: SyntaxNode, field: string): SyntaxNode[] {
  return node.children.filter((c) => c.field === field);
}

/**
 * Comments and `\` line continuations are named "extra" nodes the grammar allows anywhere: they are not
 * elements of the node (`a, b = DataLoader(...), \<newline> DataLoader(...)` has two values, not three).
 */
function isExtra(c: SyntaxNode): boolean {
  return c.type === 'comment' || c.type === 'line_continuation';
}

export function namedChildren(node: SyntaxNode): SyntaxNode[] {
  return node.children.filter((c) => c.named && !isExtra(c));
}

export function firstNamedChild(node: SyntaxNode): SyntaxNode | null {
  for (const c of node.children) if (c.named && !isExtra(c)) return c;
  return null;
}

/** Pre-order walk; return false from `visit` to skip a node's children. */
export function walk(node: SyntaxNode, visit: (n: SyntaxNode) => boolean | void): void {
  const stack: SyntaxNode[] = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (visit(n) === false) continue;
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
}

/** Index of the first node (of nodes sorted by start) starting at or after `offset`: a range scan starts here, not at 0. */
export function firstStartingAtOrAfter(nodes: readonly SyntaxNode[], offset: number): number {
  let lo = 0;
  let hi = nodes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (nodes[mid].start < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function contains(outer: SyntaxNode, inner: SyntaxNode): boolean {
  return outer.start <= inner.start && inner.end <= outer.end;
}

