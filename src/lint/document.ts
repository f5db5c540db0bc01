// One open Python document: a tree-sitter tree kept in sync by incremental reparse, and the plain-JS
// mirror (SourceFile) the rules read. Top-level statements that an edit did not touch keep their
// mirrored subtrees (shifted), so a one-character edit costs one statement's copy, not the file's.
import type * as TS from 'web-tree-sitter';
import type { PythonParser } from './parser';
import { positionIn, SourceFile, spliceLineStarts, type NodeIndex, type SyntaxNode } from './syntax';

/** A change as VS Code reports it: replace `rangeLength` units at `rangeOffset` by `text`. */
export interface TextChange {
  readonly rangeOffset: number;
  readonly rangeLength: number;
  readonly text: string;
}

interface Unit {
  readonly node: SyntaxNode;
  readonly index: NodeIndex;
}

export class PythonDocument {
  private tree: TS.Tree;
  private units: Unit[];
  private file: SourceFile;
  private readonly tables: NodeTables;
  /** Whether the last tree parsed as a module; when the whole file is one ERROR, its children carry fields. */
  private rootIsModule = false;

  constructor(
    private readonly py: PythonParser,
    text: string,
  ) {
    this.tables = nodeTables(py.language);
    this.tree = parseOrThrow(py, text, null);
    this.units = [];
    this.file = this.mirror(text, []);
  }

  get source(): SourceFile {
    return this.file;
  }

  get text(): string {
    return this.file.text;
  }

  /** Applies changes (in the order given, each against the text left by the previous one). */
  update(changes: readonly TextChange[]): SourceFile {
    let text = this.file.text;
    let lineStarts = this.file.lineStarts;
    const spans: EditSpan[] = [];
    for (const ch of changes) {
      const start = ch.rangeOffset;
      const oldEnd = start + ch.rangeLength;
      const newText = text.slice(0, start) + ch.text + text.slice(oldEnd);
      const newEnd = start + ch.text.length;
      const startPosition = toPoint(positionIn(lineStarts, start));
      const oldEndPosition = toPoint(positionIn(lineStarts, oldEnd));
      const newLineStarts = spliceLineStarts(lineStarts, newText, start, oldEnd, ch.text.length);
      const newEndPosition = toPoint(positionIn(newLineStarts, newEnd));
      this.tree.edit(
        new this.py.ts.Edit({ startIndex: start, oldEndIndex: oldEnd, newEndIndex: newEnd, startPosition, oldEndPosition, newEndPosition }),
      );
      spans.push({ start, oldEnd, newEnd });
      text = newText;
      lineStarts = newLineStarts;
    }
    const oldTree = this.tree;
    const newTree = parseOrThrow(this.py, text, oldTree);
    const changed = oldTree.getChangedRanges(newTree).map((r) => [r.startIndex, r.endIndex] as const);
    oldTree.delete();
    this.tree = newTree;
    this.file = this.mirror(text, spans, changed, lineStarts);
    return this.file;
  }

  /** Replaces the whole text (no incremental reuse). */
  reset(text: string): SourceFile {
    this.tree.delete();
    this.tree = parseOrThrow(this.py, text, null);
    this.units = [];
    this.file = this.mirror(text, []);
    return this.file;
  }

  dispose(): void {
    this.tree.delete();
    this.units = [];
  }

  private mirror(text: string, spans: readonly EditSpan[], changed: readonly (readonly [number, number])[] = [], lineStarts?: number[]): SourceFile {
    const root: SyntaxNode = { type: 'module', named: true, field: null, missing: false, start: 0, end: text.length, children: [], parent: null };
    const units = (spans.length === 1 ? this.mirrorAround(root, spans[0], changed) : null) ?? this.mirrorAll(root, spans, changed);
    for (const unit of units) {
      unit.node.parent = root;
      root.children.push(unit.node);
    }
    this.units = units;
    this.rootIsModule = this.tree.rootNode.type === 'module';
    return new SourceFile(
      text,
      root,
      units.map((u) => u.index),
      lineStarts,
    );
  }

