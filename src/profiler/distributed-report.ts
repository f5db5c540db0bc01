// Merges the per-rank outcomes of a distributed profile into one view: step peaks per rank side by side,
// the imbalance between ranks, per-line and per-module figures per rank (worst rank first), leaks by rank, which ranks
// failed and how, and what DDP holds. Pure: no I/O.
import * as fs from 'node:fs';
import type { DdpInfo, DistributedOutcome, FsdpUnitInfo, RankOutcome, RankStatus } from './distributed';
import { moduleFigures, type ModuleFigures, type ProfileReport, type SourceLocation } from './report';
import { collectiveErrors, collectiveSites, formatCollectives, type CollectiveSite } from './collectives';
import { formatBytes } from './units';

export const DISTRIBUTED_REPORT_VERSION = 1;

export interface RankSummary {
  readonly rank: number;
  readonly status: RankStatus;
  /** Highest live bytes over the rank's profiled steps; null without a report. */
  readonly peakBytes: number | null;
  readonly stepPeaks: readonly number[];
  readonly oom: boolean;
  readonly error: { readonly kind: string; readonly message: string; readonly location: SourceLocation | null } | null;
  /** Profiled steps the rank reported progress for (how far a failed or hung rank got). */
  readonly lastStep: number | null;
}

export interface Imbalance {
  readonly maxRank: number;
  readonly minRank: number;
  readonly maxBytes: number;
  readonly minBytes: number;
  readonly meanBytes: number;
  /** max - min */
  readonly spreadBytes: number;
  /** max / mean; 1 when balanced. */
  readonly maxOverMean: number;
}

export interface RankLineFigures {
  readonly rank: number;
  /** Self bytes allocated per profiled step. */
  readonly allocatedPerStep: number;
  readonly netPerStep: number;
  /** Live bytes this line had allocated at the rank's step peak. */
  readonly liveAtPeak: number;
}

export interface MergedLine extends SourceLocation {
  readonly code: string;
  /** Worst rank first (most live at the peak, then most allocated). */
  readonly ranks: readonly RankLineFigures[];
}

/** One nn.Module's figures in one rank (per step; each including its submodules, as the rank's report has them). */
export interface RankModuleFigures extends ModuleFigures {
  readonly rank: number;
}

/** A module of the profiled model (by its root class and path) as every rank measured it. */
export interface MergedModule {
  readonly root: string;
  /** `named_modules()` path under the root ("" for the root itself), as in the ranks' reports. */
  readonly path: string;
  readonly type: string;
  /** Worst rank first (most live at the peak, then the most held: parameters, gradients, optimizer state, saved). */
  readonly ranks: readonly RankModuleFigures[];
}

export interface MergedLeak extends SourceLocation {
  readonly code: string;
  readonly ranks: readonly { readonly rank: number; readonly bytesPerStep: number; readonly bytesByStep: readonly number[]; readonly heldBy: string | null }[];
  /** The leak is DDP rebuilding its gradient buckets once (second iteration), not memory growing per step. */
  readonly ddpBucketRebuild: boolean;
}

export interface DistributedReport {
  readonly version: typeof DISTRIBUTED_REPORT_VERSION;
  readonly kind: 'distributed';
  readonly launcher: 'torchrun' | 'direct';
  readonly worldSize: number;
  readonly torchVersion: string | null;
  readonly ranks: readonly RankSummary[];
  /** The rank that reported an error first (the likely cause when peers then fail in a collective). */
  readonly firstFailedRank: number | null;
  readonly imbalance: Imbalance | null;
  readonly lines: readonly MergedLine[];
  /** Per-module figures per rank, worst rank first; modules ordered by their worst rank (absent in older reports). */
  readonly modules?: readonly MergedModule[];
  readonly leaks: readonly MergedLeak[];
  readonly ddp: readonly (DdpInfo & { readonly rank: number })[];
  /** FSDP units per rank (absent in reports written before FSDP was described). */
  readonly fsdp?: readonly (FsdpUnitInfo & { readonly rank: number })[];
  /** FSDP's all-gather / reduce-scatter buffers per rank, line and unit (absent in older reports). */
  readonly collectives?: readonly CollectiveSite[];
  readonly notes: readonly string[];
  /** Every rank's own report (null for a rank that sent none), by rank. */
  readonly reports: readonly (ProfileReport | null)[];
}

const key = (l: SourceLocation): string => `${l.file}:${l.line}`;

