// `npm run bench:predict`: time of `memhint predict` on a 7B-parameter Llama-style config with AdamW and on
// GPT-2 124M at batch 8 x 1024, printed next to the goals (7B: under a minute on the 24 GB CI machine).
// Needs a torch 2 python with transformers: .venv-torch2 or MEMHINT_BENCH_PYTHON. Not a test: figures only.
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const python = process.env.MEMHINT_BENCH_PYTHON ?? path.join(repo, '.venv-torch2', 'bin', 'python');
if (!fs.existsSync(python)) {
  console.error(`bench:predict: no torch 2 python at ${python} (create .venv-torch2 or set MEMHINT_BENCH_PYTHON)`);
  process.exit(2);
}
const gib = (n) => `${(n / 1024 ** 3).toFixed(2)} GiB`;
const cases = [
  { name: 'Llama-style 7B (32 x 4096, AdamW), batch 1 x 2048', setup: 'llama_7b', args: [], goal: 'goal: < 60 s' },
  { name: 'GPT-2 124M (AdamW), batch 8 x 1024', setup: 'gpt2_124m', args: [], goal: 'issue: ~0.5 s per step on meta' },
];
const time = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : null;
console.log(`bench:predict — ${os.cpus().length} CPUs, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, ` +
  `${gib(os.totalmem())} RAM, ${execFileSync(python, ['-c', 'import torch; print(torch.__version__)']).toString().trim()}`);
// `-- --anchor REV` (e.g. `npm run bench:predict -- --anchor main`): the harness of git revision REV runs each
// case too, alternating with this tree's (anchor first), and the two reports are compared with the timings
// left out: a speed change must not change a figure.
const anchorAt = process.argv.indexOf('--anchor');
const anchorRev = anchorAt > 0 ? process.argv[anchorAt + 1] : null;
let anchorDir = null;
if (anchorRev) {
  anchorDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-bench-anchor-'));
  execFileSync('bash', ['-c', `git -C "$1" archive "$2" python | tar -x -C "$3"`, 'archive', repo, anchorRev, anchorDir]);
}
// times (every `...Ms` key: startMs, endMs, atMs, peakAtMs, originEpochMs; timeline `t`; seconds) and the pid
const timed = (k) => k.endsWith('Ms') || k === 't' || k === 'seconds' || k === 'pid';
const untimed = (v) => Array.isArray(v) ? v.map(untimed)
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).filter(([k]) => !timed(k)).map(([k, x]) => [k, untimed(x)])) : v;

function runCase(c, harnessDir) {
  const out = path.join(os.tmpdir(), `memhint-bench-predict-${process.pid}-${c.setup}.json`);
  const cli = [path.join(repo, 'bin', 'memhint.js'), 'predict', 'scripts/bench/predict_models.py::train_step', '--setup', c.setup,
    '--python', python, '--format', 'json', '--out', out, ...c.args];
  const command = time ? [time, ['-f', '%M %U %S', process.execPath, ...cli]] : [process.execPath, cli];
  const env = { ...process.env, TRANSFORMERS_VERBOSITY: 'error' };
  if (harnessDir) env.MEMHINT_HARNESS_DIR = harnessDir;
  const started = process.hrtime.bigint();
  const run = spawnSync(command[0], command[1], { cwd: repo, encoding: 'utf-8', env });
  const wall = Number(process.hrtime.bigint() - started) / 1e9;
  if (!fs.existsSync(out)) return { failed: `FAILED (exit ${run.status})\n${run.stderr.slice(-2000)}` };
  const report = JSON.parse(fs.readFileSync(out, 'utf-8'));
  fs.rmSync(out);
  const [rss, user, sys] = time ? (run.stderr.trim().split('\n').pop() ?? '').split(' ').map(Number) : [NaN, NaN, NaN];
  return { report, wall, cpu: user + sys, maxRss: time ? rss * 1024 : null };
}

function line(label, r) {
  const p = r.report.prediction;
  const steps = r.report.steps;
  const stepS = steps.reduce((sum, s) => sum + (s.endMs - s.startMs), 0) / steps.length / 1000;
  return `  ${label} wall (CLI, incl. python + torch import) ${r.wall.toFixed(1)} s | CPU ${r.cpu.toFixed(1)} s | in harness ${p.seconds.toFixed(1)} s | ` +
    `predicted step ${stepS.toFixed(2)} s (mean of ${steps.length})`;
}

for (const c of cases) {
  console.log(`${c.name}   (${c.goal})`);
  const anchor = anchorDir ? runCase(c, anchorDir) : null;
  const current = runCase(c, null);
  if (anchor) console.log(anchor.failed ? `  anchor ${anchorRev}: ${anchor.failed}` : line(`anchor ${anchorRev}:`.padEnd(16), anchor));
  if (current.failed) {
    console.log(`  this tree: ${current.failed}`);
    continue;
  }
  console.log(line(anchor ? 'this tree:'.padEnd(16) : '', current));
  const p = current.report.prediction;
  const params = current.report.peak ? current.report.peak.byKind.parameter : 0;
  console.log(`  parameters ${gib(params)} | max allocated ${gib(p.allocator.maxAllocatedBytes)} | max reserved ${gib(p.allocator.maxReservedBytes)} | raw peak ${gib(p.rawPeakBytes)}` +
    (current.maxRss !== null ? ` | harness max RSS ${gib(current.maxRss)}` : ''));
  if (anchor && !anchor.failed) {
    const [a, b] = [JSON.stringify(untimed(anchor.report), null, 1), JSON.stringify(untimed(current.report), null, 1)];
    let kept = '';
    if (a !== b) {
      kept = path.join(os.tmpdir(), `memhint-bench-predict-${c.setup}-`);
      fs.writeFileSync(`${kept}anchor.json`, a);
      fs.writeFileSync(`${kept}tree.json`, b);
      kept = ` (kept: ${kept}{anchor,tree}.json)`;
    }
    console.log(`  reports without timings: ${a === b ? 'identical' : 'DIFFERENT'} to the anchor's${kept}`);
  }
}
console.log(`load at the end ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
if (anchorDir) fs.rmSync(anchorDir, { recursive: true, force: true });
