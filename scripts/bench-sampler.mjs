// CPU cost of the native memory sampler, chiefly at 1 kHz (goal: < 1% of one core), plus its RSS
// accuracy against a child that allocates a known amount. Needs `npm run compile` and the addon.
//   node scripts/bench-sampler.mjs [--seconds 10] [--json out.json]
// Figures: the sampling thread's own CPU clock (what the sampler costs), the whole process's
// process.cpuUsage() while the JS thread idles (an upper bound), and a baseline thread that only
// wakes on the same schedule doing no work (what merely waking 1000x/s costs on this machine).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const seconds = Number(arg('--seconds', '10'));
const jsonOut = arg('--json', path.join(root, '.bench', 'sampler.json'));
const python = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

let sampler;
try {
  sampler = require(path.join(root, 'out', 'src', 'sampler'));
} catch (err) {
  console.error(`bench-sampler: run \`npm run compile\` first (${err.message})`);
  process.exit(2);
}
const status = sampler.nativeSamplerStatus();
if (!status.available) {
  console.error(`bench-sampler: native addon unavailable: ${status.reason}`);
  process.exit(2);
}
const addon = require(status.path);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (cpuMs, wallMs) => (100 * cpuMs) / wallMs;
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

function spawnIdleChild() {
  return spawn('/bin/sleep', ['3600'], { stdio: 'ignore' });
}

async function measureNative(intervalMs, gpu) {
  const child = spawnIdleChild();
  await sleep(50);
  const s = sampler.createSampler({ prefer: 'native' });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  s.start(child.pid, intervalMs, { gpu });
  await sleep(seconds * 1000);
  const series = s.stop();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  child.kill();
  const gaps = Array.from(series.tMs.subarray(1), (t, i) => t - series.tMs[i]).sort((a, b) => a - b);
  return {
    intervalMs,
    gpu: series.gpu.available ? series.gpu.device : `off (${series.gpu.reason})`,
    samples: series.tMs.length,
    achievedHz: series.tMs.length / (wallMs / 1000),
    lateTicks: series.lateTicks,
    gapMs: { p50: quantile(gaps, 0.5), p99: quantile(gaps, 0.99), max: gaps[gaps.length - 1] },
    samplerThreadCpuPct: pct(series.samplerCpuMs, wallMs),
    processCpuPct: pct((cpu.user + cpu.system) / 1000, wallMs),
    usPerSample: (series.samplerCpuMs * 1000) / series.tMs.length,
  };
}

// The sampler and a bare wake-up thread side by side over the same window, so both see the same
// machine load: the difference is what sampling itself costs beyond waking up.
async function measurePaired(intervalMs) {
  const child = spawnIdleChild();
  await sleep(50);
  const s = sampler.createSampler({ prefer: 'native' });
  s.start(child.pid, intervalMs, { gpu: false });
  const bare = addon.measureWakeCost(seconds * 1000, intervalMs); // blocks JS; the sampler runs on its thread
  const series = s.stop();
  child.kill();
  const wallMs = series.tMs[series.tMs.length - 1];
  return {
    intervalMs,
    samplerCpuPct: pct(series.samplerCpuMs, wallMs),
    bareWakeCpuPct: pct(bare.cpuMs, bare.wallMs),
    usPerSample: (series.samplerCpuMs * 1000) / series.tMs.length,
    usPerBareWake: (bare.cpuMs * 1000) / bare.wakes,
  };
}

async function measureJs() {
  const child = spawnIdleChild();
  await sleep(50);
  const s = sampler.createSampler({ prefer: 'js' });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  s.start(child.pid, sampler.JS_MIN_INTERVAL_MS);
  await sleep(seconds * 1000);
  const series = s.stop();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  child.kill();
  return { intervalMs: series.intervalMs, samples: series.tMs.length, processCpuPct: pct((cpu.user + cpu.system) / 1000, wallMs) };
}

async function idleProcessCpu() {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await sleep(Math.min(seconds, 5) * 1000);
  const cpu = process.cpuUsage(cpu0);
  return pct((cpu.user + cpu.system) / 1000, performance.now() - t0);
}

