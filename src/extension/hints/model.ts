// Per-line memory hints built from a profile report: the compact end-of-line text, the size class that
// picks its colour, and the hover's full figures. Pure data in, data out; no `vscode` here.
import { MEMORY_KINDS, type BytesByKind, type Leak, type LineStats, type LiveByLine, type MemoryCounters, type ModuleStats, type ProfileReport } from '../../profiler/report';
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

/**
 * What a hint's colour measures. `peak`: the highest rise of live memory while the line runs (forward or
 * its backward) or what it leaks per step; `liveAtPeak`: what the line's allocations hold at the step's
 * peak. Never the cumulative net, which grows with the number of calls and says little about pressure.
 */
export type HintColorBy = 'peak' | 'liveAtPeak';

export interface LineHint {
  /** 0-based editor line. */
  readonly line: number;
  /** The line's trimmed source when it was profiled: hints survive edits only while it is unchanged. */
  readonly code: string;
  readonly text: string;
  readonly size: HintSize;
  /** Largest per-step figure of the line, bytes: lines below the hide threshold get no hint. */
  readonly magnitude: number;
  /** The figure the colour (size class) is based on, bytes (see HintColorBy). */
  readonly colorBytes: number;
  /** Times the line runs per step (rounded): the text says `x4` when above 1. */
  readonly callsPerStep: number;
  readonly stats: LineStats;
  /** Profiled steps the totals are divided by. */
  readonly steps: number;
  readonly leak: Leak | null;
  readonly liveAtPeak: LiveByLine | null;
  /** From a `memhint predict` report (meta tensors, allocator model), not measured. */
  readonly predicted: boolean;
  /** An earlier run's figures, shown after a later run failed (the controller sets it). */
  readonly stale: boolean;
}

/** A report `memhint predict` made (meta tensors, allocator model), not a measurement. */
export function isPredicted(report: ProfileReport): boolean {
  return (report as { readonly mode?: unknown }).mode === 'predicted';
}

