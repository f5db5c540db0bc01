// One open Python document: tree-sitter trees kept in sync by incremental reparse, and the plain-JS
// mirror (SourceFile) the rules read. Top-level statements that an edit did not touch keep their
// mirrored subtrees (shifted), so a one-character edit costs one statement's copy, not the file's;
// and a long file is also parsed in chunks of statements, so it costs one chunk's reparse.
import type * as TS from 'web-tree-sitter';
import type { PythonParser } from './parser';
import { AnalysisSession } from './session';
import type { ProjectContext } from './project/types';
import { computeLineStarts, MirrorNode, positionIn, SourceFile, spliceLineStarts, type NodeIndex, type NodeKind, type SyntaxNode } from './syntax';
import { pushReused, spliceIndex, type IndexSegment } from './unit-index';
import { PublicWalk, type CursorWalk } from './raw-cursor';

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

/**
 * A run of whole top-level statements parsed as a file of its own. tree-sitter-python's
 * incremental reparse re-lexes every top-level statement (its module-level repetition nodes are
 * "fragile", so they are never reused whole): a keystroke costs the file. Reparsing only the chunk
 * that holds the edit costs the chunk. A chunk starts at a line start in column 0, so while every
 * chunk parses without errors, the chunks' statements are exactly the whole file's (tested over a
 * corpus and random edits); as soon as one has errors the whole-file tree decides.
 */
interface Chunk {
  /** Offsets in the document's text; `end` is the next chunk's `start` (or the text's length). */
  start: number;
  end: number;
  /** Parsed from text.slice(start, end) (offsets relative to `start`); null when it must be parsed afresh. */
  tree: TS.Tree | null;
  /** Edited since `tree` was parsed. */
  edited: boolean;
}

/** A chunk holds at least this many lines (the last one may hold fewer). */
const DEFAULT_CHUNK_LINES = 120;
/** The same for a one-shot document's parse (mirrorOneShot): big enough that cuts are rare, small enough to bound the wasm memory. */
const ONE_SHOT_CHUNK_LINES = 1000;
/** Chunks a one-shot parse joins to get past errors before it parses the whole file. */
const MAX_CHUNK_RETRIES = 3;

export interface DocumentOptions {
  /** Lines per chunk; 0 turns chunked reparsing off. */
  readonly chunkLines?: number;
  /** The project the file belongs to, for rules that follow its imports into other files (project/types.ts). */
  readonly project?: ProjectContext;
  /**
   * The document is analysed as it is and never updated (a one-shot lint): its session skips the memo
   * keys that only serve later versions (AnalysisSession.oneShot); `update` and `reset` throw.
   */
  readonly oneShot?: boolean;
}

export class PythonDocument {
  /**
   * The whole file's tree: edited on every change but reparsed only when the mirror must follow it.
   * Null in a one-shot document, which keeps no tree once mirrored (see mirrorOneShot).
   */
  private tree: TS.Tree | null;
  private units: Unit[];
  private file: SourceFile;
  private readonly tables: NodeTables;
  private readonly chunkLines: number;
  /** Whether the last tree parsed as a module; when the whole file is one ERROR, its children carry fields. */
  private rootIsModule = false;
  /** Null until the first edit of a file long enough to split, or after splitting failed. */
  private chunks: Chunk[] | null = null;
  /** Whether the mirror follows the chunks: every chunk and the whole file parsed without errors. */
  private chunked = false;
  /** Regions the mirror took from chunks since the whole-file tree was last parsed. */
  private dirty: [number, number][] = [];
  /** Updates to wait before splitting again after a split failed. */
  private splitBackoff = 0;
  /** How updates were parsed: one chunk, or the whole file (for tests and benchmarks). */
  readonly reparses = { chunk: 0, whole: 0 };
  /** Owns every memo, index and intern table computed from this document's versions; dropped with it. */
  readonly session: AnalysisSession;

  constructor(
    private readonly py: PythonParser,
    text: string,
    options: DocumentOptions = {},
  ) {
    this.tables = nodeTables(py.language);
    this.chunkLines = options.chunkLines ?? DEFAULT_CHUNK_LINES;
    this.session = new AnalysisSession(options.project ?? null, options.oneShot ?? false);
    this.units = [];
    if (this.session.oneShot) {
      // Nothing reparses a one-shot document: it keeps no tree, so the wasm memory of its parse serves
      // the next one at once (the CLI's project index keeps up to 64 modules' documents open).
      this.tree = null;
      this.file = this.mirrorOneShot(text, options.chunkLines ?? ONE_SHOT_CHUNK_LINES);
    } else {
      this.tree = parseOrThrow(py, text, null);
      this.file = this.mirror(text, []);
    }
  }

