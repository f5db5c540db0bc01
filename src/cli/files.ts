// Expands CLI path arguments into .py files (directories walked, skipping the usual noise).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ioMessage, readRegularFile } from '../lint/regular-file';

export { ioMessage };

const SKIP_DIRS = new Set(['.git', '.hg', '.svn', 'node_modules', '__pycache__', '.venv', 'venv', '.tox', '.mypy_cache', '.ruff_cache', 'build', 'dist', '.eggs', 'site-packages']);

export interface FileListing {
  readonly files: string[];
  /** Paths that could not be read: one-line messages. */
  readonly errors: string[];
}

export function collectPythonFiles(args: readonly string[]): FileListing {
  const files: string[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  const add = (f: string): void => {
    const key = path.resolve(f);
    if (!seen.has(key)) {
      seen.add(key);
      files.push(f);
    }
  };
  const visit = (dir: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      errors.push(`${dir}: ${ioMessage(err)}`);
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name) && !e.name.endsWith('.egg-info')) visit(full);
      } else if ((e.isFile() || e.isSymbolicLink()) && (e.name.endsWith('.py') || e.name.endsWith('.pyi'))) add(full);
    }
  };
  for (const arg of args) {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(arg);
    } catch (err) {
      errors.push(`${arg}: ${ioMessage(err)}`);
      continue;
    }
    if (stat.isDirectory()) visit(arg);
    else add(arg); // an explicit file is linted whatever its extension
  }
  return { files, errors };
}

export interface SourceText {
  readonly text: string;
  /** Had a UTF-8 byte-order mark, restored when the file is written back. */
  readonly bom: boolean;
  /** The bytes as read: --fix writes only if the file still holds exactly these. */
  readonly bytes: Buffer;
}

/**
 * Reads a regular file of at most `maxBytes` (0: no limit) as strict UTF-8 (BOM stripped); throws
 * UnreadableFile (FIFO, device, directory, too large, I/O) or an Error for bytes that are not UTF-8.
 */
export function readSource(file: string, maxBytes: number): SourceText {
  const { bytes } = readRegularFile(file, maxBytes);
  try {
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    return text.charCodeAt(0) === 0xfeff ? { text: text.slice(1), bom: true, bytes } : { text, bom: false, bytes };
  } catch (err) {
    throw new Error('not valid UTF-8; not checked', { cause: err });
  }
}