function summarize(rank: RankOutcome): RankSummary {
  const report = rank.report;
  const stepPeaks = report ? report.steps.map((s) => s.peakLive) : [];
  return {
    rank: rank.rank,
    status: rank.status,
    peakBytes: stepPeaks.length ? Math.max(...stepPeaks) : null,
    stepPeaks,
    oom: rank.error?.kind === 'oom' || report?.oom !== undefined,
    error: rank.error ? { kind: rank.error.kind, message: rank.error.message, location: rank.error.location } : null,
    lastStep: rank.lastProgress ? rank.lastProgress.step : null,
  };
}

export function imbalanceOf(ranks: readonly RankSummary[]): Imbalance | null {
  const measured = ranks.filter((r): r is RankSummary & { peakBytes: number } => r.peakBytes !== null);
  if (measured.length < 2) return null;
  let max = measured[0];
  let min = measured[0];
  for (const r of measured) {
    if (r.peakBytes > max.peakBytes) max = r;
    if (r.peakBytes < min.peakBytes) min = r;
  }
  const mean = measured.reduce((sum, r) => sum + r.peakBytes, 0) / measured.length;
  return {
    maxRank: max.rank,
    minRank: min.rank,
    maxBytes: max.peakBytes,
    minBytes: min.peakBytes,
    meanBytes: mean,
    spreadBytes: max.peakBytes - min.peakBytes,
    maxOverMean: mean > 0 ? max.peakBytes / mean : 1,
  };
}

function mergeLines(outcomes: readonly RankOutcome[]): MergedLine[] {
  const merged = new Map<string, { loc: SourceLocation; code: string; ranks: RankLineFigures[] }>();
  for (const outcome of outcomes) {
    const report = outcome.report;
    if (!report) continue;
    const steps = Math.max(report.steps.length, 1);
    const live = new Map((report.peak?.byLine ?? []).map((g) => [key(g), g.bytes]));
    const seen = new Set<string>();
    const add = (loc: SourceLocation, code: string, allocated: number, net: number): void => {
      const k = key(loc);
      seen.add(k);
      const entry = merged.get(k) ?? { loc: { file: loc.file, line: loc.line }, code, ranks: [] };
      entry.ranks.push({
        rank: outcome.rank,
        allocatedPerStep: Math.round(allocated / steps),
        netPerStep: Math.round(net / steps),
        liveAtPeak: live.get(k) ?? 0,
      });
      merged.set(k, entry);
    };
    for (const line of report.lines) {
      if (line.self.allocated === 0 && (live.get(key(line)) ?? 0) === 0) continue;
      add(line, line.code, line.self.allocated, line.self.net);
    }
    for (const group of report.peak?.byLine ?? []) {
      if (!seen.has(key(group)) && group.bytes > 0) add(group, '', 0, 0);
    }
  }
  const worst = (r: RankLineFigures): number => Math.max(r.liveAtPeak, r.allocatedPerStep);
  const lines = [...merged.values()].map((e) => ({
    ...e.loc,
    code: e.code,
    ranks: [...e.ranks].sort((a, b) => b.liveAtPeak - a.liveAtPeak || b.allocatedPerStep - a.allocatedPerStep || a.rank - b.rank),
  }));
  return lines.sort((a, b) => worst(b.ranks[0]) - worst(a.ranks[0]) || a.file.localeCompare(b.file) || a.line - b.line);
}

/** What a module holds in a rank between and during steps, besides what is live at the peak. */
const heldBy = (m: RankModuleFigures): number => m.params + m.grads + m.optimizer + m.saved;
const moduleWeight = (m: RankModuleFigures): number => Math.max(m.liveAtPeak, heldBy(m));

function mergeModules(outcomes: readonly RankOutcome[]): MergedModule[] {
  const merged = new Map<string, { root: string; path: string; type: string; ranks: RankModuleFigures[] }>();
  for (const outcome of outcomes) {
    for (const m of outcome.report?.modules ?? []) {
      const k = `${m.root}\0${m.path}`;
      const entry = merged.get(k) ?? { root: m.root, path: m.path, type: m.type, ranks: [] };
      entry.ranks.push({ rank: outcome.rank, ...moduleFigures(m) });
      merged.set(k, entry);
    }
  }
  const modules = [...merged.values()].map((e) => ({
    ...e,
    ranks: [...e.ranks].sort((a, b) => b.liveAtPeak - a.liveAtPeak || heldBy(b) - heldBy(a) || a.rank - b.rank),
  }));
  // Worst rank's weight first; ties keep the tree's order (a root before its submodules, paths in order).
  return modules.sort((a, b) => moduleWeight(b.ranks[0]) - moduleWeight(a.ranks[0]) || a.root.localeCompare(b.root) || a.path.localeCompare(b.path));
}