  /** The whole-file tree of a document that is updated (never null there). */
  private liveTree(): TS.Tree {
    if (this.tree === null) throw new Error('a one-shot document keeps no tree');
    return this.tree;
  }

  get source(): SourceFile {
    return this.file;
  }

  get text(): string {
    return this.file.text;
  }

  /** Applies changes (in the order given, each against the text left by the previous one). */
  update(changes: readonly TextChange[]): SourceFile {
    this.assertUpdatable();
    let text = this.file.text;
    let lineStarts = this.file.lineStarts;
    const spans: EditSpan[] = [];
    for (const ch of changes) {
      const start = ch.rangeOffset;
      const oldEnd = start + ch.rangeLength;
      const newText = text.slice(0, start) + ch.text + text.slice(oldEnd);
      const newEnd = start + ch.text.length;
      const newLineStarts = spliceLineStarts(lineStarts, newText, start, oldEnd, ch.text.length);
      const edit: LineEdit = { start, oldEnd, newEnd, oldLineStarts: lineStarts, newLineStarts };
      this.liveTree().edit(treeEdit(this.py, edit, 0, 0));
      if (this.chunks !== null) editChunks(this.py, this.chunks, edit);
      this.dirty = mapRanges(this.dirty, edit);
      spans.push({ start, oldEnd, newEnd });
      text = newText;
      lineStarts = newLineStarts;
    }
    const fromChunk = this.chunked && spans.length === 1 ? this.updateFromChunk(text, spans[0], lineStarts) : null;
    if (fromChunk !== null) {
      this.reparses.chunk++;
      return (this.file = fromChunk);
    }
    this.reparses.whole++;
    return (this.file = this.updateFromWholeTree(text, spans, lineStarts));
  }

  /** Replaces the whole text (no incremental reuse). */
  reset(text: string): SourceFile {
    this.assertUpdatable();
    this.liveTree().delete();
    this.dropChunks();
    this.dirty = [];
    this.tree = parseOrThrow(this.py, text, null);
    this.units = [];
    this.file = this.mirror(text, []);
    return this.file;
  }

  private assertUpdatable(): void {
    // Its session's memos were keyed for this one version only.
    if (this.session.oneShot) throw new Error('a one-shot document cannot be updated');
  }

  dispose(): void {
    this.tree?.delete();
    this.tree = null;
    this.dropChunks();
    this.units = [];
  }

  /** Reparses the whole-file tree and mirrors from it; then brings the chunks up to date when it parsed cleanly. */
  private updateFromWholeTree(text: string, spans: readonly EditSpan[], lineStarts: number[]): SourceFile {
    const oldTree = this.liveTree();
    const newTree = reparse(this.py, text, oldTree);
    const changed: (readonly [number, number])[] = oldTree.getChangedRanges(newTree).map((r) => [r.startIndex, r.endIndex] as const);
    // The mirror took these regions from chunks, which the old whole-file tree never saw.
    for (const d of this.dirty) changed.push(d);
    this.dirty = [];
    oldTree.delete();
    this.tree = newTree;
    const file = this.mirror(text, spans, changed, lineStarts);
    this.chunked = !newTree.rootNode.hasError && this.syncChunks(text, lineStarts);
    return file;
  }

  /**
   * Reparses only the chunk holding the edit and mirrors its statements; null when the chunk no
   * longer stands on its own (errors, a boundary no longer at a line start) or does not line up.
   */
  private updateFromChunk(text: string, span: EditSpan, lineStarts: number[]): SourceFile | null {
    const chunks = this.chunks!;
    const k = chunkAt(chunks, span.start);
    const chunk = chunks[k];
    if (chunk.tree === null || !chunk.edited || span.newEnd > chunk.end) return null;
    if (!isChunkStart(text, chunk.start) || (k + 1 < chunks.length && !isChunkStart(text, chunk.end)) || chunk.start === chunk.end) return null;
    const oldTree = chunk.tree;
    const newTree = reparse(this.py, text.slice(chunk.start, chunk.end), oldTree);
    chunk.tree = newTree;
    chunk.edited = false;
    const changed = oldTree.getChangedRanges(newTree).map((r) => [r.startIndex + chunk.start, r.endIndex + chunk.start] as const);
    oldTree.delete();
    if (newTree.rootNode.hasError || newTree.rootNode.type !== 'module') {
      chunk.edited = true; // so that syncChunks sees the errors and merges
      return null;
    }
    const delta = span.newEnd - span.oldEnd;
    // Old units of the chunk: those starting in its old extent.
    const first = firstUnitAtOrAfter(this.units, chunk.start);
    const last = firstUnitAtOrAfter(this.units, chunk.end - delta);
    const root = newRoot(text);
    const region = this.mirrorAround(root, newTree.rootNode, chunk.start, this.units.slice(first, last), span, changed);
    if (region === null) return null;
    const tail = this.units.slice(last);
    if (delta !== 0) for (const unit of tail) shift(unit.node, delta);
    const units = this.units.slice(0, first).concat(region, tail);
    this.dirty = addRange(this.dirty, Math.min(span.start, ...changed.map((c) => c[0])), Math.max(span.newEnd, ...changed.map((c) => c[1])));
    return this.finish(root, text, units, lineStarts);
  }

