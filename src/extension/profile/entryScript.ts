// Which script the editor runs for a loop in a module that is not run itself (minGPT's mingpt/trainer.py,
// run by projects/chargpt/chargpt.py): the `memhint.profile.script` setting, as
// `memhint profile SCRIPT --loop FILE:LINE` on the command line. No `vscode` here (unit-tested).
import * as path from 'node:path';

/**
 * The entry script to run instead of `file`, or null to run `file` itself: only for a loop target
 * (`loopLine`) in a saved file other than the entry script (a function target is looked up in the script
 * that runs, and a notebook runs its own exported script).
 */
export function entryFor(entry: string | null, file: string, functionName: string | null, loopLine: number | undefined, exportedScript: string | null): string | null {
  if (entry === null || functionName !== null || loopLine === undefined || exportedScript !== null) return null;
  return path.resolve(entry) === path.resolve(file) ? null : path.resolve(entry);
}
