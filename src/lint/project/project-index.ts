// The project index: the modules of the repository around the linted files, parsed on demand when an
// import names them, for rules that follow a name into another file (project/resolve.ts).
//
// Bounded by construction (docs/reliability.md): it never walks a tree; to resolve an import it stats the few
// paths an import can name (`pkg/mod.py`, `pkg/mod/__init__.py`) from the importing file's folder up
// to the project root; it reads regular files only, within the size limit, through readRegularFile
// (never blocks on a FIFO); a path whose real path leaves the project root (a symlink out) is not
// read; at most MAX_MODULES parsed modules are kept (least recently used dropped). importersOf lists the
// file's folder and the folders above it up to the root (MAX_FOLDER_ENTRIES each, no subfolders).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PythonDocument } from '../document';
import type { PythonParser } from '../parser';
import { readRegularFile } from '../regular-file';
import { DiskAnswers } from './disk-answers';
import type { ProjectContext, ProjectLookup, ProjectModule } from './types';
import { bytesContainWord } from './word-scan';

/** Files whose presence marks a project root (the folder imports are resolved from, at most). */
const ROOT_MARKERS = ['.git', 'pyproject.toml', 'setup.py', 'setup.cfg'];
/** Folders walked up from a file looking for a root marker; without one the file's own folder is the root. */
const MAX_ROOT_DEPTH = 8;
/** Parsed modules kept at once (each holds a document and its analysis session). */
const MAX_MODULES = 64;
/** Entries of one folder looked at for importers (a data folder of thousands of files is not read). */
const MAX_FOLDER_ENTRIES = 256;
/** Importers handed out for one name (the nearest folders first). */
const MAX_IMPORTERS = 8;

export interface ProjectIndexOptions {
  /** Files above this are not read (the linter's own limit, `max-file-size`). */
  readonly maxFileSize: number;
  /**
   * The text of `absPath` when the owner has a newer one than the disk (an unsaved editor buffer),
   * else undefined (read from disk).
   */
  readonly textOf?: (absPath: string) => string | undefined;
  /** The project root of a folder's files, when the owner knows it (a workspace folder); else found from markers. */
  readonly rootOf?: (dir: string) => string | undefined;
  /**
   * Every importer is linted once (the CLI): the modules' documents are one-shot too (their sessions
   * skip the memo keys that tell versions apart), so `invalidate` of one file drops every module, as
   * a memo of another module may have followed an import into it.
   */
  readonly oneShot?: boolean;
}

interface Entry {
  readonly text: string;
  readonly doc: PythonDocument;
  readonly module: ProjectModule;
}

export class ProjectIndex implements ProjectLookup {
  /** Parsed modules by real path, most recently used last. */
  private readonly modules = new Map<string, Entry>();
  /** `fromDir \0 module` -> real path of the module's file, or null (nothing readable there). */
  private readonly found = new Map<string, string | null>();
  /**
   * `fromPath \0 module` -> what `found` and `roots` answer for it: resolveImport asks the same few imports
   * of a file for every name it resolves (tens of thousands of times in a long file), and `path.resolve`
   * (it reads the working directory) with the key building cost more than the lookup. Cleared with `found`.
   */
  private readonly foundFrom = new Map<string, { readonly real: string | null; readonly root: string }>();
  private readonly roots = new Map<string, string>();
  /** `path \0 name` -> real paths of the modules importersOf found. */
  private readonly importers = new Map<string, readonly string[]>();
  private generation = 0;
  /** A one-shot index's answers from the disk, kept until `invalidate` (null: ask the disk each time). */
  private readonly disk: DiskAnswers | null;

  constructor(
    private readonly parser: PythonParser,
    private readonly options: ProjectIndexOptions,
  ) {
    this.disk = options.oneShot === true ? new DiskAnswers() : null;
  }

  get stamp(): string {
    return `project#${this.generation}`;
  }

  /** The context to open the document of `absPath` with. */
  contextFor(absPath: string): ProjectContext {
    // The real path: resolveImport's modules are named by theirs, and callers compare them with this file.
    return { lookup: this, path: safeRealpath(absPath) ?? path.resolve(absPath) };
  }

