// Re-lint latency after a one-character edit of the bench's ~1,500-line file, for two builds of the
// linter loaded in the same process and measured in alternating rounds (so machine load hits both):
// node scripts/bench-relint-ab.mjs BASE_OUT_LINT_DIR [THIS_OUT_LINT_DIR]
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const dirs = [process.argv[2], process.argv[3] ?? path.join(root, 'out/src/lint')];
const pyFiles = (dir) =>
  !fs.existsSync(dir)
    ? []
    : fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? pyFiles(path.join(dir, e.name)) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : []));
const corpus = [path.join(root, 'examples'), path.join(root, 'test/fixtures/lint'), path.join(root, 'test/fixtures/corpus')].flatMap(pyFiles).map((f) => fs.readFileSync(f, 'utf8'));
let big = '';
for (let i = 0; big.split('\n').length < 1500; i++) big += corpus[i % corpus.length] + '\n';

const builds = [];
for (const dir of dirs) {
  const mod = require(path.join(path.resolve(dir), 'index.js'));
  const linter = await mod.Linter.create();
  const doc = linter.open(big);
  mod.lintFile(doc.source, mod.defaultSettings);
  builds.push({ dir, mod, doc, text: big, times: [] });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
let seed = 7;
const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648) % n);
for (let round = 0; round < 400; round++) {
  const at = rand(big.length);
  for (const b of round % 2 === 0 ? builds : [...builds].reverse()) {
    const ch = b.text[at] === 'x' ? 'y' : 'x';
    const t0 = performance.now();
    b.doc.update([{ rangeOffset: at, rangeLength: 0, text: ch }]);
    b.mod.lintFile(b.doc.source, b.mod.defaultSettings);
    b.times.push(performance.now() - t0);
    b.doc.update([{ rangeOffset: at, rangeLength: 1, text: '' }]);
    b.mod.lintFile(b.doc.source, b.mod.defaultSettings);
  }
}
for (const b of builds) console.log(`${path.relative(process.cwd(), b.dir) || b.dir}: re-lint after 1-char insert, median ${median(b.times).toFixed(2)} ms (${b.times.length} edits)`);
