// Fallback sampler for when the addon is missing: reads /proc/<pid>/statm on a JS timer, so it runs on
// the event loop at a coarser rate (>= 20 ms) and cannot see GPU memory.
import * as fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { MemorySampler, SamplerSeries, SamplerStartOptions } from './types';
import { checkInterval, checkPid } from './validate';

export const JS_MIN_INTERVAL_MS = 20;
const DEFAULT_MAX_SAMPLES = 1 << 20;

let pageSizeCache: number | undefined;
/**
 * statm counts pages; Node exposes no page size, so derive it once from this process's own RSS as
 * both statm (pages) and status (kB) report it, snapped to the sizes Linux uses (4K, 16K, 64K).
 */
export function pageSize(): number {
  if (pageSizeCache !== undefined) return pageSizeCache;
  const resident = Number(fs.readFileSync('/proc/self/statm', 'latin1').split(' ')[1]);
  const vmRssKb = Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'latin1'))?.[1]);
  const ratio = (vmRssKb * 1024) / resident;
  const sizes = [4096, 16384, 65536];
  pageSizeCache = Number.isFinite(ratio)
    ? sizes.reduce((best, s) => (Math.abs(Math.log(s / ratio)) < Math.abs(Math.log(best / ratio)) ? s : best))
    : 4096;
  return pageSizeCache;
}

/** Growable column of doubles; views handed out stay valid after growth (they keep the old array). */
class Column {
  private data = new Float64Array(1024);
  length = 0;
  push(v: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = v;
  }
  view(): Float64Array {
    return this.data.subarray(0, this.length);
  }
}

type StatmRead = { rssBytes: number } | { gone: string } | { error: string };

function readStatm(fd: number, buf: Buffer): StatmRead {
  let n: number;
  try {
    n = fs.readSync(fd, buf, 0, buf.length, 0);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ESRCH' ? { gone: 'process exited' } : { error: `reading statm failed: ${String(err)}` };
  }
  if (n === 0) return { gone: 'process exited' };
  const [size, resident] = buf.toString('latin1', 0, n).split(' ', 2).map(Number);
  if (size === 0 && resident === 0) return { gone: 'process exited (zombie)' };
  return { rssBytes: resident * pageSize() };
}

export class JsMemorySampler implements MemorySampler {
  readonly source = 'js' as const;
  private state: 'idle' | 'running' | 'stopped' = 'idle';
  private pid = 0;
  private intervalMs = JS_MIN_INTERVAL_MS;
  private fd = -1;
  private timer: NodeJS.Timeout | undefined;
  private readonly buf = Buffer.alloc(256);
  private readonly t = new Column();
  private readonly rss = new Column();
  private t0 = 0;
  private startedAtEpochMs = 0;
  private maxSamples = DEFAULT_MAX_SAMPLES;
  private exited = false;
  private truncated = false;
  private ended = false;
  private endReason: string | undefined;
  private endedAtMs: number | undefined;
  private lateTicks = 0;

  constructor(readonly fallbackReason: string) {}

  start(pid: number, intervalMs: number, options: SamplerStartOptions = {}): void {
    if (this.state === 'running') throw new Error(`sampler already started (pid ${this.pid})`);
    if (this.state === 'stopped') throw new Error('sampler already stopped; create a new sampler for another series');
    checkPid(pid);
    checkInterval(intervalMs, 1);
    let fd: number;
    try {
      fd = fs.openSync(`/proc/${pid}/statm`, 'r');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const message = code === 'ENOENT' ? `no process with pid ${pid}` : `cannot open /proc/${pid}/statm: ${String(err)}`;
      throw new Error(message, { cause: err });
    }
    const first = readStatm(fd, this.buf);
    if (!('rssBytes' in first)) {
      fs.closeSync(fd);
      throw new Error(`pid ${pid} has no user address space (kernel thread, or it has exited)`);
    }
    this.fd = fd;
    this.pid = pid;
    this.intervalMs = Math.max(intervalMs, JS_MIN_INTERVAL_MS);
    this.maxSamples = options.maxSamples ?? DEFAULT_MAX_SAMPLES;
    this.t0 = performance.now();
    this.startedAtEpochMs = Date.now();
    this.state = 'running';
    this.append(0, first.rssBytes);
    let next = this.t0 + this.intervalMs;
    this.timer = setInterval(() => {
      const now = performance.now();
      if (now - next > this.intervalMs) this.lateTicks += Math.floor((now - next) / this.intervalMs);
      next = now + this.intervalMs;
      this.sample(now);
    }, this.intervalMs);
    this.timer.unref(); // sampling alone must not keep the host process alive
  }

  private append(tMs: number, rssBytes: number): void {
    this.t.push(tMs);
    this.rss.push(rssBytes);
  }

  private sample(now: number): void {
    const tMs = now - this.t0;
    if (this.t.length >= this.maxSamples) {
      this.truncated = true;
      this.end(`sample limit reached (${this.maxSamples} samples)`, tMs);
      return;
    }
    const r = readStatm(this.fd, this.buf);
    if ('rssBytes' in r) this.append(tMs, r.rssBytes);
    else if ('gone' in r) {
      this.exited = true;
      this.end(r.gone, tMs);
    } else this.end(r.error, tMs);
  }

  private end(reason: string, tMs: number): void {
    if (this.ended) return;
    this.ended = true;
    this.endReason = reason;
    this.endedAtMs = tMs;
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
  }

  read(): SamplerSeries {
    if (this.state === 'idle') throw new Error('sampler not started');
    return {
      source: 'js',
      intervalMs: this.intervalMs,
      pid: this.pid,
      tMs: this.t.view(),
      rssBytes: this.rss.view(),
      gpuUsedBytes: null,
      gpuTotalBytes: null,
      gpuProcessBytes: null,
      gpu: { available: false, reason: `GPU memory is sampled only by the native addon (${this.fallbackReason})` },
      exited: this.exited,
      running: this.state === 'running' && !this.ended,
      endReason: this.endReason,
      endedAtMs: this.endedAtMs,
      startedAtEpochMs: this.startedAtEpochMs,
      truncated: this.truncated,
      lateTicks: this.lateTicks,
    };
  }

  stop(): SamplerSeries {
    if (this.state === 'idle') throw new Error('sampler not started');
    if (this.state === 'stopped') throw new Error('sampler already stopped');
    this.end('stopped', performance.now() - this.t0);
    this.state = 'stopped';
    return this.read();
  }
}
