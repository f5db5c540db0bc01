// Per-line memory hints built from a profile report: the compact end-of-line text, the size class that
// picks its colour, and the hover's full figures. Pure data in, data out; no `vscode` here.
import { MEMORY_KINDS, type BytesByKind, type Leak, type LineStats, type LiveByLine, type MemoryCounters, type ProfileReport } from '../../profiler/report';
import { perStep as divide, profiledSteps } from '../../profiler/units';
import { formatBytes } from '../format';
import { samePath } from '../paths';

export type HintSize = 'small' | 'medium' | 'large';

export interface HintThresholds {
  /** Lines whose largest per-step figure is below this get no hint. */
  readonly hide: number;
  readonly medium: number;
  readonly large: number;
}

export const defaultThresholds: HintThresholds = { hide: 1024, medium: 16 * 1024 ** 2, large: 256 * 1024 ** 2 };

export interface LineHint {
  /** 0-based editor line. */
  readonly line: number;
  /** The line's trimmed source when it was profiled: hints survive edits only while it is unchanged. */
  readonly code: string;
  readonly text: string;
  readonly size: HintSize;
  /** Largest per-step figure of the line, bytes: what the size class is based on. */
  readonly magnitude: number;
  readonly stats: LineStats;
  /** Profiled steps the totals are divided by. */
  readonly steps: number;
  readonly leak: Leak | null;
  readonly liveAtPeak: LiveByLine | null;
}

/** Hints for the lines of one file. `filePaths`: the names the file may have in the report (as opened, real path). */
export function hintsForFile(report: ProfileReport, filePaths: readonly string[], thresholds: HintThresholds = defaultThresholds): LineHint[] {
  const inFile = (file: string): boolean => filePaths.some((p) => samePath(p, file));
  const steps = profiledSteps(report);
  const leaks = new Map<number, Leak>();
  for (const leak of report.leaks) if (inFile(leak.file)) leaks.set(leak.line, leak);
  const live = new Map<number, LiveByLine>();
  for (const entry of report.peak?.byLine ?? []) if (inFile(entry.file)) live.set(entry.line, entry);

  const hints: LineHint[] = [];
  for (const stats of report.lines) {
    if (!inFile(stats.file)) continue;
    const leak = leaks.get(stats.line) ?? null;
    const magnitude = lineMagnitude(stats, steps, leak);
    if (magnitude < thresholds.hide || magnitude === 0) continue;
    hints.push({
      line: stats.line - 1,
      code: stats.code.trim(),
      text: hintText(stats, steps, leak),
      size: sizeClass(magnitude, thresholds),
      magnitude,
      stats,
      steps,
      leak,
      liveAtPeak: live.get(stats.line) ?? null,
    });
  }
  return hints.sort((a, b) => a.line - b.line);
}

function lineMagnitude(stats: LineStats, steps: number, leak: Leak | null): number {
  return Math.max(
    Math.abs(stats.inclusive.net) / steps,
    stats.inclusive.peak,
    stats.backward.peak,
    stats.backward.allocated / steps,
    stats.savedForBackward / steps,
    leak?.bytesPerStep ?? 0,
  );
}

export function sizeClass(bytes: number, thresholds: HintThresholds): HintSize {
  if (bytes >= thresholds.large) return 'large';
  if (bytes >= thresholds.medium) return 'medium';
  return 'small';
}

/** The compact end-of-line text, e.g. `+1.2 GiB, peak 3.4 GiB` (per step; inclusive of callees). */
export function hintText(stats: LineStats, steps: number, leak: Leak | null): string {
  const net = divide(stats.inclusive.net, steps);
  const peak = stats.inclusive.peak;
  const parts: string[] = [];
  if (net !== 0) parts.push(formatBytes(net, { signed: true }));
  if (peak > 0 && peak !== net) parts.push(`peak ${formatBytes(peak)}`);
  const backward = divide(stats.backward.allocated, steps);
  if (backward > 0) parts.push(`backward ${formatBytes(backward)}`);
  if (leak !== null && leak.bytesPerStep > 0) parts.push(`leaks ${formatBytes(leak.bytesPerStep)}/step`);
  else if (leak !== null && leak.graphNodesPerStep > 0) parts.push(`keeps ${leak.graphNodesPerStep} graph nodes/step`);
  if (parts.length === 0 && stats.savedForBackward > 0) parts.push(`saves ${formatBytes(divide(stats.savedForBackward, steps))}`);
  return parts.join(', ');
}