  /** Every top-level statement from the cursor: old ones reused where the edits left them intact. */
  private mirrorAll(root: SyntaxNode, spans: readonly EditSpan[], changed: readonly (readonly [number, number])[]): Unit[] {
    const units: Unit[] = [];
    const cursor = this.tree.rootNode.walk();
    try {
      if (cursor.gotoFirstChild()) {
        const next = this.unitMatcher(root, spans, changed, this.units);
        do units.push(next(cursor));
        while (cursor.gotoNextSibling());
      }
    } finally {
      cursor.delete();
    }
    return units;
  }

  /**
   * One edit: the statements wholly before it (and before every changed range) are the old ones,
   * unchanged; those wholly after it are the old ones shifted. Only the statements in between are read
   * from the tree, so a keystroke costs the edited statement, not a walk over every statement.
   * Null when the new tree does not line up with that expectation (then everything is walked).
   */
  private mirrorAround(root: SyntaxNode, span: EditSpan, changed: readonly (readonly [number, number])[]): Unit[] | null {
    const old = this.units;
    const rootNode = this.tree.rootNode;
    if (!this.rootIsModule || rootNode.type !== 'module') return null;
    const delta = span.newEnd - span.oldEnd;
    let lo = span.start;
    let hi = span.newEnd;
    for (const [s, e] of changed) {
      lo = Math.min(lo, s);
      hi = Math.max(hi, e);
    }
    let before = 0;
    while (before < old.length && old[before].node.end < lo) before++;
    let after = old.length;
    while (after > before && old[after - 1].node.start > span.oldEnd && old[after - 1].node.start + delta > hi) after--;
    const tail = old.slice(after);
    const tailStart = tail.length > 0 ? tail[0].node.start + delta : -1;
    const units = old.slice(0, before);
    const cursor = rootNode.walk();
    try {
      // First check that the new tree lines up, touching nothing, so that the fallback starts clean.
      const prefixEnd = before > 0 ? old[before - 1].node.end : 0;
      const toFirstMiddle = (): boolean => (before === 0 ? cursor.gotoFirstChild() : cursor.gotoFirstChildForIndex(prefixEnd) && cursor.startIndex >= prefixEnd);
      let middle = 0;
      if (!toFirstMiddle()) return old.length === 0 ? [] : null;
      for (;;) {
        if (tail.length > 0 && cursor.startIndex >= tailStart) {
          if (cursor.startIndex !== tailStart || cursor.nodeType !== tail[0].node.type) return null;
          break;
        }
        middle++;
        if (!cursor.gotoNextSibling()) {
          if (tail.length > 0) return null;
          break;
        }
      }
      // Changed ranges cannot describe zero-width nodes (an empty ERROR appearing or vanishing at the
      // top level), so the statement count must agree as well.
      if (rootNode.childCount !== before + middle + tail.length) return null;
      cursor.reset(rootNode);
      toFirstMiddle();
      const next = this.unitMatcher(root, [span], changed, old.slice(before, after));
      for (let i = 0; i < middle; i++) {
        units.push(next(cursor));
        cursor.gotoNextSibling();
      }
    } finally {
      cursor.delete();
    }
    if (delta !== 0) for (const unit of tail) shift(unit.node, delta);
    for (const unit of tail) units.push(unit);
    return units;
  }

  /** Mirrors the top-level statement under the cursor, reusing a matching old one (whole or in part). */
  private unitMatcher(root: SyntaxNode, spans: readonly EditSpan[], changed: readonly (readonly [number, number])[], candidates: readonly Unit[]): (cursor: TS.TreeCursor) => Unit {
    // Old units keyed by where their start sits after the edits; candidates for whole or partial reuse.
    const oldUnits = new Map<string, Unit>();
    if (spans.length > 0) {
      for (const unit of candidates) {
        const start = mapOffset(unit.node.start, spans);
        if (start !== null) oldUnits.set(`${unit.node.type}:${start}`, unit);
      }
    }
    const reconciler = new Reconciler(spans, changed, this.tables);
    return (cursor) => {
      const old = oldUnits.get(`${cursor.nodeType}:${cursor.startIndex}`);
      if (old === undefined) {
        const index: NodeIndex = new Map();
        return { node: copySubtree(cursor, root, this.tables, index), index };
      }
      const node = reconciler.reconcile(cursor, old.node, root, 0);
      // A unit reused whole keeps its index; anything rebuilt is re-indexed by a cheap JS walk.
      return node === old.node ? old : { node, index: indexSubtree(node) };
    };
  }
}

