// Re-lint latency after a one-character edit of the bench's ~1,500-line file, for two builds of the
// linter loaded in the same process and measured in alternating rounds (so machine load hits both):
// node scripts/bench-relint-ab.mjs BASE_OUT_LINT_DIR [THIS_OUT_LINT_DIR]
// The same then runs on files that are one giant top-level statement (a 1,500- and a 6,000-line class
// of methods, a 1,500- and a 6,000-line `def main():`; see giant-statements.mjs), replacing one digit per edit.
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { giantClass, giantMain } from './giant-statements.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
// --giant-only: skip the 1,500-line multi-statement file.
const giantOnly = process.argv.includes('--giant-only');
// --scale F: F times the default number of edits per file (a quicker look on a loaded machine).
const scaleAt = process.argv.indexOf('--scale');
const scale = scaleAt >= 0 ? Number(process.argv[scaleAt + 1]) : 1;
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--scale');
const dirs = [positional[0], positional[1] ?? path.join(root, 'out/src/lint')];
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
  builds.push({ dir, mod, linter, doc, text: big, times: [] });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
let seed = 7;
const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648) % n);
for (let round = 0; round < (giantOnly ? 0 : Math.round(400 * scale)); round++) {
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
if (!giantOnly) for (const b of builds) console.log(`${path.relative(process.cwd(), b.dir) || b.dir}: re-lint after 1-char insert, median ${median(b.times).toFixed(2)} ms (${b.times.length} edits)`);

/** Median re-lint of each build after replacing one digit of `text` (the same digit in both builds, alternating). */
function giantAB(label, text, edits) {
  const digits = [...text.matchAll(/\d/g)].map((m) => m.index);
  const runs = builds.map((b) => {
    const doc = b.linter.open(text);
    b.mod.lintFile(doc.source, b.mod.defaultSettings);
    return { b, doc, text, times: [] };
  });
  for (let i = 0; i < edits; i++) {
    const at = digits[(i * 7919) % digits.length];
    for (const r of i % 2 === 0 ? runs : [...runs].reverse()) {
      const ch = r.text[at] === '1' ? '2' : '1';
      const t0 = performance.now();
      r.doc.update([{ rangeOffset: at, rangeLength: 1, text: ch }]);
      r.b.mod.lintFile(r.doc.source, r.b.mod.defaultSettings);
      if (i >= 10) r.times.push(performance.now() - t0);
      r.text = r.text.slice(0, at) + ch + r.text.slice(at + 1);
    }
  }
  for (const r of runs) r.doc.dispose();
  const lines = text.split('\n').length;
  console.log(`${label} (${lines} lines): ${runs.map((r) => `${path.relative(process.cwd(), r.b.dir) || r.b.dir} ${median(r.times).toFixed(2)} ms`).join(' | ')} (median of ${runs[0].times.length} digit edits, goal <= 3 ms)`);
}
giantAB('one class of methods', giantClass(corpus, 1500), Math.round(110 * scale));
giantAB('one class of methods', giantClass(corpus, 6000), Math.round(60 * scale));
giantAB('one def main()', giantMain(corpus, 1500), Math.round(110 * scale));
giantAB('one def main()', giantMain(corpus, 6000), Math.round(50 * scale));
