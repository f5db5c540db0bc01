// Every fixture under test/fixtures/lint/<CODE>/ is linted with all rules; the findings must be exactly
// the `# expect:` annotations (positives) and nothing else (legitimate patterns stay clean).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expectations, lint, summarize } from './harness';
import { parseTorchVersion } from '../../../src/lint';

const root = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'lint');

describe('lint fixtures', () => {
  const dirs = fs.existsSync(root) ? fs.readdirSync(root).sort() : [];
  for (const dir of dirs) {
    for (const file of fs.readdirSync(path.join(root, dir)).filter((f) => f.endsWith('.py')).sort()) {
      it(`${dir}/${file}`, async () => {
        const source = fs.readFileSync(path.join(root, dir, file), 'utf8');
        // `# target-torch: 1.13` on the first lines sets the target version for that fixture.
        const target = /#\s*target-torch:\s*([\d.]+)/.exec(source.split('\n').slice(0, 5).join('\n'));
        const findings = await lint(source, { targetTorch: parseTorchVersion(target?.[1]) });
        assert.deepEqual(summarize(source, findings).sort(), expectations(source));
      });
    }
  }
});
