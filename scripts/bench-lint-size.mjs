// Time and peak memory of one lint of a large file, generated at bench time by concatenating the
// repository's Python (examples/, test/fixtures/) with each copy's top-level names renamed (`f` ->
// `f_3` in copy 3), so the file reads like one big real module rather than the same names redefined.
// Each case runs in a child process of its own (peak RSS is per process); with --anchor, the same
// cases run against another build (e.g. a copy of out/ from before a change) in the same run, side by side.
//   node scripts/bench-lint-size.mjs [--anchor OUT_LINT_DIR] [--write DIR] 1 5 10   (sizes in MB)
// --write DIR only writes the generated files (DIR/MBmb/bench-MB.py) for profiling the CLI on them, each in a
// folder of its own: files side by side are each other's importers (the project index reads siblings).
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const here = new URL(import.meta.url).pathname;

const pyFiles = (dir) =>
  !fs.existsSync(dir)
    ? []
    : fs
        .readdirSync(dir, { withFileTypes: true })
        .sort((a, b) => a.name.localeCompare(b.name))
        .flatMap((e) => (e.isDirectory() ? pyFiles(path.join(dir, e.name)) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : []));

/** Copy `k` of a file with its top-level def/class names (and every use of them) suffixed by `_k`. */
function renamed(text, k) {
  const names = [...text.matchAll(/^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]);
  if (names.length === 0) return text;
  const pattern = new RegExp(`\\b(${[...new Set(names)].join('|')})\\b`, 'g');
  return text.replace(pattern, (name) => `${name}_${k}`);
}

/** A file of about `mb` MB (10^6 UTF-16 units) of renamed copies of the repository's Python. */
export function generate(mb) {
  const corpus = [path.join(root, 'examples'), path.join(root, 'test/fixtures')].flatMap(pyFiles).map((f) => fs.readFileSync(f, 'utf8'));
  const parts = [];
  let size = 0;
  for (let i = 0; size < mb * 1e6; i++) {
    const t = renamed(corpus[i % corpus.length], Math.floor(i / corpus.length)) + '\n';
    parts.push(t);
    size += t.length;
  }
  return parts.join('');
}

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const [, value] = args.splice(i, 2);
  return value;
};

const one = flag('--one');
if (one !== undefined) {
  // Child: lint one generated file with the build in MEMHINT_OUT, print a JSON line.
  const { Linter } = require(path.join(process.env.MEMHINT_OUT ?? path.join(root, 'out/src/lint'), 'index.js'));
  const text = generate(Number(one));
  const linter = await Linter.create();
  // CPU time too: on a shared machine the wall clock measures the other processes as much as the lint.
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  const t0 = performance.now();
  const c0 = cpu();
  const result = linter.lintText(text);
  const cpuSeconds = cpu() - c0;
  const seconds = (performance.now() - t0) / 1000;
  const findings = Array.isArray(result) ? result : result.findings;
  process.stdout.write(
    JSON.stringify({ mb: Number(one), lines: text.split('\n').length, seconds, cpuSeconds, findings: findings.length, peakRssMb: process.resourceUsage().maxRSS / 1e3, heapUsedMb: process.memoryUsage().heapUsed / 1e6 }) + '\n',
  );
  process.exit(0);
}

const anchor = flag('--anchor');
const writeDir = flag('--write');
const sizes = args.map(Number);
if (sizes.length === 0 || sizes.some((s) => !(s > 0))) throw new Error('usage: bench-lint-size.mjs [--anchor OUT_LINT_DIR] [--write DIR] MB...');
if (writeDir !== undefined) {
  fs.mkdirSync(writeDir, { recursive: true });
  for (const mb of sizes) {
    const dir = path.join(writeDir, `${mb}mb`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `bench-${mb}.py`), generate(mb));
  }
  process.exit(0);
}

const builds = [...(anchor ? [['anchor', path.resolve(anchor)]] : []), ['current', path.join(root, 'out/src/lint')]];
const run = (mb, dir) => JSON.parse(execFileSync(process.execPath, [here, '--one', String(mb)], { env: { ...process.env, MEMHINT_OUT: dir }, encoding: 'utf8', maxBuffer: 1 << 20 }));
const fmt = (r) => `${r.seconds.toFixed(2).padStart(7)} s (${r.cpuSeconds.toFixed(2)} s cpu) ${r.peakRssMb.toFixed(0).padStart(5)} MB rss ${String(r.findings).padStart(5)} findings`;
process.stdout.write(`load average ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
for (const mb of sizes) {
  const rows = builds.map(([name, dir]) => [name, run(mb, dir)]);
  process.stdout.write(`${mb} MB (${rows[0][1].lines} lines): ${rows.map(([name, r]) => `${name} ${fmt(r)}`).join(' | ')}\n`);
}
