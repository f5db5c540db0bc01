// Which memos a re-lint recomputes: after each 1-character insert into bench:lint's ~1,500-line file (the
// same text as scripts/bench-lint.mjs), counts per memo descriptor (VersionMemo, NodeMemo, ModuleCodeMemo,
// KeyMemo; by its name) the misses (compute ran), the hits and the milliseconds spent in its computes
// (inclusive: a compute that asks another memo counts that one's time too). A descriptor that misses on
// every keystroke is a whole-file or whole-statement analysis redone per edit, the first place to look
// when the re-lint latency grows. A wrapper around the compiled descriptors' methods, for diagnosis only.
//   node scripts/profile-relint-memos.mjs [--edits N] [--top K] [--giant class|main] [--lines N] [--digits] [--self]
//   (MEMHINT_OUT=DIR: another build; --giant: one of giant-statements.mjs's files instead, --lines long)
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { giantClass, giantMain } from './giant-statements.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const dir = process.env.MEMHINT_OUT ?? path.join(root, 'out/src/lint');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const edits = option('--edits', 20);
const top = option('--top', 25);

const session = require(path.join(dir, 'session.js'));
const { Linter, lintFile, defaultSettings } = require(path.join(dir, 'index.js'));

const stats = new Map();
/** The computes running (innermost last): each adds its time to its caller's `nested`, for self times. */
const active = [];
let counting = false;
for (const cls of ['VersionMemo', 'NodeMemo', 'ModuleCodeMemo', 'KeyMemo']) {
  const proto = session[cls]?.prototype;
  if (proto === undefined) continue;
  for (const method of ['get', 'keyed', 'getTracked', 'getTrackedWithin']) {
    const original = proto[method];
    if (typeof original !== 'function') continue;
    proto[method] = function (...callArgs) {
      if (!counting) return original.apply(this, callArgs);
      // The compute callback is the one function argument; wrap it to see whether (and how long) it ran.
      const at = callArgs.findIndex((a) => typeof a === 'function');
      let missed = false;
      let ms = 0;
      let self = 0;
      if (at >= 0) {
        const compute = callArgs[at];
        callArgs[at] = (...a) => {
          missed = true;
          const t0 = performance.now();
          const frame = { nested: 0 };
          active.push(frame);
          try {
            return compute(...a);
          } finally {
            active.pop();
            const spent = performance.now() - t0;
            ms += spent;
            self += spent - frame.nested;
            if (active.length > 0) active[active.length - 1].nested += spent;
          }
        };
      }
      const result = original.apply(this, callArgs);
      const key = `${cls}.${method} ${this.name}`;
      const s = stats.get(key) ?? { misses: 0, hits: 0, ms: 0, self: 0 };
      if (missed) s.misses++;
      else s.hits++;
      s.ms += ms;
      s.self += self;
      stats.set(key, s);
      return result;
    };
  }
}

const pyFiles = (d) =>
  !fs.existsSync(d) ? [] : fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? pyFiles(path.join(d, e.name)) : e.name.endsWith('.py') ? [path.join(d, e.name)] : []));
const corpus = [path.join(root, 'examples'), path.join(root, 'test/fixtures/lint'), path.join(root, 'test/fixtures/corpus')].flatMap(pyFiles).map((f) => fs.readFileSync(f, 'utf8'));
let big = '';
for (let i = 0; big.split('\n').length < 1500; i++) big += corpus[i % corpus.length] + '\n';
const giantAt = args.indexOf('--giant');
if (giantAt >= 0) big = (args[giantAt + 1] === 'main' ? giantMain : giantClass)(corpus, option('--lines', 1500));

const linter = await Linter.create();
const doc = linter.open(big);
lintFile(doc.source, defaultSettings);
let lintMs = 0;
// --digits: replace one digit by another per edit, as bench:lint does (changes one number token only);
// otherwise insert an `x` anywhere (may rename an identifier, so file-wide facts change too).
const digits = args.includes('--digits') ? [...big.matchAll(/\d/g)].map((m) => m.index) : null;
for (let r = 0; r < edits; r++) {
  const at = digits === null ? (r * 7919) % big.length : digits[(r * 7919) % digits.length];
  const old = big[at];
  if (digits === null) doc.update([{ rangeOffset: at, rangeLength: 0, text: 'x' }]);
  else doc.update([{ rangeOffset: at, rangeLength: 1, text: old === '1' ? '2' : '1' }]);
  counting = true;
  const t0 = performance.now();
  lintFile(doc.source, defaultSettings);
  lintMs += performance.now() - t0;
  counting = false;
  doc.update([{ rangeOffset: at, rangeLength: 1, text: digits === null ? '' : old }]);
  lintFile(doc.source, defaultSettings);
}
doc.dispose();

const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
console.log(`${big.split('\n').length} lines, ${edits} inserts, load ${load}; mean re-lint (instrumented) ${(lintMs / edits).toFixed(1)} ms; per re-lint:`);
// ms: inclusive (with the memos its compute asked); self: without them (--self sorts by it).
console.log(`${'misses'.padStart(8)} ${'hits'.padStart(8)} ${'ms'.padStart(8)} ${'self'.padStart(8)}  descriptor`);
const by = args.includes('--self') ? 'self' : 'ms';
const rows = [...stats].sort((a, b) => b[1][by] - a[1][by]).slice(0, top);
for (const [key, s] of rows) console.log(`${(s.misses / edits).toFixed(1).padStart(8)} ${(s.hits / edits).toFixed(1).padStart(8)} ${(s.ms / edits).toFixed(2).padStart(8)} ${(s.self / edits).toFixed(2).padStart(8)}  ${key}`);
