// A notebook's program as a temporary script for the harness (profile and predict run a .py file), in a
// folder of its own under the OS temp folder, removed when the run ends however it ends: done, failed,
// cancelled or thrown. No `vscode` here (unit-tested).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The prefix of the temporary folders (tests look for leftovers by it). */
export const TEMP_PREFIX = 'memhint-notebook-';

/** The script's file name: the notebook's (tracebacks and the summary show it), else "notebook.py". */
export function scriptName(notebookPath: string): string {
  return `${path.basename(notebookPath).replace(/\.ipynb$/i, '') || 'notebook'}.py`;
}

/**
 * Writes `text` to a temporary script named `name`, runs `run` with its path and removes the folder
 * after, also when `run` throws or was cancelled (the caller's abort ends `run`; the removal waits for it,
 * so a killed child no longer has the file open).
 */
export async function withTemporaryScript<T>(text: string, name: string, run: (script: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), TEMP_PREFIX));
  try {
    const script = path.join(dir, name);
    fs.writeFileSync(script, text);
    return await run(script);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
