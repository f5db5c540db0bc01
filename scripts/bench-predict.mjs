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
for (const c of cases) {
  const out = path.join(os.tmpdir(), `memhint-bench-predict-${process.pid}-${c.setup}.json`);
  const cli = [path.join(repo, 'bin', 'memhint.js'), 'predict', 'scripts/bench/predict_models.py::train_step', '--setup', c.setup,
    '--python', python, '--format', 'json', '--out', out, ...c.args];
  const command = time ? [time, ['-f', '%M', process.execPath, ...cli]] : [process.execPath, cli];
  const started = process.hrtime.bigint();
  const run = spawnSync(command[0], command[1], { cwd: repo, encoding: 'utf-8', env: { ...process.env, TRANSFORMERS_VERBOSITY: 'error' } });
  const wall = Number(process.hrtime.bigint() - started) / 1e9;
  if (!fs.existsSync(out)) {
    console.log(`${c.name}: FAILED (exit ${run.status})\n${run.stderr.slice(-2000)}`);
    continue;
  }
  const report = JSON.parse(fs.readFileSync(out, 'utf-8'));
  fs.rmSync(out);
  const p = report.prediction;
  const step = report.steps[0];
  const params = report.peak ? report.peak.byKind.parameter : 0;
  const maxRss = time ? Number((run.stderr.trim().split('\n').pop() ?? '0')) * 1024 : null;
  console.log(`${c.name}`);
  console.log(`  wall (CLI, incl. python + torch import) ${wall.toFixed(1)} s | in harness ${p.seconds.toFixed(1)} s | predicted step ${((step.endMs - step.startMs) / 1000).toFixed(2)} s   (${c.goal})`);
  console.log(`  parameters ${gib(params)} | max allocated ${gib(p.allocator.maxAllocatedBytes)} | max reserved ${gib(p.allocator.maxReservedBytes)} | raw peak ${gib(p.rawPeakBytes)}` +
    (maxRss !== null ? ` | harness max RSS ${gib(maxRss)}` : ''));
}
