// Paths as the summary shows them: relative to a workspace folder when the file is inside one.
import * as path from 'node:path';

export function displayPath(file: string, roots: readonly string[]): string {
  for (const root of roots) {
    const rel = path.relative(root, file);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
  }
  return file;
}

/** `train.py:12`, or null when there is no location. */
export function displayWhere(loc: { readonly file: string; readonly line: number } | null, roots: readonly string[]): string | null {
  return loc === null ? null : `${displayPath(loc.file, roots)}:${loc.line}`;
}