  private mirror(text: string, spans: readonly EditSpan[], changed: readonly (readonly [number, number])[] = [], lineStarts?: number[]): SourceFile {
    const root = newRoot(text);
    const rootNode = this.liveTree().rootNode;
    const fast = spans.length === 1 && this.rootIsModule && rootNode.type === 'module' ? this.mirrorAround(root, rootNode, 0, this.units, spans[0], changed) : null;
    const units = fast ?? this.mirrorAll(root, rootNode, 0, this.units, spans, changed);
    this.rootIsModule = rootNode.type === 'module';
    return this.finish(root, text, units, lineStarts);
  }

  /**
   * The mirror of a one-shot document, parsed in chunks of whole top-level statements, each tree deleted
   * once copied: the wasm memory then holds one chunk's tree, not the whole file's (a tree takes about
   * 30 bytes of wasm memory per character of source, and wasm memory never shrinks). A chunk starts at
   * a line start in column 0; while every chunk parses without errors its statements are exactly the
   * whole file's (see Chunk). A chunk with errors is parsed again together with the next one (a cut
   * inside a multi-line string or before an `else:`); when that does not help, the whole file is parsed
   * as one, as a file with syntax errors must be.
   */
  private mirrorOneShot(text: string, chunkLines: number): SourceFile {
    const lineStarts = computeLineStarts(text);
    const cuts = chunkLines > 0 ? oneShotCuts(text, lineStarts, chunkLines) : [0, text.length];
    const root = newRoot(text);
    const units: Unit[] = [];
    for (let i = 0; i + 1 < cuts.length; ) {
      let end = i + 1;
      for (;;) {
        const tree = parseOrThrow(this.py, text.slice(cuts[i], cuts[end]), null);
        try {
          const whole = i === 0 && end === cuts.length - 1;
          if (whole || (!tree.rootNode.hasError && tree.rootNode.type === 'module')) {
            for (const unit of this.mirrorAll(root, tree.rootNode, cuts[i], [], [], [])) units.push(unit);
            break;
          }
        } finally {
          tree.delete();
        }
        if (end - i >= MAX_CHUNK_RETRIES || end === cuts.length - 1) return this.mirrorOneShot(text, 0);
        end++;
      }
      i = end;
    }
    return this.finish(root, text, units, lineStarts);
  }

  private finish(root: MirrorNode, text: string, units: Unit[], lineStarts?: number[]): SourceFile {
    for (const unit of units) {
      unit.node.parent = root;
      root.children.push(unit.node);
    }
    this.units = units;
    return new SourceFile(
      text,
      root,
      units.map((u) => u.index),
      lineStarts,
      this.session,
    );
  }

