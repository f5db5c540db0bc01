// How the editor matches a document to the files a profile report names. `filePathsOf` touches the
// file system (realpath); `samePath` is pure.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as vscode from 'vscode';

/** Whether two paths name the same file (case-insensitive where the platform's file system usually is). */
export function samePath(a: string, b: string): boolean {
  const na = path.normalize(a);
  const nb = path.normalize(b);
  return process.platform === 'win32' || process.platform === 'darwin' ? na.toLowerCase() === nb.toLowerCase() : na === nb;
}

/** The file as the report may name it: as opened and with symlinks resolved. */
export function filePathsOf(uri: vscode.Uri): string[] {
  const paths = [uri.fsPath];
  try {
    const real = fs.realpathSync(uri.fsPath);
    if (real !== uri.fsPath) paths.push(real);
  } catch {
    // unsaved or deleted: the opened path is all there is
  }
  return paths;
}
