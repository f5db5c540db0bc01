// Builds what the summary webview renders from a profile report: per-step figures, a downsampled
// timeline on one clock, display paths. Pure; no `vscode` here.
import * as path from 'node:path';
import type { PredictionInfo } from '../../predict/schema';
import { MEMORY_KINDS, type BytesByKind, type ModuleStats, type ProfileReport, type SourceLocation } from '../../profiler/report';
import { perStep, profiledSteps } from '../../profiler/units';
import { stepPeak } from '../hints/model';
import type { RanksView } from '../ranks/ranksView';
import type { KindSlice, LineRow, ModuleRow, PredictionView, SummaryViewModel, TimelineView } from './messages';

export const MAX_TIMELINE_POINTS = 2000;

export interface ViewModelOptions {
  /** Folders paths are shown relative to (workspace folders). */
  readonly roots: readonly string[];
  readonly maxPoints?: number;
  /** Why the report is outdated (a later run failed), shown above the figures. */
  readonly stale?: string | null;
  /** A multi-rank run: every rank's peak (the report is the shown rank's). */
  readonly ranks?: RanksView | null;
}

export function displayPath(file: string, roots: readonly string[]): string {
  for (const root of roots) {
    const rel = path.relative(root, file);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
  }
  return file;
}

function slices(byKind: BytesByKind): KindSlice[] {
  return MEMORY_KINDS.filter((k) => byKind[k] > 0)
    .map((kind) => ({ kind, bytes: byKind[kind] }))
    .sort((a, b) => b.bytes - a.bytes);
}

/**
 * Keeps at most `max` points: the series is cut into buckets and each keeps its first, lowest and
 * highest point, so peaks and troughs survive (a plain stride would drop the spike that matters).
 */
export function downsample(points: readonly (readonly [number, number])[], max: number): [number, number][] {
  if (points.length === 0) return [];
  if (points.length <= max) return points.map(([t, v]) => [t, v]);
  const perBucket = Math.ceil((points.length * 3) / max);
  const out: [number, number][] = [];
  for (let i = 0; i < points.length; i += perBucket) {
    const bucket = points.slice(i, i + perBucket);
    let lo = bucket[0];
    let hi = bucket[0];
    for (const p of bucket) {
      if (p[1] < lo[1]) lo = p;
      if (p[1] > hi[1]) hi = p;
    }
    const keep = [...new Set([bucket[0], lo, hi])].sort((a, b) => a[0] - b[0]);
    for (const p of keep) out.push([p[0], p[1]]);
  }
  const last = points[points.length - 1];
  if (out[out.length - 1][0] !== last[0]) out.push([last[0], last[1]]);
  return out;
}

function zip(t: readonly number[], v: readonly number[] | undefined): [number, number][] {
  if (v === undefined) return [];
  const n = Math.min(t.length, v.length);
  const out: [number, number][] = [];
  for (let i = 0; i < n; i++) out.push([t[i], v[i]]);
  return out;
}

