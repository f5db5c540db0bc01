// Builds what the summary webview renders from a profile report: per-step figures, a downsampled
// timeline on one clock, display paths. Pure; no `vscode` here.
import * as path from 'node:path';
import { MEMORY_KINDS, type BytesByKind, type ProfileReport } from '../../profiler/report';
import { stepPeak } from '../hints/model';
import type { RanksView } from '../ranks/ranksView';
import { comparisonView } from './comparison';
import { moduleRows } from './moduleRows';
import { predictionView } from './predictionView';
import { kernelsView, noGradRows } from './findingsView';
import { lineRows } from './lineRows';
import type { KindSlice, SummaryViewModel, TimelineView } from './messages';
import { displayPath, displayWhere } from './paths';
import { loaderViews } from './workersView';

export const MAX_TIMELINE_POINTS = 2000;

export interface ViewModelOptions {
  /** Folders paths are shown relative to (workspace folders). */
  readonly roots: readonly string[];
  readonly maxPoints?: number;
  /** Why the report is outdated (a later run failed), shown above the figures. */
  readonly stale?: string | null;
  /** A multi-rank run: every rank's peak (the report is the shown rank's). */
  readonly ranks?: RanksView | null;
  /** The other kind of report (measured for a predicted one, or the reverse); compared only when it is
   *  of the same step. */
  readonly counterpart?: ProfileReport | null;
}

export { displayPath, moduleRows };

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

function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function buildViewModel(report: ProfileReport, options: ViewModelOptions): SummaryViewModel {
  const roots = options.roots;
  const lines = lineRows(report, roots);

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
  const title = titleOf(target);
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
      ? { message: report.oom.message, where: displayWhere(report.oom.location, roots), requestedBytes: report.oom.requestedBytes, advice: [...report.oom.advice] }
      : null,
    budget: report.budget
      ? { budgetBytes: report.budget.budgetBytes, exceeded: report.budget.exceeded, where: displayWhere(report.budget.firstExceeded, roots) }
      : null,
    hasSnapshot: report.cuda?.snapshotPath != null,
    modules: moduleRows(report.modules ?? []),
    prediction: predictionView(report, roots),
    ranks: options.ranks ?? null,
    stale: options.stale ?? null,
    loaders: loaderViews(report, roots),
    noGrad: noGradRows(report, roots),
    kernels: kernelsView(report, roots),
    comparison: options.counterpart ? comparisonView(report, options.counterpart, roots) : null,
  };
}

/**
 * What was profiled, as the summary's heading: `train.py::train_step`; for a loop, the script and the
 * loop (`chargpt.py — loop at trainer.py:72` when memhint.profile.script ran a module's loop, where the
 * script's name alone would not say which loop the figures are of).
 */
export function titleOf(target: ProfileReport['target']): string {
  const script = path.basename(target.script);
  if (target.function) return `${script}::${target.function}`;
  if (target.kind !== 'loop' || target.loopLine === null) return script;
  const loopFile = target.loopFile ?? null;
  return loopFile !== null && path.resolve(loopFile) !== path.resolve(target.script) ? `${script} — loop at ${path.basename(loopFile)}:${target.loopLine}` : `${script} — loop on line ${target.loopLine}`;
}
