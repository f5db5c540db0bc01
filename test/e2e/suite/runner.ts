// Runs mocha inside VS Code's extension host (the real `vscode` API). The extension host's console is
// forwarded to the workbench page, where test/e2e/run.mjs prints it; run()'s outcome becomes the exit code.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { format } from 'node:util';
import Mocha from 'mocha';

/** Marks the reporter's lines so the runner can pick them out of the workbench log (see lib/host.mjs). */
export const reportMarker = '[memhint-e2e] ';

// The extension host's console reaches the page as one log record per call, without printf-style
// formatting: format here, one line per record.
(Mocha.reporters.Base as unknown as { consoleLog: (...args: unknown[]) => void }).consoleLog = (...args) => {
  for (const line of format(...args).split('\n')) console.log(reportMarker + line);
};

/** The repository root, from a compiled file's folder under out/. */
function repoRootOf(compiledDir: string): string {
  const parts = compiledDir.split(path.sep);
  const out = parts.lastIndexOf('out');
  return parts.slice(0, out).join(path.sep) || path.sep;
}

/**
 * Compiled tests under `dir` that still have their .ts source: out/ is not cleaned between builds,
 * and a test deleted from the tree must not keep running from a stale .js.
 */
function findTests(dir: string, skipDirs: readonly string[]): string[] {
  const root = repoRootOf(dir);
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!skipDirs.includes(entry.name)) found.push(...findTests(full, skipDirs));
    } else if (entry.name.endsWith('.test.js')) {
      const source = path.join(root, path.relative(path.join(root, 'out'), full)).replace(/\.js$/, '.ts');
      if (fs.existsSync(source)) found.push(full);
    }
  }
  return found.sort();
}

export async function runMochaIn(dir: string, skipDirs: readonly string[] = []): Promise<void> {
  const mocha = new Mocha({ ui: 'bdd', color: false, reporter: 'spec', timeout: 60_000 });
  const grep = process.env.MEMHINT_E2E_GREP;
  if (grep) mocha.grep(grep);
  for (const file of findTests(dir, skipDirs)) mocha.addFile(file);
  const failures = await new Promise<number>((resolve) => mocha.run(resolve));
  if (failures > 0) throw new Error(`${failures} extension-host test(s) failed`);
}
