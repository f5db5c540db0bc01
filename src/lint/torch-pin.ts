// The torch a project pins: `torch==2.1.0` in requirements*.txt, `"torch>=2.0"` / `torch = "^2.1"` in
// pyproject.toml, `torch>=1.13` in setup.cfg, `pytorch=2.1` in environment.yml. The target is the
// OLDEST version the pin allows: a fix must exist in every torch the code may run on (`>=1.13` keeps
// torch.amp.GradScaler out of the fixes). A pin with no lower bound (`torch<2`) says nothing.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readRegularFile, UnreadableFile } from './regular-file';
import { parseTorchVersion, type TorchVersion } from './types';

export interface TorchPin {
  readonly version: TorchVersion;
  /** The requirement as written (`torch==2.1.0`). */
  readonly spec: string;
  /** The file it was found in. */
  readonly file: string;
}

const MAX_BYTES = 1024 * 1024;
const FIXED_NAMES = ['pyproject.toml', 'setup.cfg', 'environment.yml', 'environment.yaml'];
/** `torch` / `pytorch` (conda) followed by a lower-bounding or exact operator and a version. */
const REQUIREMENT = /(?:^|[\s"',[{-])((?:py)?torch)\s*(?:\[[^\]]*\])?\s*(===|==|~=|>=|>|=|\^|~)\s*v?(\d+(?:\.\d+)*)/gm;
/** Poetry: `torch = "^2.1"` or `torch = { version = ">=2.0", ... }`. */
const POETRY = /^\s*torch\s*=\s*(?:\{[^}\n]*\bversion\s*=\s*)?["']\s*(\^|~|==|>=|>|~=)?\s*(\d+(?:\.\d+)*)/m;

/** The lowest torch version a file's requirements allow, or null. Exported for tests. */
export function torchPinIn(text: string, file: string): TorchPin | null {
  const base = path.basename(file);
  const lines = text.split(/\r?\n/).map((l) => l.replace(/(^|\s)#.*$/, ''));
  const body = lines.join('\n');
  const found: { version: TorchVersion; spec: string }[] = [];
  if (base === 'pyproject.toml') {
    const m = POETRY.exec(body);
    if (m !== null) {
      const v = parseTorchVersion(m[2]);
      if (v !== null) found.push({ version: v, spec: m[0].trim() });
    }
  }
  for (const m of body.matchAll(REQUIREMENT)) {
    // `=` alone is conda's (`pytorch=2.1`); a pip requirement needs `==`.
    if (m[2] === '=' && !/^environment\.ya?ml$/.test(base)) continue;
    if (m[1] === 'pytorch' && !/^environment\.ya?ml$/.test(base)) continue;
    const v = parseTorchVersion(m[3]);
    if (v !== null) found.push({ version: v, spec: `${m[1]}${m[2]}${m[3]}` });
  }
  if (found.length === 0) return null;
  found.sort((a, b) => a.version.major - b.version.major || a.version.minor - b.version.minor);
  return { version: found[0].version, spec: found[0].spec, file };
}

function candidates(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const reqs = names.filter((n) => /^requirements.*\.txt$/i.test(n)).sort();
  return [...FIXED_NAMES.filter((n) => names.includes(n)), ...reqs].map((n) => path.join(dir, n));
}

/** Per run: a folder's pin (or null), so many files of one project read its requirements once. */
export class TorchPinCache {
  readonly byDir = new Map<string, TorchPin | null>();
}

/**
 * The nearest torch pin above `filePath`: the first folder (walking up, stopping after the folder that
 * holds `.git`) with a requirements file naming torch. Unreadable, special or huge files are skipped.
 */
export function findTorchPin(filePath: string, cache: TorchPinCache = new TorchPinCache()): TorchPin | null {
  const visited: string[] = [];
  let dir = path.dirname(path.resolve(filePath));
  let result: TorchPin | null = null;
  for (;;) {
    const hit = cache.byDir.get(dir);
    if (hit !== undefined) {
      result = hit;
      break;
    }
    visited.push(dir);
    for (const file of candidates(dir)) {
      let text: string;
      try {
        text = readRegularFile(file, MAX_BYTES).bytes.toString('utf8');
      } catch (err) {
        if (err instanceof UnreadableFile) continue;
        throw err;
      }
      result = torchPinIn(text, file);
      if (result !== null) break;
    }
    const parent = path.dirname(dir);
    if (result !== null || parent === dir || fs.existsSync(path.join(dir, '.git'))) break;
    dir = parent;
  }
  for (const d of visited) cache.byDir.set(d, result);
  return result;
}
