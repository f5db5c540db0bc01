// What the CLI test files share: the built bin run as a real process, a throwaway project folder, and
// one training loop with two findings (MH003, MH005), so each suite reads the same positives.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const repo = path.join(__dirname, '..', '..', '..', '..');
export const bin = path.join(repo, 'bin', 'memhint.js');

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `memhint ARGS` as a real process. `shellPrefix` runs first in bash (e.g. `ulimit -f 2`) and then
 * execs the CLI. `timeout` only turns a hang into a failure (signal set) instead of a stuck suite; no test
 * measures time.
 */
export function memhint(args: string[], cwd = repo, shellPrefix = ''): Run {
  const options = { cwd, encoding: 'utf8' as const, timeout: 50_000 };
  const r = shellPrefix
    ? spawnSync('bash', ['-c', `${shellPrefix} && exec "$0" "$@"`, process.execPath, bin, ...args], options)
    : spawnSync(process.execPath, [bin, ...args], options);
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** A training loop with zero_grad(set_to_none=False) and empty_cache() per step. */
export const LOOP = [
  'import torch',
  '',
  'def train(model, loader, opt):',
  '    for x, y in loader:',
  '        opt.zero_grad(set_to_none=False)',
  '        loss = model(x).sum()',
  '        loss.backward()',
  '        opt.step()',
  '        torch.cuda.empty_cache()',
  '',
].join('\n');

/** A fresh temporary folder holding FILES (relative name -> content); sub-folders are created. */
export function project(files: Record<string, string | Buffer>, prefix = 'memhint-cli-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  return dir;
}
