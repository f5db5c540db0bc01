// Which notebook the last profiled temporary script came from, and its cell map: the report names the
// script (removed after the run), and the hints need to find each line's cell. No `vscode` here.
import type { NotebookProgram } from '../lint/notebookProgram';

export interface NotebookExport {
  /** The notebook's URI, as a string. */
  readonly notebook: string;
  /** The temporary script's path, as the report names it. */
  readonly script: string;
  readonly program: NotebookProgram;
}

/** One per extension (the store holds one report, so one export is all the hints can need). */
export class NotebookExports {
  private last: NotebookExport | null = null;

  record(entry: NotebookExport): void {
    this.last = entry;
  }

  /** The export of this notebook, when the last notebook run was of it. */
  forNotebook(notebook: string): NotebookExport | null {
    return this.last !== null && this.last.notebook === notebook ? this.last : null;
  }
}