  /**
   * Forgets what was read (one file, or everything): the next lookups read the disk (or the owner's
   * buffers) again, and the stamp changes so that memos that followed an import are recomputed.
   */
  invalidate(absPath?: string): void {
    this.generation++;
    this.found.clear();
    this.foundFrom.clear();
    this.importers.clear();
    this.disk?.clear();
    if (absPath === undefined || this.options.oneShot === true) {
      for (const e of this.modules.values()) e.doc.dispose();
      this.modules.clear();
      this.roots.clear();
      return;
    }
    const real = safeRealpath(absPath) ?? path.resolve(absPath);
    const e = this.modules.get(real);
    if (e !== undefined) {
      e.doc.dispose();
      this.modules.delete(real);
    }
  }

  /** Drops every parsed module (the owner is done). */
  dispose(): void {
    this.invalidate();
  }

  module(fromPath: string, moduleName: string): ProjectModule | null {
    // Only an absolute path names the same file whatever the working directory is by the next call.
    const fromKey = path.isAbsolute(fromPath) ? `${fromPath}\u0000${moduleName}` : null;
    let hit = fromKey === null ? undefined : this.foundFrom.get(fromKey);
    if (hit === undefined) {
      hit = this.moduleFile(path.dirname(path.resolve(fromPath)), moduleName);
      if (fromKey !== null) this.foundFrom.set(fromKey, hit);
    }
    return hit.real === null ? null : this.load(hit.real, hit.root);
  }

  /** The real path of module `moduleName` seen from `fromDir` (or null), and the project root it is loaded under. */
  private moduleFile(fromDir: string, moduleName: string): { readonly real: string | null; readonly root: string } {
    const key = `${fromDir}\u0000${moduleName}`;
    let real = this.found.get(key);
    if (real === undefined) {
      real = this.locate(fromDir, moduleName);
      this.found.set(key, real);
    }
    return { real, root: this.rootFor(fromDir) };
  }

  importersOf(fromPath: string, name: string): readonly ProjectModule[] {
    const abs = path.resolve(fromPath);
    const key = `${abs}\u0000${name}`;
    let reals = this.importers.get(key);
    if (reals === undefined) {
      reals = this.findImporters(abs, name);
      this.importers.set(key, reals);
    }
    const root = this.rootFor(path.dirname(abs));
    return reals.map((r) => this.load(r, root)).filter((m) => m !== null);
  }

  /**
   * Real paths of the `.py` files in `abs`'s folder and each folder above it up to the root whose text
   * contains `name` (a word), `abs` itself excluded. Each folder's listing is capped, only regular files
   * within the size limit are read, and nothing outside the real root.
   */
  private findImporters(abs: string, name: string): string[] {
    const root = this.rootFor(path.dirname(abs));
    const realRoot = this.realpath(root);
    const self = this.realpath(abs);
    if (realRoot === null || !/^\w+$/.test(name)) return [];
    const word = new RegExp(`\\b${name}\\b`);
    const out: string[] = [];
    for (let dir = path.dirname(abs); isInside(dir, root); dir = path.dirname(dir)) {
      const names = this.listing(dir).filter((n) => n.endsWith('.py')).sort().slice(0, MAX_FOLDER_ENTRIES);
      for (const n of names) {
        if (out.length >= MAX_IMPORTERS) return out;
        const real = this.regular(path.join(dir, n), realRoot);
        if (real === null || real === self) continue;
        if (this.mentions(real, name, word)) out.push(real);
      }
      if (dir === root || path.dirname(dir) === dir) break;
    }
    return out;
  }

  /** The real path of the file `moduleName` names from `fromDir`, or null. */
  private locate(fromDir: string, moduleName: string): string | null {
    const level = /^\.*/.exec(moduleName)![0].length;
    const parts = moduleName.slice(level).split('.').filter((p) => p !== '');
    if (parts.some((p) => !/^[A-Za-z_]\w*$/.test(p))) return null;
    const root = this.rootFor(fromDir);
    const realRoot = this.realpath(root);
    if (realRoot === null) return null;
    let bases: string[];
    if (level > 0) {
      // `from ..x import y`: one folder up per dot after the first, never above the root.
      let base = fromDir;
      for (let i = 1; i < level; i++) base = path.dirname(base);
      bases = [base];
    } else {
      // Python puts the script's folder on sys.path; the root (where the code is run from) too: try each
      // folder in between, nearest first.
      bases = [];
      for (let dir = fromDir; ; dir = path.dirname(dir)) {
        bases.push(dir);
        if (dir === root || path.dirname(dir) === dir || !isInside(dir, root)) break;
      }
    }
    for (const base of bases) {
      if (!isInside(base, root)) continue;
      if (parts.length === 0) {
        const init = this.regular(path.join(base, '__init__.py'), realRoot);
        if (init !== null) return init;
        continue;
      }
      const stem = path.join(base, ...parts);
      const hit = this.regular(`${stem}.py`, realRoot) ?? this.regular(path.join(stem, '__init__.py'), realRoot);
      if (hit !== null) return hit;
    }
    return null;
  }

