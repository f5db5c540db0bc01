// The addon's NVML path on machines without a GPU: a test double of NVML's C ABI (compiled here from
// the source below) stands in for libnvidia-ml.so.1, so dlopen/dlsym, the struct layouts, the
// v3 -> v1 entry-point fallback and the buffer-regrow path all run for real. The values come from
// a state file the test writes; nothing in the product knows about the double.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createSampler, nativeSamplerStatus, probeGpu, seriesToJSON, type SamplerSeries } from '../../src/sampler';
import { AllocatorChild, sleep, waitFor } from './sampler-helpers';

const GiB = 1024 ** 3;

const FAKE_NVML_SOURCE = String.raw`
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
typedef struct { unsigned long long total, free, used; } mem_t;
typedef struct { unsigned int pid; unsigned long long used; } p1_t;
typedef struct { unsigned int pid; unsigned long long used; unsigned int gi, ci; } p2_t;
struct dev { unsigned long long total, used; };
struct proc { unsigned dev; unsigned pid; unsigned long long used; };
static struct dev devs[8]; static unsigned ndev;
static struct proc procs[512]; static unsigned nproc;
static void load() {
  ndev = nproc = 0;
  FILE* f = fopen(getenv("FAKE_NVML_STATE"), "r");
  if (!f) return;
  char kind[16], bytes[32];
  unsigned a, b; unsigned long long x, y;
  while (fscanf(f, "%15s", kind) == 1) {
    if (!strcmp(kind, "device") && fscanf(f, "%u %llu %llu", &a, &x, &y) == 3 && ndev < 8) { devs[ndev].total = x; devs[ndev].used = y; ndev++; }
    else if (!strcmp(kind, "proc") && fscanf(f, "%u %u %31s", &a, &b, bytes) == 3 && nproc < 512) {
      procs[nproc].dev = a; procs[nproc].pid = b;
      procs[nproc].used = strcmp(bytes, "na") ? strtoull(bytes, 0, 10) : ~0ULL; nproc++;
    }
  }
  fclose(f);
}
int nvmlInit_v2() { const char* e = getenv("FAKE_NVML_INIT_ERROR"); return e ? atoi(e) : 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int code) { static char buf[32]; snprintf(buf, sizeof buf, "Fake error %d", code); return buf; }
int nvmlDeviceGetCount_v2(unsigned* n) { load(); *n = ndev; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** h) { load(); if (i >= ndev) return 2; *h = (void*)(size_t)(i + 1); return 0; }
int nvmlDeviceGetName(void* h, char* name, unsigned len) { snprintf(name, len, "Fake GPU %u", (unsigned)(size_t)h - 1); return 0; }
int nvmlDeviceGetMemoryInfo(void* h, mem_t* m) {
  load(); unsigned i = (unsigned)(size_t)h - 1; if (i >= ndev) return 2;
  static unsigned long long calls = 0;
  m->total = devs[i].total; m->used = getenv("FAKE_NVML_COUNT_CALLS") ? ++calls : devs[i].used;
  m->free = m->total - m->used; return 0;
}
static int list(void* h, unsigned* count, void* out, int v2) {
  load(); unsigned i = (unsigned)(size_t)h - 1, n = 0, cap = *count;
  for (unsigned k = 0; k < nproc; k++) if (procs[k].dev == i) n++;
  *count = n;
  if (n > cap) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  unsigned j = 0;
  for (unsigned k = 0; k < nproc; k++) {
    if (procs[k].dev != i) continue;
    if (v2) { p2_t* p = (p2_t*)out + j++; p->pid = procs[k].pid; p->used = procs[k].used; p->gi = p->ci = 0xFFFFFFFF; }
    else { p1_t* p = (p1_t*)out + j++; p->pid = procs[k].pid; p->used = procs[k].used; }
  }
  return 0;
}
#ifndef ONLY_V1
int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned* c, void* o) { return list(h, c, o, 1); }
#endif
int nvmlDeviceGetComputeRunningProcesses(void* h, unsigned* c, void* o) { return list(h, c, o, 0); }
}
`;