/** Past this depth a changed subtree is copied rather than reconciled (keeps recursion shallow). */
const MAX_RECONCILE_DEPTH = 256;

/**
 * Rebuilds the mirror of a changed node, reusing (shifted) every old child subtree that sits at the
 * same place after the edits and that tree-sitter reports unchanged, so an edit inside a long
 * function re-copies the path to the edit, not the function.
 */
class Reconciler {
  constructor(
    private readonly spans: readonly EditSpan[],
    private readonly changed: readonly (readonly [number, number])[],
    private readonly tables: NodeTables,
  ) {}

  reconcile(cursor: TS.TreeCursor, old: SyntaxNode, parent: SyntaxNode, depth: number): SyntaxNode {
    const type = cursor.nodeType;
    const start = cursor.startIndex;
    const end = cursor.endIndex;
    if (old.type === type) {
      const mapped = mapRange(old.start, old.end, this.spans);
      if (mapped !== null && mapped.start === start && mapped.end === end && !intersectsAny(start, end, this.changed) && old.field === cursor.currentFieldName) {
        if (mapped.start !== old.start) shift(old, mapped.start - old.start);
        old.parent = parent;
        return old;
      }
    }
    if (old.type !== type || depth > MAX_RECONCILE_DEPTH) return copySubtree(cursor, parent, this.tables);
    const node: SyntaxNode = {
      type,
      named: cursor.nodeIsNamed,
      field: cursor.currentFieldName,
      missing: cursor.nodeIsMissing,
      start,
      end,
      children: [],
      parent,
    };
    const oldChildren = new Map<string, SyntaxNode>();
    for (const c of old.children) {
      const s = mapOffset(c.start, this.spans);
      if (s !== null) oldChildren.set(`${c.type}:${s}`, c);
    }
    if (cursor.gotoFirstChild()) {
      do {
        const match = oldChildren.get(`${cursor.nodeType}:${cursor.startIndex}`);
        node.children.push(match === undefined ? copySubtree(cursor, node, this.tables) : this.reconcile(cursor, match, node, depth + 1));
      } while (cursor.gotoNextSibling());
      cursor.gotoParent();
    }
    return node;
  }
}

interface EditSpan {
  readonly start: number;
  readonly oldEnd: number;
  readonly newEnd: number;
}

/** Where [start, end) sits after the edits, or null when an edit touches it. */
function mapRange(start: number, end: number, spans: readonly EditSpan[]): { start: number; end: number } | null {
  let s = start;
  let e = end;
  for (const span of spans) {
    if (e < span.start) continue; // entirely before: unchanged
    if (s > span.oldEnd) {
      const delta = span.newEnd - span.oldEnd;
      s += delta;
      e += delta;
      continue;
    }
    return null; // overlaps or touches the edit
  }
  return { start: s, end: e };
}

/** Where an offset sits after the edits, or null when an edit covers or touches it. */
function mapOffset(offset: number, spans: readonly EditSpan[]): number | null {
  let o = offset;
  for (const span of spans) {
    if (o < span.start) continue;
    if (o > span.oldEnd) {
      o += span.newEnd - span.oldEnd;
      continue;
    }
    return null;
  }
  return o;
}

function intersectsAny(start: number, end: number, ranges: readonly (readonly [number, number])[]): boolean {
  for (const [s, e] of ranges) if (s < end && start < e) return true;
  return false;
}