function timelineView(report: ProfileReport, max: number): TimelineView {
  const tl = report.timeline;
  const allocator = downsample(
    tl.allocator.map((p) => [p.t, p.live] as const),
    max,
  );
  let os: TimelineView['os'] = null;
  if (tl.os && tl.os.t.length > 0) {
    // The sampler may stamp epoch milliseconds; bring them onto the harness clock (t = 0 at origin).
    const offset = tl.os.t[0] > 1e11 ? tl.originEpochMs : 0;
    const t = tl.os.t.map((x) => x - offset);
    // Samples before t = 0 cover interpreter start-up and `import torch`, before the harness clock
    // starts: nothing on the chart lines up with them.
    const fromOrigin = (points: [number, number][]): [number, number][] => points.filter(([x]) => x >= 0);
    os = { source: tl.os.source, rss: downsample(fromOrigin(zip(t, tl.os.rssBytes)), max), gpu: downsample(fromOrigin(zip(t, tl.os.gpuUsedBytes)), max) };
  }
  const cuda = tl.cuda ? { allocated: downsample(zip(tl.cuda.t, tl.cuda.allocated), max), reserved: downsample(zip(tl.cuda.t, tl.cuda.reserved), max) } : null;
  const ends = [
    ...allocator.map((p) => p[0]),
    ...tl.steps.map((s) => s.endMs),
    ...(os?.rss.map((p) => p[0]) ?? []),
    ...(cuda?.reserved.map((p) => p[0]) ?? []),
  ];
  const values = [
    ...allocator.map((p) => p[1]),
    ...(os?.rss.map((p) => p[1]) ?? []),
    ...(os?.gpu.map((p) => p[1]) ?? []),
    ...(cuda?.reserved.map((p) => p[1]) ?? []),
    ...(cuda?.allocated.map((p) => p[1]) ?? []),
  ];
  return {
    allocator,
    steps: tl.steps.map((s) => ({ step: s.step, warmup: s.warmup, startMs: s.startMs, endMs: s.endMs })),
    os,
    cuda,
    peak: report.peak ? { atMs: report.peak.atMs, bytes: report.peak.bytes } : null,
    endMs: ends.length > 0 ? Math.max(...ends) : 0,
    maxBytes: values.length > 0 ? Math.max(...values) : 0,
  };
}

function where(loc: SourceLocation | null, roots: readonly string[]): string | null {
  return loc === null ? null : `${displayPath(loc.file, roots)}:${loc.line}`;
}

/**
 * The module tree as rows: ids made unique across root models, each row's parent the nearest listed
 * ancestor (a module that never ran is not listed, its children hang under the next one up).
 */
export function moduleRows(modules: readonly ModuleStats[]): ModuleRow[] {
  const ids = new Set<string>();
  const rows: ModuleRow[] = [];
  for (const m of modules) {
    const id = m.path === '' ? m.root : `${m.root}/${m.path}`;
    if (ids.has(id)) continue;
    let parent: string | null = null;
    if (m.path !== '') {
      const parts = m.path.split('.');
      for (let k = parts.length - 1; k >= 0 && parent === null; k--) {
        const candidate = k === 0 ? m.root : `${m.root}/${parts.slice(0, k).join('.')}`;
        if (ids.has(candidate)) parent = candidate;
      }
    }
    const depth = parent === null ? 0 : (rows.find((r) => r.id === parent)?.depth ?? 0) + 1;
    ids.add(id);
    rows.push({
      id,
      parent,
      depth,
      name: m.path === '' ? m.root : m.path.slice(m.path.lastIndexOf('.') + 1),
      type: m.type,
      calls: m.calls,
      params: m.params,
      grads: m.grads,
      optimizer: m.optimizer,
      // The harness already divides these by the profiled steps.
      saved: m.saved,
      forwardAlloc: m.forward_alloc,
      backwardAlloc: m.backward_alloc,
      liveAtPeak: m.live_at_peak,
    });
  }
  return rows;
}

function predictionView(report: ProfileReport, roots: readonly string[]): PredictionView | null {
  if ((report as { mode?: unknown }).mode !== 'predicted') return null;
  const p = (report as { prediction?: PredictionInfo }).prediction;
  if (p === undefined) return null;
  const whatIf = [p.amp ? `AMP ${p.amp}` : '', p.checkpoint ? `checkpoint ${p.checkpoint}` : '', ...Object.entries(p.setupArgs).map(([k, v]) => `${k}=${JSON.stringify(v)}`)].filter(Boolean).join(', ');
  return {
    maxAllocated: p.allocator.maxAllocatedBytes,
    maxReserved: p.allocator.maxReservedBytes,
    rawPeak: p.rawPeakBytes,
    deviceMemory: p.deviceMemoryBytes,
    fits: p.fits,
    firstExceeded: where(p.firstExceeded, roots),
    whatIf,
    seconds: p.seconds,
  };
}

