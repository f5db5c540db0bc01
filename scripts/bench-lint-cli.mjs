// Whole-process throughput (lines/s) and peak RSS of `memhint lint` over a tree of Python files, with
// worker threads (the default) and on one thread (MEMHINT_LINT_WORKERS=0); with --anchor, the same
// runs of another build's bundle (a dist/ folder from before a change) in the same run, side by side.
// The tree is not part of the repository: generate or fetch one, e.g. diffusers' src/ (about 575k lines).
//   node scripts/bench-lint-cli.mjs [--anchor DIST_DIR] [--rounds N] TREE
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const [, value] = args.splice(i, 2);
  return value;
};
const anchor = flag('--anchor');
const rounds = Number(flag('--rounds') ?? 1);
const [tree] = args;
if (tree === undefined || !fs.existsSync(tree)) throw new Error('usage: bench-lint-cli.mjs [--anchor DIST_DIR] [--rounds N] TREE');

const pyFiles = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? pyFiles(path.join(dir, e.name)) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : []));
const files = pyFiles(tree);
const lines = files.reduce((n, f) => n + fs.readFileSync(f, 'utf8').split('\n').length, 0);

/** One CLI run under /usr/bin/time (peak RSS of the whole process, worker threads included). */
function run(dist, workers) {
  const script = `require(${JSON.stringify(path.join(dist, 'cli.js'))}).main(process.argv.slice(1)).then((c) => { process.exitCode = c; })`;
  const env = { ...process.env };
  if (workers !== undefined) env.MEMHINT_LINT_WORKERS = String(workers);
  else delete env.MEMHINT_LINT_WORKERS;
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, '-e', script, 'lint', '--no-config', '--format', 'json', tree], { env, encoding: 'utf8', maxBuffer: 1 << 30 });
  const seconds = (performance.now() - t0) / 1000;
  if (r.status !== 0 && r.status !== 1) throw new Error(`lint exited ${r.status}: ${r.stderr.slice(-500)}`);
  const findings = JSON.parse(r.stdout);
  const count = Array.isArray(findings) ? findings.length : Object.values(findings).flat().length;
  return { seconds, rssMb: Number(r.stderr.trim().split('\n').pop()) / 1024, findings: count, out: r.stdout };
}

const cases = [
  ...(anchor ? [['anchor', path.resolve(anchor), undefined]] : []),
  ['current, 1 thread', path.join(root, 'dist'), 0],
  ['current, threads', path.join(root, 'dist'), undefined],
];
process.stdout.write(`tree: ${files.length} files, ${lines} lines; load average ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
const outputs = new Map();
for (let r = 0; r < rounds; r++) {
  for (const [name, dist, workers] of cases) {
    const res = run(dist, workers);
    outputs.set(name, res.out);
    process.stdout.write(`${name.padEnd(18)} ${Math.round(lines / res.seconds).toLocaleString('en').padStart(9)} lines/s  ${res.seconds.toFixed(1).padStart(6)} s  peak RSS ${res.rssMb.toFixed(0).padStart(5)} MB  ${res.findings} findings\n`);
  }
}
const first = [...outputs.values()][0];
process.stdout.write(`reports identical: ${[...outputs.values()].every((o) => o === first)}\n`);
