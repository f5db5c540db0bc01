// What a partial run (stopped early: OOM, an exception after some steps, the script ended, a time limit)
// measured, in one sentence for the notification. Pure; no `vscode` here.
import type { ProfileReport } from '../../profiler/report';
import { formatBytes } from '../format';

/**
 * `measured 1 of 3 steps (peak 48 MiB); out of memory at train.py:41` — null when the run was complete.
 * A whole-script run has no step count to compare against.
 */
export function partialSummary(report: ProfileReport, display: (file: string) => string = (f) => f): string | null {
  if (!report.partial) return null;
  const requestedSteps = report.target.kind === 'script' ? null : report.target.steps;
  const measured = report.steps.length;
  const peak = report.peak?.bytes ?? (measured > 0 ? Math.max(...report.steps.map((s) => s.peakLive)) : null);
  const what =
    measured === 0
      ? 'no step completed: the figures cover the code that ran before it stopped'
      : `measured ${measured}${requestedSteps !== null ? ` of ${requestedSteps}` : ''} step${(requestedSteps ?? measured) === 1 ? '' : 's'}${peak !== null ? ` (peak ${formatBytes(peak)})` : ''}`;
  const why: string[] = [];
  if (report.oom) {
    const loc = report.oom.location;
    why.push(`out of memory${loc ? ` at ${display(loc.file)}:${loc.line}` : ''}${report.oom.step !== null ? ` in step ${report.oom.step + 1}` : ''}`);
  }
  const stop = report.notes.find((n) => /stopped|time limit|timed out|max[- ]seconds|internal error|ended after/i.test(n));
  if (stop !== undefined) why.push(stop.split('\n')[0].replace(/[.;:]\s*$/, ''));
  return `${what}${why.length > 0 ? `; ${why.join('; ')}` : ''}`;
}