function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function buildViewModel(report: ProfileReport, options: ViewModelOptions): SummaryViewModel {
  const roots = options.roots;
  const steps = profiledSteps(report);
  const key = (file: string, line: number): string => `${file}\n${line}`;
  const leakAt = new Map(report.leaks.map((l) => [key(l.file, l.line), l]));
  const liveAt = new Map<string, number>();
  for (const l of report.peak?.byLine ?? []) liveAt.set(key(l.file, l.line), (liveAt.get(key(l.file, l.line)) ?? 0) + l.bytes);
  const per = (n: number): number => perStep(n, steps);

  const lines: LineRow[] = report.lines.map((l) => ({
    file: l.file,
    displayFile: displayPath(l.file, roots),
    line: l.line,
    code: l.code.trim(),
    function: l.function ?? null,
    calls: Math.round((l.calls / steps) * 100) / 100,
    allocated: per(l.inclusive.allocated),
    freed: per(l.inclusive.freed),
    net: per(l.inclusive.net),
    peak: l.inclusive.peak,
    selfNet: per(l.self.net),
    savedForBackward: per(l.savedForBackward),
    backward: per(l.backward.allocated),
    leakPerStep: leakAt.get(key(l.file, l.line))?.bytesPerStep ?? 0,
    liveAtPeak: liveAt.get(key(l.file, l.line)) ?? 0,
  }));

  const leakTotal = report.leaks.reduce((s, l) => s + l.bytesPerStep, 0);
  const cuda = report.cuda
    ? {
        allocated: report.cuda.allocatedBytes,
        reserved: report.cuda.reservedBytes,
        maxAllocated: report.cuda.maxAllocatedBytes,
        maxReserved: report.cuda.maxReservedBytes,
        fragmentation: report.cuda.fragmentationBytes,
        stats: Object.entries(report.cuda.memoryStats).sort(([a], [b]) => a.localeCompare(b)),
        summary: report.cuda.memorySummary,
      }
    : null;
  const target = report.target;
  const title = target.function ? `${path.basename(target.script)}::${target.function}` : path.basename(target.script);
  return {
    title,
    environment: {
      python: report.environment.python,
      pythonVersion: report.environment.pythonVersion,
      torchVersion: report.environment.torchVersion,
      backend: report.environment.backend,
      device: report.environment.device,
    },
    notes: [...report.notes],
    partial: report.partial,
    headline: {
      peakBytes: stepPeak(report),
      steps: report.steps.length,
      medianStepMs: median(report.steps.map((s) => s.endMs - s.startMs)),
      leakBytesPerStep: leakTotal,
    },
    timeline: timelineView(report, options.maxPoints ?? MAX_TIMELINE_POINTS),
    lines,
    peakByKind: report.peak ? slices(report.peak.byKind) : [],
    peakTopLines: (report.peak?.byLine ?? []).slice(0, 15).map((l) => ({
      file: l.file,
      displayFile: displayPath(l.file, roots),
      line: l.line,
      bytes: l.bytes,
      byKind: slices(l.byKind),
    })),
    leaks: report.leaks.map((l) => ({
      file: l.file,
      displayFile: displayPath(l.file, roots),
      line: l.line,
      code: l.code.trim(),
      bytesPerStep: l.bytesPerStep,
      graphNodesPerStep: l.graphNodesPerStep,
      reason: l.reason,
      heldBy: l.heldBy ?? null,
    })),
    cuda,
    oom: report.oom
      ? { message: report.oom.message, where: where(report.oom.location, roots), requestedBytes: report.oom.requestedBytes, advice: [...report.oom.advice] }
      : null,
    budget: report.budget
      ? { budgetBytes: report.budget.budgetBytes, exceeded: report.budget.exceeded, where: where(report.budget.firstExceeded, roots) }
      : null,
    hasSnapshot: report.cuda?.snapshotPath != null,
    modules: moduleRows(report.modules ?? []),
    prediction: predictionView(report, roots),
    ranks: options.ranks ?? null,
    stale: options.stale ?? null,
  };
}