/** Hints for the lines of one file. `filePaths`: the names the file may have in the report (as opened, real path). */
export function hintsForFile(report: ProfileReport, filePaths: readonly string[], thresholds: HintThresholds = defaultThresholds, colorBy: HintColorBy = 'peak'): LineHint[] {
  const inFile = (file: string): boolean => filePaths.some((p) => samePath(p, file));
  const steps = profiledSteps(report);
  const leaks = new Map<number, Leak>();
  for (const leak of report.leaks) if (inFile(leak.file)) leaks.set(leak.line, leak);
  const live = new Map<number, LiveByLine>();
  for (const entry of report.peak?.byLine ?? []) if (inFile(entry.file)) live.set(entry.line, entry);

  const hints: LineHint[] = [];
  // Predicted figures say so on every hint: they must never be read as measured.
  const predicted = isPredicted(report);
  const prefix = predicted ? 'predicted ' : '';
  for (const stats of report.lines) {
    if (!inFile(stats.file)) continue;
    const leak = leaks.get(stats.line) ?? null;
    const magnitude = lineMagnitude(stats, steps, leak);
    if (magnitude < thresholds.hide || magnitude === 0) continue;
    const liveAtPeak = live.get(stats.line) ?? null;
    const colorBytes = colorBy === 'liveAtPeak' ? (liveAtPeak?.bytes ?? 0) : Math.max(stats.inclusive.peak, stats.backward.peak, leak?.bytesPerStep ?? 0);
    hints.push({
      line: stats.line - 1,
      code: stats.code.trim(),
      text: prefix + hintText(stats, steps, leak),
      size: sizeClass(colorBytes, thresholds),
      magnitude,
      colorBytes,
      callsPerStep: Math.round(stats.calls / steps),
      stats,
      steps,
      leak,
      liveAtPeak,
      predicted,
      stale: false,
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

/**
 * The compact end-of-line text, e.g. `+1.2 GiB, peak 3.4 GiB` (per step; inclusive of callees). A line
 * that runs several times per step starts with `x4` and its peak is per call (`peak 24 MiB/call`): the
 * per-step net of four calls is four times what one call adds, which the peak of one call is not.
 */
export function hintText(stats: LineStats, steps: number, leak: Leak | null): string {
  const net = divide(stats.inclusive.net, steps);
  const peak = stats.inclusive.peak;
  const calls = Math.round(stats.calls / steps);
  const parts: string[] = [];
  if (net !== 0) parts.push(formatBytes(net, { signed: true }));
  if (peak > 0 && (peak !== net || calls > 1)) parts.push(`peak ${formatBytes(peak)}${calls > 1 ? '/call' : ''}`);
  const backward = divide(stats.backward.allocated, steps);
  if (backward > 0) parts.push(`backward ${formatBytes(backward)}`);
  if (leak !== null && leak.bytesPerStep > 0) parts.push(`leaks ${formatBytes(leak.bytesPerStep)}/step`);
  else if (leak !== null && leak.graphNodesPerStep > 0) parts.push(`keeps ${leak.graphNodesPerStep} graph nodes/step`);
  if (parts.length === 0 && stats.savedForBackward > 0) parts.push(`saves ${formatBytes(divide(stats.savedForBackward, steps))}`);
  return `${calls > 1 ? `x${calls} ` : ''}${parts.join(', ')}`;
}

/** At most `max` characters, an ellipsis saying that more is in the hover (only it when `max` is 1); 0: no limit. */
export function clip(text: string, max: number): string {
  if (max <= 0 || text.length <= max) return text;
  if (max === 1) return '…';
  return `${text.slice(0, max - 1).trimEnd()}…`;
}

export type HintMode = 'all' | 'currentLine' | 'aboveThreshold';

/** Which hints show: every one, the cursor's lines only, or those coloured medium or large. */
export function visibleHints<T extends Pick<LineHint, 'line' | 'size'>>(hints: readonly T[], mode: HintMode, cursorLines: ReadonlySet<number>): T[] {
  if (mode === 'currentLine') return hints.filter((h) => cursorLines.has(h.line));
  if (mode === 'aboveThreshold') return hints.filter((h) => h.size !== 'small');
  return [...hints];
}

/**
 * Left margin, in characters, that starts the hint at `column` (1-based, as the editor counts) after a
 * line `lineLength` characters long; at least `min` so it never touches the code. 0: no alignment.
 */
export function alignMargin(lineLength: number, column: number, min = 2): number {
  if (column <= 0) return min;
  return Math.max(min, column - 1 - lineLength);
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
  const how = isPredicted(report) ? '**predicted** for CUDA on meta tensors, not measured' : `**measured** on the ${report.environment.backend} backend`;
  out.push(`**memhint** · line ${stats.line}${stats.function ? ` in \`${stats.function}\`` : ''} · ${per} · ${how}`);
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
  for (const root of modelsRunBy(stats, report)) out.push('', moduleTable(root, report));
  return out.join('\n');
}

/**
 * The root models a line runs, for the hover's module breakdown: library models (a Hugging Face
 * transformer) put all their memory on `out = model(x)`. The report does not record call sites, so the
 * line is recognised by its figures: of the lines outside a `forward` method and not calling backward()
 * or .step(), the one with the least per-step allocation (callees included) that still covers the root's
 * forward allocations. Callers further up (the step's call site) allocate more and are not chosen.
 */
export function modelsRunBy(stats: LineStats, report: ProfileReport): string[] {
  const modules = report.modules ?? [];
  if (modules.length === 0 || !candidateLine(stats)) return [];
  const steps = profiledSteps(report);
  const roots = modules.filter((m) => m.path === '' && m.forward_alloc > 0);
  const out: string[] = [];
  for (const root of roots) {
    const covers = (l: LineStats): boolean => candidateLine(l) && divide(l.inclusive.allocated, steps) >= root.forward_alloc;
    if (!covers(stats)) continue;
    const least = Math.min(...report.lines.filter(covers).map((l) => l.inclusive.allocated));
    if (stats.inclusive.allocated === least) out.push(root.root);
  }
  return out;
}

function candidateLine(l: LineStats): boolean {
  return l.calls > 0 && !/(^|\.)forward$/.test(l.function ?? '') && !/\bbackward\s*\(|\.step\s*\(/.test(l.code);
}

/** The module tree of a root model, largest live-at-peak first, as a Markdown table (at most `max` rows). */
export function moduleTable(root: string, report: ProfileReport, max = 10): string {
  const b = (n: number): string => formatBytes(n);
  const rows = (report.modules ?? []).filter((m) => m.root === root);
  const top = rows.find((m) => m.path === '');
  const rest = rows.filter((m) => m.path !== '' && m.path.split('.').length <= 2).sort((a, c) => c.live_at_peak - a.live_at_peak);
  const shown: ModuleStats[] = [...(top ? [top] : []), ...rest].slice(0, max);
  // Module figures are per step already (the harness divides by the profiled steps).
  const out = [`**Modules of \`${root}\`** (per step; top ${shown.length} of ${rows.length} by live at peak, the summary has the tree):`, '', '| module | forward | saved | backward | params | grads | optimizer | live at peak |', '|---|---:|---:|---:|---:|---:|---:|---:|'];
  for (const m of shown) {
    const name = m.path === '' ? `${m.type} (whole model)` : `\`${m.path}\` ${m.type}`;
    out.push(`| ${name} | ${b(m.forward_alloc)} | ${b(m.saved)} | ${b(m.backward_alloc)} | ${b(m.params)} | ${b(m.grads)} | ${b(m.optimizer)} | ${b(m.live_at_peak)} |`);
  }
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