  /** Whether the file `real` (the owner's buffer, else the disk) holds `name` as a word (`word` matches it). */
  private mentions(real: string, name: string, word: RegExp): boolean {
    const text = this.options.textOf?.(real);
    if (text !== undefined) return word.test(text);
    if (this.disk !== null) {
      const bytes = this.disk.bytes(real, this.options.maxFileSize);
      return bytes !== null && bytesContainWord(bytes, name);
    }
    try {
      return word.test(readRegularFile(real, this.options.maxFileSize).bytes.toString('utf8'));
    } catch {
      return false;
    }
  }

  /** The real path of `candidate` when it is a regular file inside the real root (no symlink out), else null. */
  private regular(candidate: string, realRoot: string): string | null {
    let stat: fs.Stats | null;
    if (this.disk !== null) {
      stat = this.disk.stat(candidate);
    } else {
      try {
        stat = fs.statSync(candidate);
      } catch {
        return null;
      }
    }
    if (stat === null || !stat.isFile() || stat.size > limitOf(this.options.maxFileSize)) return null;
    const real = this.realpath(candidate);
    return real !== null && isInside(real, realRoot) ? real : null;
  }

  private realpath(p: string): string | null {
    return this.disk !== null ? this.disk.realpath(p) : safeRealpath(p);
  }

  private listing(dir: string): readonly string[] {
    if (this.disk !== null) return this.disk.listing(dir);
    try {
      return fs.readdirSync(dir);
    } catch {
      return [];
    }
  }

  private rootFor(dir: string): string {
    let root = this.roots.get(dir);
    if (root === undefined) {
      root = this.options.rootOf?.(dir) ?? markedRoot(dir) ?? dir;
      this.roots.set(dir, root);
    }
    return root;
  }

  private load(real: string, root: string): ProjectModule | null {
    const hit = this.modules.get(real);
    if (hit !== undefined) {
      // Most recently used last.
      this.modules.delete(real);
      this.modules.set(real, hit);
      return hit.module;
    }
    let text = this.options.textOf?.(real);
    if (text === undefined) {
      try {
        const bytes = this.disk?.bytes(real, this.options.maxFileSize) ?? readRegularFile(real, this.options.maxFileSize).bytes;
        text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
      } catch {
        // Unreadable, not regular, too large or not UTF-8: as if the module were not there.
        return null;
      }
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      // Lone CRs as newlines (same length), as the CLI lints files (cli/line-endings.ts).
      if (text.includes('\r')) text = text.replace(/\r(?!\n)/g, '\n');
    }
    let doc: PythonDocument;
    try {
      doc = new PythonDocument(this.parser, text, { project: this.contextFor(real), oneShot: this.options.oneShot });
    } catch {
      return null;
    }
    const module: ProjectModule = { path: real, display: displayPath(real, root), file: doc.source };
    this.modules.set(real, { text, doc, module });
    if (this.modules.size > MAX_MODULES) {
      const [oldest, e] = this.modules.entries().next().value as [string, Entry];
      e.doc.dispose();
      this.modules.delete(oldest);
    }
    return module;
  }
}

function limitOf(maxFileSize: number): number {
  return maxFileSize > 0 ? maxFileSize : Infinity;
}

function safeRealpath(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

function isInside(p: string, root: string): boolean {
  return p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/** The nearest folder at or above `dir` holding a root marker, or undefined. */
function markedRoot(dir: string): string | undefined {
  let d = dir;
  for (let i = 0; i < MAX_ROOT_DEPTH; i++) {
    if (ROOT_MARKERS.some((m) => fs.existsSync(path.join(d, m)))) return d;
    const up = path.dirname(d);
    if (up === d) break;
    d = up;
  }
  return undefined;
}

function displayPath(real: string, root: string): string {
  const realRoot = safeRealpath(root) ?? root;
  const rel = path.relative(realRoot, real);
  return (rel.startsWith('..') || path.isAbsolute(rel) ? path.basename(real) : rel).split(path.sep).join('/');
}