/** Non-zero kinds, largest first: `activation 1.2 MiB, parameter 40 KiB`. */
export function kindBreakdown(byKind: BytesByKind): string {
  return MEMORY_KINDS.filter((k) => byKind[k] > 0)
    .sort((a, b) => byKind[b] - byKind[a])
    .map((k) => `${k.replace('_', ' ')} ${formatBytes(byKind[k])}`)
    .join(', ');
}

function perStep(counters: MemoryCounters, steps: number): MemoryCounters {
  return {
    allocated: divide(counters.allocated, steps),
    freed: divide(counters.freed, steps),
    net: divide(counters.net, steps),
    peak: counters.peak,
    allocations: divide(counters.allocations, steps),
  };
}

/** The hover: every figure memhint has for the line, as Markdown. */
export function hoverMarkdown(hint: LineHint, report: ProfileReport): string {
  const { stats, steps } = hint;
  const self = perStep(stats.self, steps);
  const inclusive = perStep(stats.inclusive, steps);
  const backward = perStep(stats.backward, steps);
  const b = (n: number, signed = false): string => formatBytes(n, { signed });
  const per = steps === 1 ? 'one step' : `per step, mean of ${steps} steps`;
  const out: string[] = [];
  out.push(`**memhint** · line ${stats.line}${stats.function ? ` in \`${stats.function}\`` : ''} · ${per} · ${report.environment.backend} backend`);
  out.push('');
  out.push('| | this line | with callees | in backward |');
  out.push('|---|---:|---:|---:|');
  out.push(`| allocated | ${b(self.allocated)} | ${b(inclusive.allocated)} | ${b(backward.allocated)} |`);
  out.push(`| freed | ${b(self.freed)} | ${b(inclusive.freed)} | ${b(backward.freed)} |`);
  out.push(`| net | ${b(self.net, true)} | ${b(inclusive.net, true)} | ${b(backward.net, true)} |`);
  out.push(`| peak | ${b(self.peak)} | ${b(inclusive.peak)} | ${b(backward.peak)} |`);
  out.push(`| allocations | ${self.allocations} | ${inclusive.allocations} | ${backward.allocations} |`);
  out.push('');
  const facts: string[] = [];
  if (stats.calls > 0) facts.push(`Runs ${trimNumber(stats.calls / steps)}× per step.`);
  else facts.push('Allocated from another thread or frame (the line itself did not run during the steps).');
  if (stats.savedForBackward > 0) facts.push(`Saved activations for backward: ${b(divide(stats.savedForBackward, steps))} per step.`);
  if (hint.liveAtPeak !== null) {
    const breakdown = kindBreakdown(hint.liveAtPeak.byKind);
    facts.push(`Live at the step's peak: ${b(hint.liveAtPeak.bytes)}${breakdown ? ` (${breakdown})` : ''}.`);
  }
  if (hint.leak !== null) {
    const why = hint.leak.reason === 'autograd_graph' ? 'keeps an autograd graph alive' : 'storage outlives the next step';
    const nodes = hint.leak.graphNodesPerStep > 0 ? `, ${hint.leak.graphNodesPerStep} graph nodes per step` : '';
    const held = hint.leak.heldBy ? `; held by ${hint.leak.heldBy}` : '';
    facts.push(`**Leak**: ${b(hint.leak.bytesPerStep)} per step (${why}${nodes}${held}).`);
  }
  if (stats.cuda) {
    facts.push(
      `CUDA allocator: allocated ${b(divide(stats.cuda.allocatedDelta, steps), true)}, reserved ${b(divide(stats.cuda.reservedDelta, steps), true)} per step; max allocated rise ${b(stats.cuda.maxAllocatedRise)}.`,
    );
  }
  out.push(facts.join('  \n'));
  return out.join('\n');
}

function trimNumber(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2).replace(/\.?0+$/, '');
}

/** The status bar's figure: the highest live memory of any profiled step. */
export function stepPeak(report: ProfileReport): number | null {
  if (report.peak !== null) return report.peak.bytes;
  if (report.steps.length === 0) return null;
  return Math.max(...report.steps.map((s) => s.peakLive));
}
