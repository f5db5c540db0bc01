// Lint throughput (lines/s) of memhint vs @astral-sh/ruff-wasm-nodejs on the same files in the same run,
// plus tree-sitter's parse alone (the ceiling of any linter on it), and the median time to re-lint a ~1,500-line
// file after a one-character edit (incremental path).
// Usage: npm run bench:lint [-- --corpus DIR] [--json] [--relint-only]   (MEMHINT_OUT=DIR: another build)
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { giantClass, giantMain } from './giant-statements.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
// MEMHINT_OUT: another build's out/src/lint (e.g. a copy from before a change), for before/after runs.
const { Linter, lintFile, defaultSettings } = require(path.join(process.env.MEMHINT_OUT ?? path.join(root, 'out/src/lint'), 'index.js'));
const ruff = require('@astral-sh/ruff-wasm-nodejs');

const args = process.argv.slice(2);
const corpusDirs = [];
for (let i = 0; i < args.length; i++) if (args[i] === '--corpus') corpusDirs.push(args[++i]);
if (corpusDirs.length === 0) corpusDirs.push(path.join(root, 'examples'), path.join(root, 'test/fixtures/lint'), path.join(root, 'test/fixtures/corpus'));

function pyFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? pyFiles(p) : e.name.endsWith('.py') ? [p] : [];
  });
}
const corpus = corpusDirs.flatMap(pyFiles).map((f) => fs.readFileSync(f, 'utf8'));
const corpusLines = corpus.reduce((n, t) => n + t.split('\n').length, 0);
if (corpus.length === 0) throw new Error('empty corpus');

const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

/** Seconds for one pass of `lintOne` over the whole corpus. */
function passSeconds(lintOne) {
  const t0 = performance.now();
  for (const t of corpus) lintOne(t);
  return (performance.now() - t0) / 1000;
}

/**
 * Lines per second of each linter, and the median of per-round ratios to the first. Both run to a
 * steady state first: ruff-wasm's module is large and V8 tiers it up over several passes (its first
 * pass is ~20x slower than its tenth), so a short warm-up would flatter memhint. Rounds then alternate
 * the linters (order rotated every round) so that background load hits all alike.
 */
function throughputs(linters, { warmupPasses = 12, rounds = 11 } = {}) {
  for (let i = 0; i < warmupPasses; i++) for (const lint of linters) passSeconds(lint);
  const rates = linters.map(() => []);
  const ratios = linters.map(() => []);
  for (let r = 0; r < rounds; r++) {
    const seconds = new Array(linters.length);
    for (let k = 0; k < linters.length; k++) {
      const i = (k + r) % linters.length;
      seconds[i] = passSeconds(linters[i]);
    }
    seconds.forEach((s, i) => {
      rates[i].push(corpusLines / s);
      ratios[i].push(s / seconds[0]);
    });
    if (process.env.BENCH_DEBUG) process.stderr.write(`round ${r}: ${seconds.map((s) => (s * 1000).toFixed(0)).join(' / ')} ms\n`);
  }
  return rates.map((r, i) => ({ linesPerSecond: median(r), ratioToFirst: median(ratios[i]) }));
}

const linter = await Linter.create();
// --relint-only: skip the throughput rounds (minutes on a loaded machine), measure the edit latencies.
const relintOnly = args.includes('--relint-only');
const workspace = new ruff.Workspace(ruff.Workspace.defaultSettings(), ruff.PositionEncoding.Utf16);
const parser = linter.parser.parser;
// The floor under any linter built on web-tree-sitter: parsing alone, no rules, no mirror.
const skipped = { linesPerSecond: NaN, ratioToFirst: NaN };
const [memhint, ruffWasm, parseOnly] = relintOnly
  ? [skipped, skipped, skipped]
  : throughputs([(t) => linter.lintText(t), (t) => workspace.check(t), (t) => parser.parse(t).delete()]);
const memhintRate = memhint.linesPerSecond;
const ruffRate = ruffWasm.linesPerSecond;

