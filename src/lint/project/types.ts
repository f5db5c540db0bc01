// What the rules see of the project around the file they lint: other modules of the same repository,
// found through the file's own imports. The owner of the analysis sessions (the CLI's lint run, the
// editor's diagnostics controller) builds one ProjectIndex (project-index.ts) and hands each document a
// ProjectContext; rules go through resolveImport (resolve.ts) and never read files themselves.
import type { SourceFile } from '../syntax';

/** One module of the project, parsed. */
export interface ProjectModule {
  /** Absolute path of the module's file. */
  readonly path: string;
  /** The path as findings' messages name it: relative to the project root, with `/`. */
  readonly display: string;
  /** Its current version (its own document and analysis session). */
  readonly file: SourceFile;
}

export interface ProjectLookup {
  /**
   * The module an import names, seen from the file at `fromPath`: `moduleName` is dotted, with leading
   * dots for a relative import (`..utils.data`). Null when it is not a readable file of the project
   * (a library, a missing file, a FIFO, a file over the size limit, a symlink out of the project root).
   */
  module(fromPath: string, moduleName: string): ProjectModule | null;
  /**
   * The modules of the project whose text mentions `name` and that may import the file at `path`: the
   * `.py` files of its folder and of each folder above it up to the project root (not their subfolders).
   * Callers check that each really imports and calls what they look for (resolveImport).
   */
  importersOf(path: string, name: string): readonly ProjectModule[];
  /**
   * Changes whenever a module that was handed out may have changed: what a memo that read another
   * file must put in its deps.
   */
  readonly stamp: string;
}

/** The project a document belongs to and where its file lies (set by the session's owner, fixed for the session). */
export interface ProjectContext {
  readonly lookup: ProjectLookup;
  /** Absolute path of the document's file. */
  readonly path: string;
}