function shift(node: SyntaxNode, delta: number): void {
  const stack = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    n.start += delta;
    n.end += delta;
    for (const c of n.children) stack.push(c);
  }
}

/** Per-language lookups that turn the cursor's numeric ids into the mirror's strings without a wasm call. */
interface NodeTables {
  readonly types: readonly string[];
  readonly named: readonly boolean[];
  readonly fields: readonly (string | null)[];
}

const tablesByLanguage = new WeakMap<TS.Language, NodeTables>();

function nodeTables(language: TS.Language): NodeTables {
  let tables = tablesByLanguage.get(language);
  if (tables === undefined) {
    const types: string[] = [];
    const named: boolean[] = [];
    for (let id = 0; id < language.nodeTypeCount; id++) {
      types.push(language.types[id] ?? 'ERROR');
      named.push(language.nodeTypeIsNamed(id));
    }
    tables = { types, named, fields: language.fields.map((f) => f ?? null) };
    tablesByLanguage.set(language, tables);
  }
  return tables;
}

const ERROR_TYPE_ID = 65535;
/** Shared by every leaf: no node gets children after it is built, so one frozen array serves all. */
const NO_CHILDREN: SyntaxNode[] = Object.freeze([] as SyntaxNode[]) as SyntaxNode[];

type MutableNode = { -readonly [K in keyof SyntaxNode]: SyntaxNode[K] };

/**
 * Copies the subtree under the cursor into plain objects; the cursor ends where it started. Each
 * wasm call marshals the cursor, so per node it asks only for the type and field ids, the offsets
 * and the moves (names and namedness come from per-language tables; MISSING is asked of empty
 * nodes only). `index` (by type, document order) is filled on the way.
 */
function copySubtree(cursor: TS.TreeCursor, parent: SyntaxNode | null, tables: NodeTables, index?: NodeIndex): SyntaxNode {
  const { types, named, fields } = tables;
  const make = (p: SyntaxNode | null): MutableNode => {
    const typeId = cursor.nodeTypeId;
    const type = typeId === ERROR_TYPE_ID ? 'ERROR' : types[typeId] ?? cursor.nodeType;
    const node: MutableNode = {
      type,
      named: typeId === ERROR_TYPE_ID || (named[typeId] ?? cursor.nodeIsNamed),
      field: fields[cursor.currentFieldId] ?? null,
      missing: false,
      start: cursor.startIndex,
      end: cursor.endIndex,
      children: NO_CHILDREN,
      parent: p,
    };
    if (node.start === node.end) node.missing = cursor.nodeIsMissing;
    if (index !== undefined) {
      const list = index.get(type);
      if (list === undefined) index.set(type, [node]);
      else list.push(node);
    }
    return node;
  };
  const top = make(parent);
  if (!cursor.gotoFirstChild()) return top;
  // Iterative descent: deeply nested expressions must not overflow the JS stack.
  const stack: MutableNode[] = [top];
  top.children = [];
  for (;;) {
    const p = stack[stack.length - 1];
    const node = make(p);
    p.children.push(node);
    if (cursor.gotoFirstChild()) {
      node.children = [];
      stack.push(node);
      continue;
    }
    while (!cursor.gotoNextSibling()) {
      cursor.gotoParent();
      stack.pop();
      if (stack.length === 0) return top; // back at the subtree's own node
    }
  }
}

/** Every node of a subtree by type, in document order. */
function indexSubtree(root: SyntaxNode): NodeIndex {
  const index: NodeIndex = new Map();
  const stack = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    let list = index.get(n.type);
    if (list === undefined) index.set(n.type, (list = []));
    list.push(n);
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
  }
  return index;
}

function toPoint(p: { line: number; character: number }): TS.Point {
  return { row: p.line, column: p.character };
}

function parseOrThrow(py: PythonParser, text: string, old: TS.Tree | null): TS.Tree {
  const tree = py.parser.parse(text, old ?? undefined);
  // Only a cancelled or timed-out parse returns null, and neither is requested here.
  if (tree === null) throw new Error('tree-sitter returned no tree');
  return tree;
}
