// Per-line rows of the summary: per-step figures (totals divided by the profiled steps), with the
// report's leaks and live-at-peak joined in. Pure; no `vscode` here.
import type { ProfileReport } from '../../profiler/report';
import { perStep, profiledSteps } from '../../profiler/units';
import type { LineRow } from './messages';
import { displayPath } from './paths';

export function lineKey(file: string, line: number): string {
  return `${file}\n${line}`;
}

export function lineRows(report: ProfileReport, roots: readonly string[]): LineRow[] {
  const steps = profiledSteps(report);
  const leakAt = new Map(report.leaks.map((l) => [lineKey(l.file, l.line), l]));
  const liveAt = new Map<string, number>();
  for (const l of report.peak?.byLine ?? []) liveAt.set(lineKey(l.file, l.line), (liveAt.get(lineKey(l.file, l.line)) ?? 0) + l.bytes);
  const per = (n: number): number => perStep(n, steps);
  return report.lines.map((l) => ({
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
    leakPerStep: leakAt.get(lineKey(l.file, l.line))?.bytesPerStep ?? 0,
    liveAtPeak: liveAt.get(lineKey(l.file, l.line)) ?? 0,
  }));
}
