// Text rendering of a report: the user's source with per-line memory columns (like a line profiler),
// followed by the step summary, live memory at the peak, leaks, OOM, budget and notes.
import * as fs from 'node:fs';
import { MEMORY_KINDS, type LineStats, type LiveSnapshot, type ModuleStats, type ProfileReport } from './report';
import { formatBytes, perStep as divide, profiledSteps } from './units';

const GAP = 3; // inactive lines shown around active ones before collapsing

interface Column {
  readonly title: string;
  readonly value: (line: LineStats, steps: number) => string;
}

const perStep = (bytes: number, steps: number): string => (bytes === 0 ? '' : formatBytes(divide(bytes, steps)));

const COLUMNS: readonly Column[] = [
  { title: 'calls', value: (l, s) => (l.calls ? String(divide(l.calls, s)) : '') },
  { title: 'alloc', value: (l, s) => perStep(l.self.allocated, s) },
  { title: 'net', value: (l, s) => perStep(l.self.net, s) },
  { title: 'peak', value: (l) => (l.self.peak ? formatBytes(l.self.peak) : '') },
  { title: 'incl.alloc', value: (l, s) => perStep(l.inclusive.allocated, s) },
  { title: 'saved', value: (l, s) => perStep(l.savedForBackward, s) },
  { title: 'made.saved', value: (l, s) => perStep(l.savedMadeHere, s) },
  { title: 'backward', value: (l, s) => perStep(l.backward.allocated, s) },
];

export function formatReport(report: ProfileReport, readSource: (file: string) => string | null = readFile): string {
  const out: string[] = [];
  const steps = profiledSteps(report);
  const env = report.environment;
  out.push(
    `memhint profile — ${report.target.script}${targetSuffix(report)}`,
    `torch ${env.torchVersion} · backend ${env.backend} · ${env.device} · ${report.steps.length} step(s) after ${report.target.warmup} warmup` +
      (report.partial ? ' · PARTIAL' : ''),
    'Columns are per step (totals / steps); peak = highest rise of live memory within one execution of the line.',
    '',
  );
  const byFile = new Map<string, LineStats[]>();
  for (const line of report.lines) {
    const list = byFile.get(line.file) ?? [];
    list.push(line);
    byFile.set(line.file, list);
  }
  const livePerLine = new Map<string, number>();
  for (const group of report.peak?.byLine ?? []) livePerLine.set(`${group.file}:${group.line}`, group.bytes);

  for (const [file, lines] of byFile) {
    const source = readSource(file);
    const text = source === null ? [] : source.split(/\r?\n/);
    const stats = new Map(lines.map((l) => [l.line, l]));
    const liveHere = (report.peak?.byLine ?? []).filter((g) => g.file === file && g.bytes > 0).map((g) => g.line);
    const active = [...lines.filter(isActive).map((l) => l.line), ...liveHere];
    if (active.length === 0) continue;
    const header = ['line', ...COLUMNS.map((c) => c.title), 'live@peak', ' source'];
    const rows: string[][] = [];
    let previous = 0;
    const wanted = new Set<number>();
    for (const n of active) for (let k = n - GAP; k <= n + GAP; k++) if (k >= 1 && (text.length === 0 || k <= text.length)) wanted.add(k);
    for (const n of [...wanted].sort((a, b) => a - b)) {
      if (previous && n > previous + 1) rows.push(['…']);
      previous = n;
      const stat = stats.get(n);
      const live = livePerLine.get(`${file}:${n}`);
      const code = text[n - 1] ?? stat?.code ?? '';
      rows.push([
        String(n),
        ...COLUMNS.map((c) => (stat && isActive(stat) ? c.value(stat, steps) : '')),
        live ? formatBytes(live) : '',
        ` ${code}`,
      ]);
    }
    out.push(`── ${file}`, ...table(header, rows), '');
  }

  out.push('Steps:');
  for (const step of report.steps) {
    out.push(
      `  step ${step.index}: ${(step.endMs - step.startMs).toFixed(0)} ms, peak ${formatBytes(step.peakLive)}, ` +
        `allocated ${formatBytes(step.allocated)}, live ${formatBytes(step.liveAtStart)} → ${formatBytes(step.liveAtEnd)}`,
    );
  }
  if (report.peak) out.push('', ...formatSnapshot('Live at peak', report.peak));
  if (report.modules && report.modules.length > 0) out.push('', ...formatModules(report.modules));
  if (report.leaks.length > 0) {
    out.push('', 'Leaks (memory from step k still alive after step k+1):');
    for (const leak of report.leaks) {
      // Lead with what a leak holds: a kept `loss` is 4 bytes of storage but a whole autograd graph.
      const what =
        leak.reason === 'autograd_graph'
          ? `keeps the autograd graph alive (+${leak.graphNodesPerStep} nodes per step)`
          : leak.graphNodesPerStep > 0
            ? `keeps ${leak.graphNodesPerStep} autograd nodes alive per step (their tensors: ${formatBytes(leak.bytesPerStep)} per step)`
            : `${formatBytes(leak.bytesPerStep)} per step`;
      out.push(`  ${leak.file}:${leak.line}  ${what}${leak.heldBy ? `, held by ${leak.heldBy}` : ''}   ${leak.code}`);
    }
  }
  if (report.oom) {
    const oom = report.oom;
    out.push('', `OUT OF MEMORY: ${oom.message}`);
    if (oom.location) out.push(`  at ${oom.location.file}:${oom.location.line}   ${oom.code}`);
    if (oom.requestedBytes !== null) out.push(`  requested ${formatBytes(oom.requestedBytes)}`);
    out.push(...formatSnapshot('  Live when it failed', oom.liveAtOom).map((l) => `  ${l}`));
    out.push('  Advice:', ...oom.advice.map((a) => `   - ${a}`));
  }
  if (report.budget) {
    const b = report.budget;
    out.push('');
    if (b.firstExceeded) {
      out.push(
        `Budget ${formatBytes(b.budgetBytes)} EXCEEDED first at ${b.firstExceeded.file}:${b.firstExceeded.line} ` +
          `(live ${formatBytes(b.firstExceeded.liveBytes)})   ${b.firstExceeded.code}`,
      );
    } else out.push(`Budget ${formatBytes(b.budgetBytes)}: never exceeded.`);
  }
  if (report.cuda) {
    const c = report.cuda;
    out.push(
      '',
      `CUDA allocator: allocated ${formatBytes(c.allocatedBytes)}, reserved ${formatBytes(c.reservedBytes)}, ` +
        `max allocated ${formatBytes(c.maxAllocatedBytes)}, fragmentation ${formatBytes(c.fragmentationBytes)}`,
    );
    if (c.snapshotPath) out.push(`  snapshot for https://pytorch.org/memory_viz: ${c.snapshotPath}`);
  }
  if (report.notes.length > 0) out.push('', 'Notes:', ...report.notes.map((n) => `  - ${n}`));
  return `${out.join('\n')}\n`;
}

