// One open Python document: a tree-sitter tree kept in sync by incremental reparse, and the plain-JS
// mirror (SourceFile) the rules read. Top-level statements that an edit did not touch keep their
// mirrored subtrees (shifted), so a one-character edit costs one statement's copy, not the file's.
import type * as TS from 'web-tree-sitter';
import type { PythonParser } from './parser';
import { computeLineStarts, positionIn, SourceFile, type NodeIndex, type SyntaxNode } from './syntax';

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

  constructor(
    private readonly py: PythonParser,
    text: string,
  ) {
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
      const newLineStarts = computeLineStarts(newText);
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
    this.file = this.mirror(text, spans, changed);
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

  private mirror(text: string, spans: readonly EditSpan[], changed: readonly (readonly [number, number])[] = []): SourceFile {
    // Old units keyed by where they sit after the edits; units an edit touched are dropped.
    const reusable = new Map<string, { unit: Unit; delta: number }>();
    if (spans.length > 0) {
      for (const unit of this.units) {
        const mapped = mapRange(unit.node.start, unit.node.end, spans);
        if (mapped !== null) reusable.set(`${unit.node.type}:${mapped.start}:${mapped.end}`, { unit, delta: mapped.start - unit.node.start });
      }
    }
    const root: SyntaxNode = {
      type: 'module',
      named: true,
      field: null,
      missing: false,
      start: 0,
      end: text.length,
      children: [],
      parent: null,
    };
    const rootNode = this.tree.rootNode;
    const units: Unit[] = [];
    const cursor = rootNode.walk();
    try {
      if (cursor.gotoFirstChild()) {
        do {
          const type = cursor.nodeType;
          const start = cursor.startIndex;
          const end = cursor.endIndex;
          const hit = reusable.get(`${type}:${start}:${end}`);
          let unit: Unit;
          if (hit !== undefined && !intersectsAny(start, end, changed)) {
            if (hit.delta !== 0) shift(hit.unit.node, hit.delta);
            unit = hit.unit;
          } else {
            unit = copyUnit(cursor);
          }
          unit.node.parent = root;
          root.children.push(unit.node);
          units.push(unit);
        } while (cursor.gotoNextSibling());
      }
    } finally {
      cursor.delete();
    }
    this.units = units;
    return new SourceFile(
      text,
      root,
      units.map((u) => u.index),
    );
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

/** Copies the subtree under the cursor into plain objects, indexing every node by type. */
function copyUnit(cursor: TS.TreeCursor): Unit {
  const index: NodeIndex = new Map();
  const make = (parent: SyntaxNode | null): SyntaxNode => {
    const node: SyntaxNode = {
      type: cursor.nodeType,
      named: cursor.nodeIsNamed,
      field: cursor.currentFieldName,
      missing: cursor.nodeIsMissing,
      start: cursor.startIndex,
      end: cursor.endIndex,
      children: [],
      parent,
    };
    let list = index.get(node.type);
    if (list === undefined) index.set(node.type, (list = []));
    list.push(node);
    return node;
  };
  const top = make(null);
  // Iterative descent: deeply nested expressions must not overflow the JS stack.
  const stack: SyntaxNode[] = [top];
  if (cursor.gotoFirstChild()) {
    for (;;) {
      const parent = stack[stack.length - 1];
      const node = make(parent);
      parent.children.push(node);
      if (cursor.gotoFirstChild()) {
        stack.push(node);
        continue;
      }
      while (!cursor.gotoNextSibling()) {
        cursor.gotoParent();
        if (stack.length === 1) return { node: top, index }; // back at the unit's own node
        stack.pop();
      }
    }
  }
  return { node: top, index };
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
