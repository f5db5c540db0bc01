// Every autofix of MH003/MH005/MH008/MH009/MH010 in the rule fixtures and the corpus: applied alone it must
// leave valid Python and make the finding go away.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseTorchVersion } from '../../../src/lint';
import { lint } from './harness';
import * as assert from 'node:assert/strict';
import { checkFix, pythonRejects } from './steps-fix-helpers';

const fixtures = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures');
const CODES = new Set(['MH003', 'MH005', 'MH008', 'MH009', 'MH010']);

function files(): string[] {
  const out: string[] = [];
  const lintDir = path.join(fixtures, 'lint');
  for (const dir of fs.existsSync(lintDir) ? fs.readdirSync(lintDir) : []) {
    for (const f of fs.readdirSync(path.join(lintDir, dir))) if (f.endsWith('.py')) out.push(path.join(lintDir, dir, f));
  }
  const corpus = path.join(fixtures, 'corpus');
  for (const f of fs.existsSync(corpus) ? fs.readdirSync(corpus) : []) if (f.endsWith('.py')) out.push(path.join(corpus, f));
  return out.sort();
}

describe('MH003/MH005/MH008/MH009/MH010 fixes on every fixture', () => {
  for (const file of files()) {
    const source = fs.readFileSync(file, 'utf8');
    if (!/zero_|zero_grad|empty_cache|amp|\.to\(|\.cuda\(|grad/.test(source)) continue;
    it(path.relative(fixtures, file), async function () {
      this.timeout(60000);
      const target = parseTorchVersion(/#\s*target-torch:\s*([\d.]+)/.exec(source.split('\n').slice(0, 5).join('\n'))?.[1]);
      const findings = (await lint(source, { targetTorch: target })).filter((f) => CODES.has(f.code) && f.fix !== null);
      const fixed: string[] = [];
      for (const f of findings) fixed.push(await checkFix(source, f, target, false));
      const rejected = pythonRejects(fixed);
      assert.deepEqual(rejected.map((i) => findings[i].fix?.title), [], 'Python rejects fixed texts');
    });
  }
});
