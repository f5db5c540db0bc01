// A tree cursor's walk without web-tree-sitter's per-call marshalling. Each public TreeCursor call
// writes the cursor's four handles into the runtime's transfer buffer through the generic
// `setValue` (and every move reads them back through `getValue`): for the mirror's bulk copy, which
// asks six things per node, that marshalling cost more than the wasm calls themselves and as much
// as the parse. The wasm functions read the cursor from the transfer buffer and every move writes
// it back there, so a walk that makes no other wasm call in between can load the cursor once, call
// the functions directly and store the cursor back at the end.
//
// These are web-tree-sitter internals (0.25's binding: `TreeCursor.handles`, `tree[0]`, the
// `_ts_tree_cursor_*_wasm` exports on the emscripten module). `rawCursorRuntime` checks for each of
// them and returns null when one is missing; callers then use the public TreeCursor.
import type * as TS from 'web-tree-sitter';

/** The cursor moves and reads the mirror's copy needs (src/lint/document.ts, copySubtree). */
export interface CursorWalk {
  typeId(): number;
  fieldId(): number;
  startIndex(): number;
  endIndex(): number;
  isNamed(): boolean;
  isMissing(): boolean;
  firstChild(): boolean;
  nextSibling(): boolean;
  parent(): boolean;
}

type WasmFn = (tree: number) => number;

const FUNCTIONS = {
  typeId: '_ts_tree_cursor_current_node_type_id_wasm',
  fieldId: '_ts_tree_cursor_current_field_id_wasm',
  startIndex: '_ts_tree_cursor_start_index_wasm',
  endIndex: '_ts_tree_cursor_end_index_wasm',
  isNamed: '_ts_tree_cursor_current_node_is_named_wasm',
  isMissing: '_ts_tree_cursor_current_node_is_missing_wasm',
  firstChild: '_ts_tree_cursor_goto_first_child_wasm',
  nextSibling: '_ts_tree_cursor_goto_next_sibling_wasm',
  parent: '_ts_tree_cursor_goto_parent_wasm',
} as const;

type Functions = { readonly [K in keyof typeof FUNCTIONS]: WasmFn };

interface EmscriptenModule {
  readonly _ts_init: () => number;
  readonly getValue: (ptr: number, type: 'i32') => number;
  readonly setValue: (ptr: number, value: number, type: 'i32') => void;
}

/** What web-tree-sitter keeps on a cursor at run time (not in its typings). */
interface CursorInternals {
  readonly handles: number[];
  readonly tree: { readonly [0]: number };
}

/** Direct cursor walks on one initialised web-tree-sitter runtime. */
export class RawCursorRuntime {
  private constructor(
    private readonly module: EmscriptenModule,
    private readonly fns: Functions,
    /** The runtime's transfer buffer (a static area of the wasm memory; `_ts_init` only returns it and writes two version numbers into it). */
    private readonly transfer: number,
  ) {}

  /** Null when this web-tree-sitter does not expose what a raw walk needs. */
  static from(module: unknown): RawCursorRuntime | null {
    if (typeof module !== 'object' || module === null) return null;
    const m = module as Record<string, unknown>;
    if (typeof m._ts_init !== 'function' || typeof m.getValue !== 'function' || typeof m.setValue !== 'function') return null;
    const fns: Record<string, WasmFn> = {};
    for (const [key, name] of Object.entries(FUNCTIONS)) {
      const fn = m[name];
      if (typeof fn !== 'function') return null;
      fns[key] = fn as WasmFn;
    }
    const em = module as EmscriptenModule;
    return new RawCursorRuntime(em, fns as unknown as Functions, em._ts_init());
  }

  /**
   * Runs `walk` on `cursor` with direct calls; the cursor is where the walk left it afterwards. The walk
   * must make no other web-tree-sitter call (any of them may overwrite the transfer buffer).
   * Null when the cursor does not carry the internals a raw walk needs.
   */
  walk<T>(cursor: TS.TreeCursor, walk: (c: CursorWalk) => T): T | null {
    const internals = cursor as unknown as Partial<CursorInternals>;
    const handles = internals.handles;
    const tree = internals.tree?.[0];
    if (!Array.isArray(handles) || handles.length !== 4 || typeof tree !== 'number') return null;
    const { module, transfer } = this;
    for (let i = 0; i < 4; i++) module.setValue(transfer + 4 * i, handles[i], 'i32');
    try {
      return walk(new RawWalk(this.fns, tree));
    } finally {
      for (let i = 0; i < 4; i++) handles[i] = module.getValue(transfer + 4 * i, 'i32');
    }
  }
}

/** One walk: the cursor lives in the transfer buffer, each call is one wasm call. */
class RawWalk implements CursorWalk {
  constructor(
    private readonly fns: Functions,
    private readonly tree: number,
  ) {}

  typeId(): number {
    return this.fns.typeId(this.tree);
  }

  fieldId(): number {
    return this.fns.fieldId(this.tree);
  }

  startIndex(): number {
    return this.fns.startIndex(this.tree);
  }

  endIndex(): number {
    return this.fns.endIndex(this.tree);
  }

  isNamed(): boolean {
    return this.fns.isNamed(this.tree) === 1;
  }

  isMissing(): boolean {
    return this.fns.isMissing(this.tree) === 1;
  }

  firstChild(): boolean {
    return this.fns.firstChild(this.tree) === 1;
  }

  nextSibling(): boolean {
    return this.fns.nextSibling(this.tree) === 1;
  }

  parent(): boolean {
    return this.fns.parent(this.tree) === 1;
  }
}

/** The same walk through web-tree-sitter's public cursor (when the raw one is not available). */
export class PublicWalk implements CursorWalk {
  constructor(private readonly cursor: TS.TreeCursor) {}

  typeId(): number {
    return this.cursor.nodeTypeId;
  }

  fieldId(): number {
    return this.cursor.currentFieldId;
  }

  startIndex(): number {
    return this.cursor.startIndex;
  }

  endIndex(): number {
    return this.cursor.endIndex;
  }

  isNamed(): boolean {
    return this.cursor.nodeIsNamed;
  }

  isMissing(): boolean {
    return this.cursor.nodeIsMissing;
  }

  firstChild(): boolean {
    return this.cursor.gotoFirstChild();
  }

  nextSibling(): boolean {
    return this.cursor.gotoNextSibling();
  }

  parent(): boolean {
    return this.cursor.gotoParent();
  }
}