function mergeLeaks(outcomes: readonly RankOutcome[]): MergedLeak[] {
  const merged = new Map<string, { loc: SourceLocation; code: string; ranks: MergedLeak['ranks'][number][]; rebuild: boolean[] }>();
  for (const outcome of outcomes) {
    const buckets = new Set(outcome.ddp.map((d) => d.bucketBytes).filter((b): b is number => typeof b === 'number' && b > 0));
    for (const leak of outcome.report?.leaks ?? []) {
      const entry = merged.get(key(leak)) ?? { loc: { file: leak.file, line: leak.line }, code: leak.code, ranks: [], rebuild: [] };
      entry.ranks.push({ rank: outcome.rank, bytesPerStep: leak.bytesPerStep, bytesByStep: leak.bytesByStep, heldBy: leak.heldBy });
      // DDP rebuilds its buckets at the start of the second forward: one step allocates exactly the bucket
      // bytes, held by nothing the user names, and later steps add nothing.
      const grown = leak.bytesByStep.filter((b) => b > 0);
      entry.rebuild.push(leak.reason === 'storage' && leak.heldBy === null && grown.length === 1 && buckets.has(grown[0]));
      merged.set(key(leak), entry);
    }
  }
  return [...merged.values()].map((e) => ({
    ...e.loc,
    code: e.code,
    ranks: e.ranks.sort((a, b) => b.bytesPerStep - a.bytesPerStep || a.rank - b.rank),
    ddpBucketRebuild: e.rebuild.every(Boolean),
  }));
}

function firstFailed(ranks: readonly RankOutcome[]): number | null {
  const failed = ranks.filter((r) => r.status === 'failed');
  if (failed.length === 0) return null;
  return failed.reduce((a, b) => ((b.lastWriteEpochMs ?? Infinity) < (a.lastWriteEpochMs ?? Infinity) ? b : a)).rank;
}

export function mergeDistributed(outcome: DistributedOutcome): DistributedReport {
  const ranks = outcome.ranks.map(summarize);
  const ddp = outcome.ranks.flatMap((r) => r.ddp.map((d) => ({ ...d, rank: r.rank })));
  const fsdp = outcome.ranks.flatMap((r) => (r.fsdp ?? []).map((u) => ({ ...u, rank: r.rank })));
  const collectives = collectiveSites(outcome.ranks);
  const notes: string[] = [...collectiveErrors(outcome.ranks)];
  if (outcome.launcher === 'direct') {
    notes.push(
      `ranks started by memhint (env:// variables per rank), not torchrun${outcome.torchVersion ? ` (torch ${outcome.torchVersion})` : ''}`,
    );
  }
  if (ddp.length > 0) {
    notes.push(
      'DDP gradient buckets (sizes under DDP below) are allocated at the DDP(...) line; DDP rebuilds them once at the ' +
        'start of its second iteration, and from then on the live buckets are charged to the forward line that ran the ' +
        'rebuild (`ddp(inputs)`). With --warmup 1 the rebuild falls in the first profiled step and is shown as a one-time leak.',
    );
  }
  if (fsdp.length > 0) {
    notes.push(
      'FSDP: between steps a rank holds its shard of every unit’s parameters (and gradients and optimizer state of that ' +
        'shard); while a unit runs forward or backward its parameters are all-gathered to full size (the unit’s "gathered" ' +
        'bytes, allocated and freed through torch, so measured on the lines that run the unit), and gradients are ' +
        'reduce-scattered back to the shard.',
    );
  }
  if (collectives.length > 0) {
    notes.push(
      'FSDP collectives: each all-gather’s gathered parameters and each reduce-scatter’s unsharded gradient are ' +
        'allocated through torch and counted on the line listed with the collective (forward: the line that ran the ' +
        'unit; backward: the backward call). With gloo on the CPU, each reduce-scatter also makes a copy of its input ' +
        'through torch (measured: one more buffer of the listed size per call, on the backward line, freed when the ' +
        'collective’s work is released); what NCCL allocates inside a collective is its own (see the note below).',
    );
  }
  if (fsdp.some((u) => u.api === 'fully_shard')) {
    notes.push(
      'fully_shard (FSDP2) keeps parameters, gradients and optimizer state as DTensors; each is counted by the local ' +
        'shard it holds (its inner tensor), not by its global (unsharded) size.',
    );
  }
  notes.push(
    'Not measured: the communication backend’s own buffers (gloo/NCCL, allocated outside torch’s allocator), and memory of other processes on the same device.',
  );
  return {
    version: DISTRIBUTED_REPORT_VERSION,
    kind: 'distributed',
    launcher: outcome.launcher,
    worldSize: outcome.worldSize,
    torchVersion: outcome.torchVersion,
    ranks,
    firstFailedRank: firstFailed(outcome.ranks),
    imbalance: imbalanceOf(ranks),
    lines: mergeLines(outcome.ranks),
    modules: mergeModules(outcome.ranks),
    leaks: mergeLeaks(outcome.ranks),
    ddp,
    fsdp,
    collectives,
    notes,
    reports: outcome.ranks.map((r) => r.report),
  };
}