function targetSuffix(report: ProfileReport): string {
  if (report.target.function) return `::${report.target.function}`;
  if (report.target.loopLine && report.target.loopFile) {
    return ` — loop at ${report.target.loopFile}:${report.target.loopLine} (each iteration of the loop is a step)`;
  }
  if (report.target.loopLine) return `:${report.target.loopLine} (each iteration of the loop is a step)`;
  return '';
}

function isActive(line: LineStats): boolean {
  return (
    line.self.allocated > 0 ||
    line.self.freed > 0 ||
    line.savedForBackward > 0 ||
    line.savedMadeHere > 0 ||
    line.backward.allocated > 0 ||
    (line.calls > 0 && line.inclusive.allocated > 0)
  );
}

const MODULE_ROWS = 30;
const MODULE_SHARE = 0.05; // modules below this share of their model's largest figure are left out

/** The module tree (figures include submodules), largest modules only, indented by depth. */
export function formatModules(modules: readonly ModuleStats[]): string[] {
  const weight = (m: ModuleStats): number =>
    Math.max(m.params + m.grads + m.optimizer, m.forward_alloc, m.saved, m.backward_alloc, m.live_at_peak);
  const rootWeight = new Map<string, number>();
  for (const m of modules) rootWeight.set(m.root, Math.max(rootWeight.get(m.root) ?? 0, weight(m)));
  const shown = modules.filter((m) => weight(m) > 0 && weight(m) >= MODULE_SHARE * (rootWeight.get(m.root) ?? 0));
  const header = ['module', 'calls', 'params', 'grads', 'optim', 'fwd.alloc', 'saved', 'bwd.alloc', 'live@peak'];
  const size = (n: number): string => (n ? formatBytes(n) : '');
  const rows = shown.slice(0, MODULE_ROWS).map((m) => {
    const depth = m.path === '' ? 0 : m.path.split('.').length;
    const name = m.path === '' ? `${m.root}` : `${m.path.split('.').pop()} (${m.type})`;
    return [
      `${'  '.repeat(depth)}${name}`,
      m.calls > 1 ? `x${m.calls}` : m.calls ? '1' : '',
      size(m.params), size(m.grads), size(m.optimizer), size(m.forward_alloc), size(m.saved), size(m.backward_alloc), size(m.live_at_peak),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const render = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[0]) : c.padStart(widths[i]))).join('  ').trimEnd();
  const lines = ['Modules (per step, each including its submodules; largest only):', render(header), ...rows.map(render)];
  if (shown.length > MODULE_ROWS) lines.push(`  … ${shown.length - MODULE_ROWS} more in the JSON report`);
  return lines;
}

function formatSnapshot(title: string, snap: LiveSnapshot): string[] {
  const where = snap.location ? ` at ${snap.location.file}:${snap.location.line}` : '';
  const kinds = MEMORY_KINDS.filter((k) => snap.byKind[k] > 0)
    .map((k) => `${k} ${formatBytes(snap.byKind[k])}`)
    .join(', ');
  const lines = [`${title}: ${formatBytes(snap.bytes)} (${snap.phase}${where})`, `  by kind: ${kinds || 'nothing'}`];
  for (const group of snap.byLine.slice(0, 8)) {
    lines.push(`  ${formatBytes(group.bytes).padStart(10)}  ${group.file}:${group.line}`);
  }
  return lines;
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (i < header.length - 1 ? (r[i] ?? '').length : 0))));
  const render = (cells: string[]): string =>
    cells.length === 1
      ? cells[0]
      : cells.map((c, i) => (i === cells.length - 1 ? c : c.padStart(widths[i]))).join('  ').trimEnd();
  return [render(header), ...rows.map(render)];
}

function readFile(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf-8');
  } catch {
    return null;
  }
}
