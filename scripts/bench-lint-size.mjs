// Time and heap of one lint of a large file made by concatenating the corpus (examples, fixtures):
// node --expose-gc scripts/bench-lint-size.mjs 1 5 10   (sizes in MB)
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const { Linter } = require(path.join(process.env.MEMHINT_OUT ?? path.join(root, 'out/src/lint'), 'index.js'));
const pyFiles = (dir) =>
  !fs.existsSync(dir)
    ? []
    : fs
        .readdirSync(dir, { withFileTypes: true })
        .sort((a, b) => a.name.localeCompare(b.name))
        .flatMap((e) => (e.isDirectory() ? pyFiles(path.join(dir, e.name)) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : []));
const corpus = [path.join(root, 'examples'), path.join(root, 'test/fixtures/lint'), path.join(root, 'test/fixtures/corpus')].flatMap(pyFiles).map((f) => fs.readFileSync(f, 'utf8'));
const linter = await Linter.create();
for (const mb of process.argv.slice(2).map(Number)) {
  const parts = [];
  let size = 0;
  for (let i = 0; size < mb * 1e6; i++) {
    const t = corpus[i % corpus.length] + '\n';
    parts.push(t);
    size += t.length;
  }
  const text = parts.join('');
  globalThis.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const findings = linter.lintText(text);
  const seconds = (performance.now() - t0) / 1000;
  console.log(`${mb} MB (${text.split('\n').length} lines): ${seconds.toFixed(2)} s, ${findings.length} findings, heap after ${((process.memoryUsage().heapUsed - heap0) / 1e6).toFixed(0)} MB, peak rss ${(process.resourceUsage().maxRSS / 1e3).toFixed(0)} MB`);
}
