// The interpreter with torch 2.x for the tests that must also run there. CI makes `.venv-torch2`
// (scripts/setup-torch2.sh); MEMHINT_TEST_TORCH2_PYTHON overrides. Missing, the tests fail and say so.
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');

export const TORCH1_PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

export function torch2Python(): string {
  const python = process.env.MEMHINT_TEST_TORCH2_PYTHON ?? path.join(ROOT, '.venv-torch2', 'bin', 'python');
  if (!fs.existsSync(python)) {
    throw new Error(
      `no torch 2 interpreter at ${python}: run \`bash scripts/setup-torch2.sh\` (makes .venv-torch2) ` +
        'or set MEMHINT_TEST_TORCH2_PYTHON',
    );
  }
  return python;
}