describe('sampler NVML path (NVML test double)', function () {
  this.timeout(60_000);
  let dir = '';
  let libV3 = '';
  let libV1 = '';
  let state = '';

  before(function () {
    const status = nativeSamplerStatus();
    if (!status.available) {
      if (process.env.MEMHINT_SKIP_NATIVE === '1') this.skip();
      assert.fail(`native addon unavailable: ${status.reason} (set MEMHINT_SKIP_NATIVE=1 to skip)`);
    }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-fake-nvml-'));
    const src = path.join(dir, 'fake_nvml.cc');
    fs.writeFileSync(src, FAKE_NVML_SOURCE);
    libV3 = path.join(dir, 'libfake-nvml-v3.so');
    libV1 = path.join(dir, 'libfake-nvml-v1.so');
    execFileSync('g++', ['-shared', '-fPIC', '-O1', '-o', libV3, src]);
    execFileSync('g++', ['-shared', '-fPIC', '-O1', '-DONLY_V1', '-o', libV1, src]);
    state = path.join(dir, 'state');
    process.env.FAKE_NVML_STATE = state;
  });

  after(() => {
    delete process.env.FAKE_NVML_STATE;
    delete process.env.FAKE_NVML_INIT_ERROR;
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  // Writes the state atomically so the sampling thread never reads half a file.
  function writeState(lines: string[]): void {
    fs.writeFileSync(`${state}.tmp`, lines.join('\n') + '\n');
    fs.renameSync(`${state}.tmp`, state);
  }

  const others = (device: number, n: number) =>
    Array.from({ length: n }, (_, i) => `proc ${device} ${900000 + i} ${(i + 1) * 1024 * 1024}`);
  const last = (a: Float64Array | null) => (a ? a[a.length - 1] : Number.NaN);

  for (const [label, lib] of [
    ['v3 entry point', () => libV3],
    ['v1 entry point only', () => libV1],
  ] as const) {
    it(`follows the process's device and its own use (${label})`, async () => {
      const child = new AllocatorChild();
      try {
        await child.expect('ready');
        // 100 other processes on device 1 exceed the addon's first 64-entry buffer: it must regrow.
        writeState([
          `device 0 ${80 * GiB} ${10 * GiB}`,
          `device 1 ${96 * GiB} ${5 * GiB}`,
          ...others(1, 100),
          `proc 1 ${child.pid} ${1 * GiB}`,
        ]);
        const s = createSampler();
        s.start(child.pid, 2, { nvmlLibrary: lib(), gpuIntervalMs: 2 });
        await waitFor(() => last(s.read().gpuProcessBytes) === 1 * GiB, 3000, 'the first GPU reading');
        let series: SamplerSeries = s.read();
        assert.equal(series.gpu.available, true);
        assert.equal(series.gpu.device, 'Fake GPU 1');
        assert.equal(series.gpu.index, 1);
        assert.equal(series.gpu.processSeen, true);
        assert.equal(series.gpuTotalBytes, 96 * GiB);
        assert.equal(last(series.gpuUsedBytes), 5 * GiB);

        writeState([`device 0 ${80 * GiB} ${10 * GiB}`, `device 1 ${96 * GiB} ${8 * GiB}`, `proc 1 ${child.pid} ${3 * GiB}`]);
        await waitFor(() => last(s.read().gpuProcessBytes) === 3 * GiB, 3000, 'the updated GPU reading');
        series = s.stop();
        assert.equal(last(series.gpuUsedBytes), 8 * GiB);
        const json = seriesToJSON(series, 50);
        assert.equal(json.peak.gpuProcessBytes, 3 * GiB);
        assert.equal(json.peak.gpuUsedBytes, 8 * GiB);
        assert.ok(json.tMs.length <= 50);
      } finally {
        child.kill();
      }
    });
  }

  it('uses the device given by gpuIndex and sums the process over devices', async () => {
    writeState([
      `device 0 ${80 * GiB} ${10 * GiB}`,
      `device 1 ${96 * GiB} ${5 * GiB}`,
      `proc 0 ${process.pid} ${2 * GiB}`,
      `proc 1 ${process.pid} ${1 * GiB}`,
    ]);
    const s = createSampler();
    s.start(process.pid, 2, { nvmlLibrary: libV3, gpuIndex: 1, gpuIntervalMs: 2 });
    await sleep(50);
    const series = s.stop();
    assert.equal(series.gpu.device, 'Fake GPU 1');
    assert.equal(series.gpuTotalBytes, 96 * GiB);
    assert.equal(last(series.gpuProcessBytes), 3 * GiB);
  });

  it('reports an out-of-range gpuIndex as unavailable', () => {
    writeState([`device 0 ${80 * GiB} ${10 * GiB}`]);
    const s = createSampler();
    s.start(process.pid, 5, { nvmlLibrary: libV3, gpuIndex: 3 });
    const series = s.stop();
    assert.equal(series.gpu.available, false);
    assert.match(series.gpu.reason ?? '', /gpuIndex 3 out of range: NVML sees 1 device/);
  });

  it('records a withheld per-process figure as NaN (null in JSON)', async () => {
    writeState([`device 0 ${80 * GiB} ${10 * GiB}`, `proc 0 ${process.pid} na`]);
    const s = createSampler();
    s.start(process.pid, 2, { nvmlLibrary: libV3, gpuIntervalMs: 2 });
    await sleep(30);
    const series = s.stop();
    assert.ok(Number.isNaN(last(series.gpuProcessBytes)));
    assert.equal(last(series.gpuUsedBytes), 10 * GiB);
    assert.equal(seriesToJSON(series).gpuProcessBytes?.at(-1), null);
  });

  it('holds the last GPU reading between GPU queries', async () => {
    writeState([`device 0 ${80 * GiB} ${10 * GiB}`, `proc 0 ${process.pid} ${1 * GiB}`]);
    const s = createSampler();
    s.start(process.pid, 1, { nvmlLibrary: libV3, gpuIntervalMs: 1000 });
    await sleep(100);
    writeState([`device 0 ${80 * GiB} ${20 * GiB}`, `proc 0 ${process.pid} ${2 * GiB}`]);
    await sleep(100);
    const series = s.stop();
    assert.ok(series.tMs.length > 50);
    assert.ok(series.gpuUsedBytes!.every((v) => v === 10 * GiB), 'only the first query ran within 200 ms');
  });

  it('queries NVML on every tick when gpuIntervalMs equals intervalMs', async () => {
    writeState([`device 0 ${80 * GiB} ${10 * GiB}`]);
    process.env.FAKE_NVML_COUNT_CALLS = '1'; // the double reports its call count as "used"
    try {
      const s = createSampler();
      s.start(process.pid, 2, { nvmlLibrary: libV3, gpuIntervalMs: 2 });
      await sleep(300);
      const used = s.stop().gpuUsedBytes!;
      let changes = 0;
      for (let i = 1; i < used.length; i++) if (used[i] !== used[i - 1]) changes++;
      assert.ok(changes >= 0.9 * (used.length - 1), `${changes} fresh readings over ${used.length} samples`);
    } finally {
      delete process.env.FAKE_NVML_COUNT_CALLS;
    }
  });

  it('reports an NVML init failure with NVML’s own error text', () => {
    writeState([`device 0 ${80 * GiB} ${10 * GiB}`]);
    process.env.FAKE_NVML_INIT_ERROR = '9';
    try {
      const s = createSampler();
      s.start(process.pid, 5, { nvmlLibrary: libV3 });
      const series = s.stop();
      assert.equal(series.gpu.available, false);
      assert.equal(series.gpu.reason, 'nvmlInit_v2 failed: Fake error 9 (code 9)');
      assert.equal(probeGpu(libV3).reason, 'nvmlInit_v2 failed: Fake error 9 (code 9)');
    } finally {
      delete process.env.FAKE_NVML_INIT_ERROR;
    }
  });

  it('rejects a library that is not NVML', () => {
    const s = createSampler();
    s.start(process.pid, 5, { nvmlLibrary: 'libm.so.6' });
    const series = s.stop();
    assert.equal(series.gpu.available, false);
    assert.match(series.gpu.reason ?? '', /libm\.so\.6 lacks nvmlInit_v2/);
  });

  it('probeGpu lists the devices NVML sees', () => {
    writeState([`device 0 ${80 * GiB} ${10 * GiB}`, `device 1 ${96 * GiB} ${5 * GiB}`]);
    const probe = probeGpu(libV3);
    assert.equal(probe.available, true);
    assert.deepEqual(
      probe.devices.map((d) => [d.index, d.name, d.totalBytes, d.usedBytes]),
      [
        [0, 'Fake GPU 0', 80 * GiB, 10 * GiB],
        [1, 'Fake GPU 1', 96 * GiB, 5 * GiB],
      ],
    );
    const absent = probeGpu('/nonexistent/libnvidia-ml.so.1');
    assert.equal(absent.available, false);
    assert.match(absent.reason ?? '', /NVML library not loadable/);
  });
});
