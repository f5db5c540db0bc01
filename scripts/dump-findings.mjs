// Dumps every finding (code, range, message, fix) of every .py file under the given folders as JSON,
// one fresh Linter per run, so two builds' outputs can be diffed: node scripts/dump-findings.mjs OUT.json [DIR...]
// Defaults to test/fixtures and examples.
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const lintDir = process.env.MEMHINT_OUT ?? path.join(root, 'out/src/lint');
const { Linter } = require(path.join(lintDir, 'index.js'));

const [outFile, ...dirs] = process.argv.slice(2);
if (!outFile) throw new Error('usage: dump-findings.mjs OUT.json [DIR...]');
const roots = dirs.length > 0 ? dirs : [path.join(root, 'test/fixtures'), path.join(root, 'examples')];

function pyFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => {
      const p = path.join(dir, e.name);
      return e.isDirectory() ? pyFiles(p) : e.name.endsWith('.py') ? [p] : [];
    });
}

const linter = await Linter.create();
const out = {};
let count = 0;
for (const file of roots.flatMap(pyFiles)) {
  const result = linter.lintText(fs.readFileSync(file, 'utf8'));
  const findings = Array.isArray(result) ? result : result.findings;
  out[path.relative(root, file)] = findings;
  count += findings.length;
}
fs.writeFileSync(outFile, JSON.stringify(out, null, 1) + '\n');
console.log(`${Object.keys(out).length} files, ${count} findings -> ${outFile}`);