const STATUS_TEXT: Record<RankStatus, string> = {
  ok: 'ok',
  failed: 'FAILED',
  stopped: 'stopped (another rank failed)',
  timeout: 'TIMEOUT (hung or too slow; killed)',
  cancelled: 'cancelled',
  crash: 'CRASHED (no report)',
  protocol: 'PROTOCOL ERROR',
};

const where = (l: SourceLocation | null): string => (l ? ` at ${l.file}:${l.line}` : '');

export function formatDistributed(report: DistributedReport, readSource: (file: string) => string | null = readFile, maxLines = 15): string {
  const sources = new Map<string, string[]>();
  const codeOf = (line: MergedLine): string => {
    if (line.code) return line.code.trim();
    if (!sources.has(line.file)) sources.set(line.file, readSource(line.file)?.split(/\r?\n/) ?? []);
    return (sources.get(line.file)?.[line.line - 1] ?? '').trim();
  };
  const out: string[] = [];
  const target = report.reports.find((r) => r !== null)?.target;
  out.push(
    `memhint profile — ${report.worldSize} ranks (${report.launcher})${target ? ` — ${target.script}${target.function ? `::${target.function}` : ''}` : ''}`,
    '',
    'Ranks (step peak = highest live memory in a profiled step):',
  );
  for (const r of report.ranks) {
    const peaks = r.stepPeaks.length ? r.stepPeaks.map((b) => formatBytes(b)).join(' / ') : '—';
    let line = `  rank ${r.rank}: ${STATUS_TEXT[r.status]}${r.oom ? ' · OOM' : ''} · peak ${r.peakBytes === null ? '—' : formatBytes(r.peakBytes)} · steps ${peaks}`;
    if (r.error) line += `\n      ${r.error.kind.replace(/_/g, ' ')}: ${r.error.message}${where(r.error.location)}`;
    else if (r.status !== 'ok' && r.lastStep !== null) line += ` · last progress: step ${r.lastStep}`;
    out.push(line);
  }
  if (report.firstFailedRank !== null && report.ranks.filter((r) => r.status !== 'ok').length > 1) {
    out.push(`  rank ${report.firstFailedRank} failed first; the other ranks' failures most likely follow from it`);
  }
  const im = report.imbalance;
  if (im) {
    out.push(
      `Imbalance: max ${formatBytes(im.maxBytes)} (rank ${im.maxRank}) − min ${formatBytes(im.minBytes)} (rank ${im.minRank}) = ${formatBytes(im.spreadBytes)}; max/mean ${im.maxOverMean.toFixed(3)}`,
    );
  }
  if (report.lines.length) {
    out.push('', 'Lines (per step; worst rank first; live@peak = bytes from this line live at that rank’s step peak):');
    for (const line of report.lines.slice(0, maxLines)) {
      out.push(`  ${shortFile(line.file)}:${line.line}  ${codeOf(line)}`);
      out.push(
        `      ${line.ranks.map((r) => `rank ${r.rank}: live@peak ${formatBytes(r.liveAtPeak)}, alloc ${formatBytes(r.allocatedPerStep)}, net ${formatBytes(r.netPerStep, { signed: true })}`).join(' | ')}`,
      );
    }
    if (report.lines.length > maxLines) out.push(`  … ${report.lines.length - maxLines} more line(s) (--format json has all)`);
  }
  if (report.modules?.length) {
    out.push('', 'Modules (per step, each including its submodules; worst rank first; live@peak = bytes allocated inside it live at that rank’s step peak):');
    for (const m of report.modules.slice(0, maxLines)) {
      out.push(`  ${m.path ? `${m.root}.${m.path}` : m.root} (${m.type})`);
      out.push(
        `      ${m.ranks
          .map(
            (r) =>
              `rank ${r.rank}: live@peak ${formatBytes(r.liveAtPeak)}, params ${formatBytes(r.params)}, grads ${formatBytes(r.grads)}, ` +
              `optimizer ${formatBytes(r.optimizer)}, saved ${formatBytes(r.saved)}, fwd ${formatBytes(r.forwardAlloc)}, bwd ${formatBytes(r.backwardAlloc)}`,
          )
          .join(' | ')}`,
      );
    }
    if (report.modules.length > maxLines) out.push(`  … ${report.modules.length - maxLines} more module(s) (--format json has all)`);
  }
  if (report.leaks.length) {
    out.push('', 'Leaks (memory from step k still alive after step k+1), by rank:');
    for (const leak of report.leaks) {
      const ranks = leak.ranks.map((r) => `rank ${r.rank} ${formatBytes(r.bytesPerStep)}/step${r.heldBy ? ` held by ${r.heldBy}` : ''}`).join(', ');
      out.push(`  ${shortFile(leak.file)}:${leak.line}  ${leak.code.trim()}\n      ${ranks}${leak.ddpBucketRebuild ? ' — DDP bucket rebuild (one time), not a leak' : ''}`);
    }
  }
  if (report.ddp.length) {
    out.push('', 'DDP:');
    for (const d of report.ddp) {
      out.push(
        d.error
          ? `  rank ${d.rank}: DDP${where(d.location)}: not described (${d.error})`
          : `  rank ${d.rank}: DDP${where(d.location)}: ${d.parameters} trainable parameters, gradient buckets ${formatBytes(d.bucketBytes ?? 0)} (cap ${formatBytes(d.bucketCapBytes ?? 0)} each)${d.gradientAsBucketView ? ', gradients are views into the buckets' : ', gradients copied out of the buckets (gradient_as_bucket_view=False)'}`,
      );
    }
  }
  if (report.fsdp?.length) out.push('', 'FSDP:', ...formatFsdp(report.fsdp));
  if (report.collectives?.length) {
    out.push('', 'FSDP collectives (buffer per call; calls per profiled step, and in the whole run with warmup):', ...formatCollectives(report.collectives, shortFile));
  }
  out.push('', 'Notes:', ...report.notes.map((n) => `  - ${n}`), '');
  return out.join('\n');
}