async function rssAccuracy(prefer, intervalMs) {
  const MiB = 1024 * 1024;
  const bytes = 200 * MiB;
  const code = 'import sys\nprint("ready", flush=True)\nsys.stdin.readline()\nheld = b"\\x01" * int(sys.argv[1])\nprint("allocated", flush=True)\nsys.stdin.readline()';
  const child = spawn(python, ['-c', code, String(bytes)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const waitLine = (l) => new Promise((r) => { const f = () => { if (out.includes(l)) r(); else setTimeout(f, 10); }; f(); });
  child.stdout.on('data', (d) => { out += d; });
  await waitLine('ready');
  const s = sampler.createSampler({ prefer });
  s.start(child.pid, intervalMs);
  await sleep(300);
  const base = s.read().rssBytes.at(-1);
  child.stdin.write('go\n');
  await waitLine('allocated');
  await sleep(200);
  const series = s.stop();
  child.kill();
  const delta = series.rssBytes.at(-1) - base;
  return { sampler: prefer, expectedMiB: 200, measuredMiB: delta / MiB, errorPct: (100 * (delta - bytes)) / bytes };
}

const results = { node: process.version, seconds, cpus: (await import('node:os')).cpus().length, loadavg: (await import('node:os')).loadavg() };
results.idleProcessCpuPct = await idleProcessCpu();
results.wakeBaseline1ms = addon.measureWakeCost(seconds * 1000, 1);
results.wakeBaseline1ms.cpuPct = pct(results.wakeBaseline1ms.cpuMs, results.wakeBaseline1ms.wallMs);
results.wakeBaseline1ms.usPerWake = (results.wakeBaseline1ms.cpuMs * 1000) / results.wakeBaseline1ms.wakes;
results.paired1ms = await measurePaired(1);
results.native1ms = await measureNative(1, false);
results.native1msGpu = await measureNative(1, true);
results.native10ms = await measureNative(10, true);
results.js = await measureJs();
results.rss = [await rssAccuracy('native', 1), await rssAccuracy('js', 20)];

const f = (x, d = 2) => x.toFixed(d);
console.log(`memhint sampler bench: ${seconds} s per run, ${results.cpus} CPUs, load ${results.loadavg.map((x) => f(x)).join(' ')}, node ${process.version}`);
console.log(`  idle node process (no sampler):      ${f(results.idleProcessCpuPct)}% of one core`);
console.log(`  bare wake-up thread at 1 kHz:         ${f(results.wakeBaseline1ms.cpuPct)}% (${f(results.wakeBaseline1ms.usPerWake, 1)} us per wake-up)`);
{
  const p = results.paired1ms;
  console.log(
    `  same window, 1 kHz: sampler thread   ${f(p.samplerCpuPct)}% (${f(p.usPerSample, 1)} us/sample) vs bare wake-ups ${f(p.bareWakeCpuPct)}% (${f(p.usPerBareWake, 1)} us/wake): sampling work ${f(p.usPerSample - p.usPerBareWake, 1)} us/sample`,
  );
}
for (const k of ['native1ms', 'native1msGpu', 'native10ms']) {
  const r = results[k];
  console.log(
    `  native ${String(r.intervalMs).padStart(2)} ms, GPU ${r.gpu.slice(0, 40).padEnd(40)} sampler thread ${f(r.samplerThreadCpuPct)}%  process ${f(r.processCpuPct)}%  ` +
      `${f(r.usPerSample, 1)} us/sample  ${f(r.achievedHz, 0)} Hz  gaps p50 ${f(r.gapMs.p50, 3)} p99 ${f(r.gapMs.p99, 3)} max ${f(r.gapMs.max, 1)} ms  late ${r.lateTicks}`,
  );
}
console.log(`  js fallback ${results.js.intervalMs} ms:                 process ${f(results.js.processCpuPct)}%  (${results.js.samples} samples)`);
for (const r of results.rss) console.log(`  RSS accuracy (${r.sampler}): 200 MiB allocation measured as ${f(r.measuredMiB)} MiB (${f(r.errorPct)}%)`);
mkdirSync(path.dirname(jsonOut), { recursive: true });
writeFileSync(jsonOut, JSON.stringify(results, null, 2));
console.log(`  -> ${path.relative(root, jsonOut)}`);
