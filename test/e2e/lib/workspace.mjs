// Each phase gets a fresh copy of examples/ (quick fixes and edits must not touch the repo's files).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { examplesDir, runsDir } from './paths.mjs';

export function makeRunDir(name) {
  fs.mkdirSync(runsDir, { recursive: true });
  return fs.mkdtempSync(path.join(runsDir, `${name}-`));
}

/** Copies examples/ (or an empty folder if it does not exist yet) into runDir/workspace. */
export function makeWorkspace(runDir) {
  const ws = path.join(runDir, 'workspace');
  if (fs.existsSync(examplesDir)) {
    fs.cpSync(examplesDir, ws, { recursive: true, filter: (src) => !/__pycache__|\.pyc$/.test(src) });
  } else {
    fs.mkdirSync(ws, { recursive: true });
  }
  return fs.realpathSync(ws);
}

export function removeDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}