/** Per rank and wrapping line: units, full vs this rank's shard bytes, the largest unit gathered. */
export function formatFsdp(units: readonly (FsdpUnitInfo & { readonly rank: number })[]): string[] {
  const groups = new Map<string, (FsdpUnitInfo & { readonly rank: number })[]>();
  for (const u of units) {
    const key = `${u.rank}\0${u.api}\0${u.location ? `${u.location.file}:${u.location.line}` : ''}`;
    groups.set(key, [...(groups.get(key) ?? []), u]);
  }
  const out: string[] = [];
  for (const group of groups.values()) {
    const first = group[0];
    const failed = group.find((u) => u.error);
    if (failed) {
      out.push(`  rank ${first.rank}: ${first.api}${where(first.location)}: not described (${failed.error})`);
      continue;
    }
    const sum = (f: (u: FsdpUnitInfo) => number | undefined): number => group.reduce((s, u) => s + (f(u) ?? 0), 0);
    const largest = Math.max(...group.map((u) => u.gatheredBytes ?? u.fullBytes ?? 0));
    const strategy = first.strategy ? ` ${first.strategy}` : '';
    out.push(
      `  rank ${first.rank}: ${first.api}${strategy}${where(first.location)}: ${group.length} unit(s), parameters ${formatBytes(sum((u) => u.fullBytes))} ` +
        `full, ${formatBytes(sum((u) => u.shardBytes))} this rank’s shard; largest unit gathered ${formatBytes(largest)}`,
    );
  }
  return out;
}

function readFile(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf-8');
  } catch {
    return null;
  }
}

export function shortFile(file: string): string {
  const cwd = process.cwd();
  return file.startsWith(`${cwd}/`) ? file.slice(cwd.length + 1) : file;
}