// Incremental: a ~1,500-line file made of corpus files, edited one character at a time.
let big = '';
for (let i = 0; big.split('\n').length < 1500; i++) big += corpus[i % corpus.length] + '\n';
const doc = linter.open(big);
lintFile(doc.source, defaultSettings);
const digits = [...big.matchAll(/\d/g)].map((m) => m.index);
const times = [];
let text = big;
for (let i = 0; i < 400; i++) {
  // Replace one digit by another: always valid Python, changes one token.
  const at = digits[(i * 7919) % digits.length];
  const ch = text[at] === '1' ? '2' : '1';
  const t0 = performance.now();
  doc.update([{ rangeOffset: at, rangeLength: 1, text: ch }]);
  lintFile(doc.source, defaultSettings);
  const dt = performance.now() - t0;
  text = text.slice(0, at) + ch + text.slice(at + 1);
  if (i >= 50) times.push(dt);
}
// Typing: insert a character after an opening parenthesis (`(x...`, still valid Python), then delete
// it. Unlike a replacement this shifts every later statement, so it also measures that path.
const opens = [...big.matchAll(/\(/g)].map((m) => m.index);
const typing = [];
for (let i = 0; i < 200; i++) {
  const at = opens[(i * 7919) % opens.length] + 1;
  for (const change of [{ rangeOffset: at, rangeLength: 0, text: 'x' }, { rangeOffset: at, rangeLength: 1, text: '' }]) {
    const t0 = performance.now();
    doc.update([change]);
    lintFile(doc.source, defaultSettings);
    if (i >= 25) typing.push(performance.now() - t0);
  }
}
doc.dispose();

/**
 * Re-lint latency of a file that is one giant top-level statement (as 122 of diffusers' 322 files over
 * 1,000 lines are: a class or `main()`), where chunked reparsing cannot help: a class whose methods are
 * the corpus's functions, and the corpus indented into `def main():` (see giant-statements.mjs), up to
 * `lines` lines. Digits are replaced one at a time, as above.
 */
function giantStatementRelint(kind, lines) {
  const giant = kind === 'class' ? giantClass(corpus, lines) : giantMain(corpus, lines);
  const d = linter.open(giant);
  lintFile(d.source, defaultSettings);
  const at = [...giant.matchAll(/\d/g)].map((m) => m.index);
  const ms = [];
  let t = giant;
  for (let i = 0; i < 120; i++) {
    const k = at[(i * 7919) % at.length];
    const ch = t[k] === '1' ? '2' : '1';
    const t0 = performance.now();
    d.update([{ rangeOffset: k, rangeLength: 1, text: ch }]);
    lintFile(d.source, defaultSettings);
    if (i >= 20) ms.push(performance.now() - t0);
    t = t.slice(0, k) + ch + t.slice(k + 1);
  }
  d.dispose();
  return { kind, fileLines: giant.split('\n').length, medianMs: +median(ms).toFixed(3), p90Ms: +p90(ms).toFixed(3) };
}
const giants = [['class', 1500], ['class', 6000], ['main', 1500], ['main', 6000]].map(([kind, lines]) => giantStatementRelint(kind, lines));
const result = {
  corpus: { files: corpus.length, lines: corpusLines },
  memhintLinesPerSecond: Math.round(memhintRate),
  ruffWasmLinesPerSecond: Math.round(ruffRate),
  ratio: +ruffWasm.ratioToFirst.toFixed(2),
  treeSitterParseOnlyLinesPerSecond: Math.round(parseOnly.linesPerSecond),
  parseOnlyRatio: +(ruffWasm.ratioToFirst / parseOnly.ratioToFirst).toFixed(2),
  relint: { fileLines: big.split('\n').length, medianMs: +median(times).toFixed(3), p90Ms: +p90(times).toFixed(3) },
  relintTyping: { medianMs: +median(typing).toFixed(3), p90Ms: +p90(typing).toFixed(3) },
  relintGiantStatement: giants,
};
if (args.includes('--json')) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
else {
  process.stdout.write(`corpus: ${result.corpus.files} files, ${result.corpus.lines} lines; load average ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
  process.stdout.write(`memhint    ${result.memhintLinesPerSecond.toLocaleString('en')} lines/s\n`);
  process.stdout.write(`ruff-wasm  ${result.ruffWasmLinesPerSecond.toLocaleString('en')} lines/s (${ruff.Workspace.version()})\n`);
  process.stdout.write(`ratio      ${result.ratio}x (memhint / ruff-wasm; goal >= 1)\n`);
  process.stdout.write(`tree-sitter parse alone ${result.treeSitterParseOnlyLinesPerSecond.toLocaleString('en')} lines/s (${result.parseOnlyRatio}x ruff-wasm; the ceiling of any linter on web-tree-sitter)\n`);
  process.stdout.write(`re-lint after 1-char edit of a ${result.relint.fileLines}-line file: median ${result.relint.medianMs} ms, p90 ${result.relint.p90Ms} ms (goal <= 2 ms)\n`);
  process.stdout.write(`re-lint while typing (insert, then delete, a character): median ${result.relintTyping.medianMs} ms, p90 ${result.relintTyping.p90Ms} ms\n`);
  for (const g of giants) process.stdout.write(`re-lint after 1-char edit of a ${g.fileLines}-line file that is one ${g.kind === 'class' ? 'class of methods' : 'def main()'}: median ${g.medianMs} ms, p90 ${g.p90Ms} ms (goal <= 3 ms)\n`);
}
