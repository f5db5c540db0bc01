// GPU check for the native sampler (needs an NVIDIA GPU, its driver, and a python with CUDA torch).
// Run after `npm run compile` and the addon build:  node test/gpu/sampler-check.mjs
// A child allocates 4 GiB on the GPU; the sampler must see it in NVML's per-process figure and in
// the device's used memory, see it go after empty_cache(), and end the series when the child exits.
// Prints the NVML sampling cost at 1 ms. Exit code 1 on any failed check.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { createSampler, nativeSamplerStatus, probeGpu } = require(path.join(root, 'out', 'src', 'sampler'));
const python = process.env.MEMHINT_GPU_PYTHON ?? 'python3';
const GiB = 1024 ** 3;
const ALLOC = 4 * GiB;
let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const gib = (b) => `${(b / GiB).toFixed(2)} GiB`;

const status = nativeSamplerStatus();
check(status.available, `native addon loads (${status.available ? status.path : status.reason})`);
if (!status.available) process.exit(1);
const probe = probeGpu();
check(probe.available && probe.devices.length > 0, `NVML sees ${probe.devices.length} device(s)${probe.reason ? ` (${probe.reason})` : ''}`);
for (const d of probe.devices) console.log(`     #${d.index} ${d.name}: ${gib(d.usedBytes)} used of ${gib(d.totalBytes)}`);
if (!probe.available) process.exit(1);

const code = `
import sys, torch
torch.cuda.init()
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
print("context", flush=True); sys.stdin.readline()
x = torch.empty(${ALLOC}, dtype=torch.uint8, device="cuda"); x.fill_(1); torch.cuda.synchronize()
print("allocated", flush=True); sys.stdin.readline()
del x; torch.cuda.empty_cache(); torch.cuda.synchronize()
print("freed", flush=True); sys.stdin.readline()
`;
const child = spawn(python, ['-c', code], { stdio: ['pipe', 'pipe', 'inherit'] });
let out = '';
child.stdout.on('data', (d) => (out += d));
const exited = new Promise((r) => child.on('exit', r));
const waitLine = async (l) => {
  const deadline = Date.now() + 120_000;
  while (!out.includes(l)) {
    if (Date.now() > deadline) throw new Error(`child never printed ${l}`);
    await sleep(20);
  }
};
const last = (a) => (a && a.length ? a[a.length - 1] : NaN);

const sampler = createSampler();
sampler.start(child.pid, 1, { gpuIntervalMs: 5 });
await waitLine('context');
await sleep(300);
let s = sampler.read();
const ctxProcess = last(s.gpuProcessBytes);
const ctxUsed = last(s.gpuUsedBytes);
check(s.gpu.available, `GPU sampled on ${s.gpu.device} (#${s.gpu.index}), total ${gib(s.gpuTotalBytes ?? 0)}`);
check(s.gpu.processSeen === true, `child pid ${child.pid} appears in NVML's process list (CUDA context: ${gib(ctxProcess)})`);
child.stdin.write('\n');
await waitLine('allocated');
await sleep(300);
s = sampler.read();
const allocProcess = last(s.gpuProcessBytes) - ctxProcess;
const allocUsed = last(s.gpuUsedBytes) - ctxUsed;
check(Math.abs(allocProcess - ALLOC) < 0.05 * ALLOC, `per-process rise ${gib(allocProcess)} for a 4 GiB tensor (±5%)`);
check(Math.abs(allocUsed - ALLOC) < 0.1 * ALLOC, `device-used rise ${gib(allocUsed)} (±10%, other tenants may move it)`);
child.stdin.write('\n');
await waitLine('freed');
await sleep(300);
s = sampler.read();
check(Math.abs(last(s.gpuProcessBytes) - ctxProcess) < 0.05 * ALLOC, `after empty_cache the process is back to ${gib(last(s.gpuProcessBytes))}`);
child.stdin.write('\n');
await exited;
const deadline = Date.now() + 3000;
while (!sampler.read().exited && Date.now() < deadline) await sleep(10);
const final = sampler.stop();
check(final.exited, `series ended at exit (${final.endReason}), ${final.tMs.length} samples`);
const wall = final.tMs[final.tMs.length - 1];
console.log(`     sampler thread with NVML every 5 ms at 1 kHz: ${((100 * final.samplerCpuMs) / wall).toFixed(2)}% of one core, late ticks ${final.lateTicks}`);

// NVML cost per query: sample our own process with NVML on every 1 ms tick, then with GPU off.
for (const [label, opts] of [['NVML every tick', { gpuIntervalMs: 1 }], ['NVML default (every 20 ms)', {}], ['GPU off', { gpu: false }]]) {
  const t = createSampler();
  t.start(process.pid, 1, opts);
  await sleep(3000);
  const r = t.stop();
  const ms = r.tMs[r.tMs.length - 1];
  console.log(`     1 kHz, ${label}: ${((100 * r.samplerCpuMs) / ms).toFixed(2)}% of one core, ${((1000 * r.samplerCpuMs) / r.tMs.length).toFixed(1)} us/sample, late ${r.lateTicks}`);
}
console.log(failures === 0 ? 'sampler GPU check passed' : `sampler GPU check: ${failures} failure(s)`);
process.exit(failures === 0 ? 0 : 1);
