// Each phase gets a fresh copy of examples/ (quick fixes and edits must not touch the repo's files).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { examplesDir, repoRoot, runsDir } from './paths.mjs';

/** The e2e tests' own files (a loop with known findings), added next to the examples. */
const fixturesDir = path.join(repoRoot, 'test/e2e/fixtures/workspace');

export function makeRunDir(name) {
  fs.mkdirSync(runsDir, { recursive: true });
  return fs.mkdtempSync(path.join(runsDir, `${name}-`));
}

/** Copies examples/ and test/e2e/fixtures/workspace/ into runDir/workspace. */
export function makeWorkspace(runDir) {
  const ws = path.join(runDir, 'workspace');
  fs.mkdirSync(ws, { recursive: true });
  for (const dir of [examplesDir, fixturesDir]) {
    if (fs.existsSync(dir)) fs.cpSync(dir, ws, { recursive: true, filter: (src) => !/__pycache__|\.pyc$/.test(src) });
  }
  return fs.realpathSync(ws);
}

export function removeDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}
