// The torch 2 interpreter of the prediction tests: `.venv-torch2` in the repository root (CI creates it),
// or MEMHINT_TEST_TORCH2_PYTHON. A missing one fails the tests with this message; it is never skipped.
import * as fs from 'node:fs';
import * as path from 'node:path';

export const REPO = path.resolve(__dirname, '../../..');

export function torch2Python(): string {
  const python = process.env.MEMHINT_TEST_TORCH2_PYTHON ?? path.join(REPO, '.venv-torch2', 'bin', 'python');
  if (!fs.existsSync(python)) {
    throw new Error(
      `torch 2 python not found at ${python}: create .venv-torch2 (python3 -m venv .venv-torch2 && ` +
        '.venv-torch2/bin/pip install torch numpy transformers) or set MEMHINT_TEST_TORCH2_PYTHON',
    );
  }
  return python;
}