  /** Every top-level statement under `rootNode`: old ones reused where the edits left them intact. */
  private mirrorAll(root: SyntaxNode, rootNode: TS.Node, base: number, old: readonly Unit[], spans: readonly EditSpan[], changed: readonly (readonly [number, number])[]): Unit[] {
    const units: Unit[] = [];
    const cursor = rootNode.walk();
    try {
      if (cursor.gotoFirstChild()) {
        const next = this.unitMatcher(root, base, spans, changed, old);
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
   * `old` are the previous units that `rootNode` (a tree of text at `base`) covers. Null when the new
   * tree does not line up with that expectation (then everything is walked).
   */
  private mirrorAround(root: SyntaxNode, rootNode: TS.Node, base: number, old: readonly Unit[], span: EditSpan, changed: readonly (readonly [number, number])[]): Unit[] | null {
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
    const tailStart = tail.length > 0 ? tail[0].node.start + delta - base : -1;
    const units = old.slice(0, before);
    const cursor = rootNode.walk();
    try {
      // First check that the new tree lines up, touching nothing, so that the fallback starts clean.
      const prefixEnd = before > 0 ? old[before - 1].node.end - base : 0;
      const toFirstMiddle = (): boolean => (before === 0 ? cursor.gotoFirstChild() : cursor.gotoFirstChildForIndex(prefixEnd) && cursor.startIndex >= prefixEnd);
      let middle = 0;
      if (!toFirstMiddle()) return old.length === 0 || (before === old.length && rootNode.childCount === before) ? units : null;
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
      const next = this.unitMatcher(root, base, [span], changed, old.slice(before, after));
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
  private unitMatcher(root: SyntaxNode, base: number, spans: readonly EditSpan[], changed: readonly (readonly [number, number])[], candidates: readonly Unit[]): (cursor: TS.TreeCursor) => Unit {
    // Old units keyed by where their start sits after the edits; candidates for whole or partial reuse.
    const oldUnits = new Map<string, Unit>();
    if (spans.length > 0) {
      for (const unit of candidates) {
        const start = mapOffset(unit.node.start, spans);
        if (start !== null) oldUnits.set(`${unit.node.type}:${start}`, unit);
      }
    }
    const reconciler = new Reconciler(spans, changed, this.tables, base, this.py);
    return (cursor) => {
      const old = oldUnits.get(`${cursor.nodeType}:${cursor.startIndex + base}`);
      if (old === undefined) {
        const index: NodeIndex = new Map();
        return { node: copySubtree(this.py, cursor, root, this.tables, base, index), index };
      }
      const segments: IndexSegment[] = [];
      const node = reconciler.reconcile(cursor, old.node, root, 0, segments, null);
      // A unit reused whole keeps its index; a rebuilt one splices it from the old one (before the
      // reused parts move), or, where that cannot tell a boundary, re-indexes by a JS walk.
      const index = node === old.node ? old.index : spliceIndex(old.index, segments);
      reconciler.applyShifts();
      return node === old.node ? old : { node, index: index ?? indexSubtree(node) };
    };
  }

  /**
   * After a clean whole-file parse: splits the file into chunks if it has none, reparses the chunks
   * that were edited, and merges chunks that do not parse on their own. True when every chunk is clean.
   */
  private syncChunks(text: string, lineStarts: readonly number[]): boolean {
    if (this.chunkLines <= 0) return false;
    if (this.chunks === null) {
      if (this.splitBackoff > 0) {
        this.splitBackoff--;
        return false;
      }
      if (lineStarts.length < 2 * this.chunkLines) return false;
      this.chunks = this.splitAt(0, text.length, text, lineStarts);
    }
    const chunks = this.chunks;
    // Boundaries an edit moved off a line start, or chunks emptied, merge into a neighbour.
    for (let k = chunks.length - 1; k > 0; k--) {
      if (chunks[k].start === chunks[k].end || !isChunkStart(text, chunks[k].start)) mergeChunks(chunks, k - 1, k);
    }
    if (chunks.length > 1 && chunks[0].start === chunks[0].end) mergeChunks(chunks, 0, 1);
    for (let round = 0; ; round++) {
      let failed = -1;
      for (let k = 0; k < chunks.length && failed < 0; k++) {
        const chunk = chunks[k];
        if (chunk.tree !== null && !chunk.edited) continue;
        const tree = reparse(this.py, text.slice(chunk.start, chunk.end), chunk.tree);
        chunk.tree?.delete();
        chunk.tree = tree;
        chunk.edited = false;
        if (tree.rootNode.hasError) failed = k;
      }
      if (failed < 0) break;
      // The whole file is clean but this chunk is not: a statement spans its boundary (an `else:`
      // just after it, say). Merge with both neighbours and try again; give up after a few rounds.
      if (round >= 3 || chunks.length === 1) {
        this.dropChunks();
        this.splitBackoff = 50;
        return false;
      }
      const lo = Math.max(0, failed - 1);
      const hi = Math.min(chunks.length - 1, failed + 1);
      for (let k = hi; k > lo; k--) mergeChunks(chunks, k - 1, k);
    }
    // Merged chunks grow; split the big ones again along the (clean) whole-file tree's statements.
    for (let k = chunks.length - 1; k >= 0; k--) {
      const c = chunks[k];
      if (positionIn(lineStarts, c.end).line - positionIn(lineStarts, c.start).line < 4 * this.chunkLines) continue;
      const pieces = this.splitAt(c.start, c.end, text, lineStarts);
      if (pieces.length < 2 || pieces.some((p) => p.tree!.rootNode.hasError)) {
        for (const p of pieces) p.tree?.delete();
        continue;
      }
      c.tree?.delete();
      chunks.splice(k, 1, ...pieces);
    }
    return true;
  }

  /** Chunks of [from, to) cut at the whole-file tree's top-level statements, each parsed afresh. */
  private splitAt(from: number, to: number, text: string, lineStarts: readonly number[]): Chunk[] {
    const cuts = [from];
    let lastLine = positionIn(lineStarts, from).line;
    const cursor = this.liveTree().rootNode.walk();
    try {
      if (cursor.gotoFirstChild()) {
        do {
          const s = cursor.startIndex;
          if (s <= from || s >= to || cursor.nodeType === 'comment' || !isChunkStart(text, s)) continue;
          const line = positionIn(lineStarts, s).line;
          if (line - lastLine >= this.chunkLines) {
            cuts.push(s);
            lastLine = line;
          }
        } while (cursor.gotoNextSibling());
      }
    } finally {
      cursor.delete();
    }
    cuts.push(to);
    const chunks: Chunk[] = [];
    for (let i = 0; i + 1 < cuts.length; i++) {
      chunks.push({ start: cuts[i], end: cuts[i + 1], tree: parseOrThrow(this.py, text.slice(cuts[i], cuts[i + 1]), null), edited: false });
    }
    return chunks;
  }

  private dropChunks(): void {
    for (const c of this.chunks ?? []) c.tree?.delete();
    this.chunks = null;
    this.chunked = false;
  }
}

/** One change with the line starts before and after it (tree-sitter wants rows and columns). */
interface LineEdit {
  readonly start: number;
  readonly oldEnd: number;
  readonly newEnd: number;
  readonly oldLineStarts: readonly number[];
  readonly newLineStarts: readonly number[];
}

/** The tree-sitter edit of a tree whose text starts at `base`, on line `baseRow`, in column 0. */
function treeEdit(py: PythonParser, e: LineEdit, base: number, baseRow: number): TS.Edit {
  const point = (lineStarts: readonly number[], offset: number): TS.Point => {
    const p = positionIn(lineStarts, offset);
    return { row: p.line - baseRow, column: p.character };
  };
  return new py.ts.Edit({
    startIndex: e.start - base,
    oldEndIndex: e.oldEnd - base,
    newEndIndex: e.newEnd - base,
    startPosition: point(e.oldLineStarts, e.start),
    oldEndPosition: point(e.oldLineStarts, e.oldEnd),
    newEndPosition: point(e.newLineStarts, e.newEnd),
  });
}

/**
 * Applies an edit to the chunks: inside one chunk (starting at or after its start, ending at or
 * before its end) it edits that chunk's tree; across a boundary the chunks it spans merge into one
 * to be parsed afresh. Later chunks shift.
 */
function editChunks(py: PythonParser, chunks: Chunk[], e: LineEdit): void {
  const delta = e.newEnd - e.oldEnd;
  const k = chunkAt(chunks, e.start);
  let last = k;
  while (last + 1 < chunks.length && chunks[last + 1].start < e.oldEnd) last++;
  for (let j = last; j > k; j--) mergeChunks(chunks, j - 1, j);
  const chunk = chunks[k];
  if (chunk.tree !== null) chunk.tree.edit(treeEdit(py, e, chunk.start, positionIn(e.oldLineStarts, chunk.start).line));
  chunk.end += delta;
  chunk.edited = true;
  for (let j = k + 1; j < chunks.length; j++) {
    chunks[j].start += delta;
    chunks[j].end += delta;
  }
}

/** Merges chunk `k + 1` into chunk `k` (to be parsed afresh). */
function mergeChunks(chunks: Chunk[], k: number, k2: number): void {
  const a = chunks[k];
  const b = chunks[k2];
  a.tree?.delete();
  b.tree?.delete();
  a.tree = null;
  a.edited = true;
  a.end = b.end;
  chunks.splice(k2, 1);
}

/** Index of the last chunk starting at or before `offset`. */
function chunkAt(chunks: readonly Chunk[], offset: number): number {
  let lo = 0;
  let hi = chunks.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (chunks[mid].start <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** A chunk may start here: at a line start, on a character that begins a statement in column 0. */
function isChunkStart(text: string, offset: number): boolean {
  if (offset === 0) return true;
  if (offset >= text.length) return false;
  const prev = text.charCodeAt(offset - 1);
  if (prev !== 10 && prev !== 13) return false;
  const ch = text.charCodeAt(offset);
  // Not whitespace, a line break, a comment or a line continuation.
  return ch !== 32 && ch !== 9 && ch !== 12 && ch !== 10 && ch !== 13 && ch !== 35 && ch !== 92;
}

/**
 * Where a one-shot parse cuts the text: 0, then the first chunk start (isChunkStart) at least
 * `chunkLines` lines after the previous cut, and so on, then the text's length. Lines that continue the
 * statement before them (`else:`, `except ...:`, a decorated `def`) are not cut at.
 */
function oneShotCuts(text: string, lineStarts: readonly number[], chunkLines: number): number[] {
  const cuts = [0];
  let last = 0;
  for (let line = chunkLines; line < lineStarts.length; line++) {
    if (line - last < chunkLines) continue;
    const at = lineStarts[line];
    if (at >= text.length || !isChunkStart(text, at) || CONTINUES.test(text.slice(at, at + 8))) continue;
    // After a decorator line the definition belongs to it.
    if (line > 0 && text.charCodeAt(lineStarts[line - 1]) === 64) continue;
    cuts.push(at);
    last = line;
  }
  cuts.push(text.length);
  return cuts;
}

/** Clauses that continue a compound statement at column 0. */
const CONTINUES = /^(?:else|elif|except|finally)\b/;

/** Index of the first unit starting at or after `offset`. */
function firstUnitAtOrAfter(units: readonly Unit[], offset: number): number {
  let lo = 0;
  let hi = units.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (units[mid].node.start < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const MODULE_KIND: NodeKind = Object.freeze({ type: 'module', named: true, field: null, missing: false });

function newRoot(text: string): MirrorNode {
  return new MirrorNode(MODULE_KIND, 0, text.length, [], null);
}

/** Ranges after an edit: those it touches grow to cover the new text, later ones shift. */
function mapRanges(ranges: readonly [number, number][], e: LineEdit): [number, number][] {
  if (ranges.length === 0) return [];
  const delta = e.newEnd - e.oldEnd;
  const out: [number, number][] = [];
  for (const [s, t] of ranges) {
    if (t < e.start) out.push([s, t]);
    else if (s > e.oldEnd) out.push([s + delta, t + delta]);
    else out.push([Math.min(s, e.start), t > e.oldEnd ? t + delta : e.newEnd]);
  }
  return out;
}

/** Adds [s, e] to sorted disjoint ranges, merging overlaps; many ranges collapse to their hull. */
function addRange(ranges: readonly [number, number][], s: number, e: number): [number, number][] {
  const out: [number, number][] = [];
  let lo = s;
  let hi = e;
  for (const r of ranges) {
    if (r[1] < lo || r[0] > hi) out.push(r);
    else {
      lo = Math.min(lo, r[0]);
      hi = Math.max(hi, r[1]);
    }
  }
  out.push([lo, hi]);
  out.sort((a, b) => a[0] - b[0]);
  return out.length > 32 ? [[out[0][0], out[out.length - 1][1]]] : out;
}

/** Past this depth a changed subtree is copied rather than reconciled (keeps recursion shallow). */
const MAX_RECONCILE_DEPTH = 256;

/**
 * Rebuilds the mirror of a changed node, reusing (shifted) every old child subtree that sits at the
 * same place after the edits and that tree-sitter reports unchanged, so an edit inside a long
 * function re-copies the path to the edit, not the function. It records the new node's pre-order as
 * segments (new nodes, copied subtrees, reused old subtrees) so that the statement's index can be
 * spliced from the old one (see unit-index.ts); reused subtrees keep their old offsets until
 * `applyShifts`, which must come after the splice.
 */
class Reconciler {
  private shifts: [SyntaxNode, number][] = [];

  constructor(
    private readonly spans: readonly EditSpan[],
    private readonly changed: readonly (readonly [number, number])[],
    private readonly tables: NodeTables,
    /** Where the cursor's tree starts in the document. */
    private readonly base: number,
    private readonly py: PythonParser,
  ) {}

  /** Moves the reused subtrees to their new offsets. */
  applyShifts(): void {
    for (const [node, delta] of this.shifts) shift(node, delta);
    this.shifts = [];
  }

  /** `previousOldSibling`: the old node's previous sibling (lets consecutive reused siblings form one segment). */
  reconcile(cursor: TS.TreeCursor, old: SyntaxNode, parent: SyntaxNode, depth: number, segments: IndexSegment[], previousOldSibling: SyntaxNode | null): SyntaxNode {
    const type = cursor.nodeType;
    const start = cursor.startIndex + this.base;
    const end = cursor.endIndex + this.base;
    if (old.type === type) {
      const mapped = mapRange(old.start, old.end, this.spans);
      if (mapped !== null && mapped.start === start && mapped.end === end && !intersectsAny(start, end, this.changed) && old.field === cursor.currentFieldName) {
        if (mapped.start !== old.start) this.shifts.push([old, mapped.start - old.start]);
        old.parent = parent;
        pushReused(segments, old, previousOldSibling);
        return old;
      }
    }
    if (old.type !== type || depth > MAX_RECONCILE_DEPTH) return this.copy(cursor, parent, segments);
    const node = new MirrorNode(kindNamed(this.tables, type, cursor.currentFieldName, cursor.nodeIsNamed, cursor.nodeIsMissing), start, end, [], parent);
    segments.push({ kind: 'node', node });
    // Where each old child starts after the edits (null where an edit touches it): non-decreasing, like
    // the new children's starts, so one pointer walks both (no string keys per child of a long block).
    const oldChildren = old.children;
    const moved = oldChildren.map((c) => mapOffset(c.start, this.spans));
    let p = 0;
    if (cursor.gotoFirstChild()) {
      do {
        const childType = cursor.nodeType;
        const childStart = cursor.startIndex + this.base;
        while (p < moved.length && (moved[p] === null || moved[p]! < childStart)) p++;
        // The last old child of this type starting here (zero-width siblings may share a start).
        let at: number | undefined;
        for (let q = p; q < moved.length && (moved[q] === null || moved[q] === childStart); q++) {
          if (moved[q] !== null && oldChildren[q].type === childType) at = q;
        }
        node.children.push(
          at === undefined
            ? this.copy(cursor, node, segments)
            : this.reconcile(cursor, oldChildren[at], node, depth + 1, segments, at > 0 ? oldChildren[at - 1] : null),
        );
      } while (cursor.gotoNextSibling());
      cursor.gotoParent();
    }
    return node;
  }

  private copy(cursor: TS.TreeCursor, parent: SyntaxNode, segments: IndexSegment[]): SyntaxNode {
    const index: NodeIndex = new Map();
    const node = copySubtree(this.py, cursor, parent, this.tables, this.base, index);
    segments.push({ kind: 'fresh', index });
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

/**
 * Per-language lookups that turn the cursor's numeric ids into the mirror's strings without a wasm
 * call, and the document's interned node kinds (see MirrorNode).
 */
interface NodeTables {
  readonly types: readonly string[];
  readonly named: readonly boolean[];
  readonly fields: readonly (string | null)[];
  /** Kinds by (type id, field id, named, missing), see kindOf. */
  readonly kinds: Map<number, NodeKind>;
  /** Kinds of the nodes the reconciler builds, by their strings (see kindNamed). */
  readonly kindsByName: Map<string, NodeKind>;
}

/** Built per document (a few hundred wasm calls, well under a parse). */
function nodeTables(language: TS.Language): NodeTables {
  const types: string[] = [];
  const named: boolean[] = [];
  for (let id = 0; id < language.nodeTypeCount; id++) {
    types.push(internalized(language.types[id] ?? 'ERROR'));
    named.push(language.nodeTypeIsNamed(id));
  }
  return { types, named, fields: language.fields.map((f) => (f == null ? null : internalized(f))), kinds: new Map(), kindsByName: new Map() };
}

/** The kind of the node under `cursor` (whose type and field ids are given) as copySubtree sees it. */
function kindOf(tables: NodeTables, typeId: number, fieldId: number, named: boolean, missing: boolean): NodeKind {
  // Field ids are small (tree-sitter-python has a few dozen), type ids at most 65535: the key stays a small integer.
  const key = ((typeId * (tables.fields.length + 1) + fieldId) << 2) | (named ? 2 : 0) | (missing ? 1 : 0);
  let kind = tables.kinds.get(key);
  if (kind === undefined) {
    kind = Object.freeze({ type: typeId === ERROR_TYPE_ID ? 'ERROR' : (tables.types[typeId] ?? 'ERROR'), named, field: tables.fields[fieldId] ?? null, missing });
    tables.kinds.set(key, kind);
  }
  return kind;
}

/** The kind of a node the reconciler builds, from the cursor's strings (a few nodes per edit). */
function kindNamed(tables: NodeTables, type: string, field: string | null, named: boolean, missing: boolean): NodeKind {
  const key = `${type}\u0000${field ?? ''}\u0000${named ? 1 : 0}${missing ? 1 : 0}`;
  let kind = tables.kindsByName.get(key);
  if (kind === undefined) {
    kind = Object.freeze({ type, named, field, missing });
    tables.kindsByName.set(key, kind);
  }
  return kind;
}

/**
 * The engine's internalized copy of `s`. Names read from the wasm module are fresh strings, so every
 * `node.type === 'call'` and `c.field === 'body'` in the rules compared them character by character;
 * internalized strings (like the literals they are compared with) compare by identity. A property key
 * is always internalized, which gives a portable way to get the copy.
 */
function internalized(s: string): string {
  return Object.keys({ [s]: 0 })[0];
}

const ERROR_TYPE_ID = 65535;
/**
 * Shared by every leaf: no node gets children after it is built, so one array serves all. Not frozen:
 * a frozen array has an elements kind of its own, which made every `for (const c of n.children)` of
 * the rules polymorphic, iterated through the generic `next` with an object allocated per child (a
 * third of everything a lint allocated). SyntaxNode.children is readonly to the rules instead.
 */
const NO_CHILDREN: SyntaxNode[] = [];

/**
 * Copies the subtree under the cursor into plain objects; the cursor ends where it started. Per node
 * it asks only for the type and field ids, the offsets and the moves (names and namedness come from
 * per-language tables; MISSING is asked of empty nodes only), through direct wasm calls where the
 * runtime allows them (raw-cursor.ts) and the public cursor otherwise. Offsets are shifted by
 * `base`, where the cursor's tree starts in the document. `index` (by type, document order) is
 * filled on the way.
 */
function copySubtree(py: PythonParser, cursor: TS.TreeCursor, parent: SyntaxNode | null, tables: NodeTables, base: number, index?: NodeIndex): SyntaxNode {
  const copy = (walk: CursorWalk): SyntaxNode => copyWalk(walk, parent, tables, base, index);
  return py.raw?.walk(cursor, copy) ?? copy(new PublicWalk(cursor));
}

function copyWalk(cursor: CursorWalk, parent: SyntaxNode | null, tables: NodeTables, base: number, index: NodeIndex | undefined): SyntaxNode {
  const { named } = tables;
  const make = (p: SyntaxNode | null): MirrorNode => {
    const typeId = cursor.typeId();
    const start = cursor.startIndex() + base;
    const end = cursor.endIndex() + base;
    const isNamed = typeId === ERROR_TYPE_ID || (named[typeId] ?? cursor.isNamed());
    const missing = start === end && cursor.isMissing();
    const kind = kindOf(tables, typeId, cursor.fieldId(), isNamed, missing);
    const type = kind.type;
    const node = new MirrorNode(kind, start, end, NO_CHILDREN, p);
    if (index !== undefined) {
      const list = index.get(type);
      if (list === undefined) index.set(type, [node]);
      else list.push(node);
    }
    return node;
  };
  const top = make(parent);
  if (!cursor.firstChild()) return trimIndex(index, top);
  // Iterative descent: deeply nested expressions must not overflow the JS stack. Children are
  // gathered in one reused scratch array per depth and copied out at their exact length: arrays
  // grown by push keep up to ~17 spare slots each, which was a third of the mirror's memory.
  const stack: MirrorNode[] = [top];
  const scratch: SyntaxNode[][] = [[]];
  for (;;) {
    const depth = stack.length - 1;
    const node = make(stack[depth]);
    scratch[depth].push(node);
    if (cursor.firstChild()) {
      stack.push(node);
      if (scratch.length <= depth + 1) scratch.push([]);
      continue;
    }
    while (!cursor.nextSibling()) {
      cursor.parent();
      const done = stack.pop()!;
      const kids = scratch[stack.length];
      done.children = kids.slice();
      kids.length = 0;
      if (stack.length === 0) return trimIndex(index, top); // back at the subtree's own node
    }
  }
}

/** Replaces each list of a freshly filled index by an exact-length copy (see copySubtree); returns `node`. */
function trimIndex(index: NodeIndex | undefined, node: SyntaxNode): SyntaxNode {
  if (index !== undefined) for (const [type, list] of index) index.set(type, list.slice());
  return node;
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

/**
 * The tree of `text` after edits to `old` (already applied to it with `edit`), reusing `old` only when it
 * parsed without errors. tree-sitter's incremental parse of an old tree with errors can reuse what its
 * error recovery built and return a tree that a fresh parse of the same text does not (issue #12: a
 * leading `model(x)` over the first comment's words made the whole file one ERROR; a NUL typed before it
 * then parses afresh as a short leading ERROR and clean statements after it, but incrementally as one ERROR
 * still, and the document lost the class's findings). Random edits of the fixtures (the fuzz test's, 40
 * seeds, 9,859 edits) found 16 such trees, every one after a tree with errors and none after a clean one.
 * Marking only the old tree's ERROR and MISSING nodes as edited still left 4 of 749 edits wrong (an error
 * at the file's start, an edit at its end). The price is a whole-file parse per edit while the file has
 * errors; `getChangedRanges` compares the trees by structure, so the mirror still reuses every statement
 * the edit did not change (and with it the analyses' memos).
 */
function reparse(py: PythonParser, text: string, old: TS.Tree | null): TS.Tree {
  return parseOrThrow(py, text, old !== null && !old.rootNode.hasError ? old : null);
}

function parseOrThrow(py: PythonParser, text: string, old: TS.Tree | null): TS.Tree {
  const tree = py.parser.parse(text, old ?? undefined);
  // Only a cancelled or timed-out parse returns null, and neither is requested here.
  if (tree === null) throw new Error('tree-sitter returned no tree');
  return tree;
}
