// Two findings sections of the summary that point at lines: graphs built with no backward() to use them
// (report.noBackwardGraphs) and kernels with internal workspaces the accounting cannot see
// (report.kernelWorkspaces). Pure; no `vscode` here.
import type { ProfileReport } from '../../profiler/report';
import { perStep, profiledSteps } from '../../profiler/units';
import type { KernelRow, KernelsView, NoGradRow } from './messages';
import { displayPath } from './paths';

/** Largest kept bytes first (the harness's order), so the statement worth a no_grad() leads. */
export function noGradRows(report: ProfileReport, roots: readonly string[]): NoGradRow[] {
  return (report.noBackwardGraphs ?? []).map((g) => ({
    file: g.file,
    displayFile: displayPath(g.file, roots),
    line: g.line,
    code: g.code.trim(),
    nodesPerStep: g.nodesPerStep,
    bytesKeptPerStep: g.bytesKeptPerStep,
    steps: g.steps,
  }));
}

/** The lines with their tracked figure beside them: the one the workspaces are missing from. */
export function kernelsView(report: ProfileReport, roots: readonly string[]): KernelsView | null {
  const entries = report.kernelWorkspaces ?? [];
  if (entries.length === 0) return null;
  const steps = profiledSteps(report);
  const stats = new Map(report.lines.map((l) => [`${l.file}\n${l.line}`, l]));
  const lines: KernelRow[] = entries.map((k) => {
    const l = stats.get(`${k.file}\n${k.line}`);
    return {
      file: k.file,
      displayFile: displayPath(k.file, roots),
      line: k.line,
      code: k.code.trim(),
      ops: [...k.ops],
      callsPerStep: Math.round((k.calls / steps) * 100) / 100,
      trackedPerStep: l === undefined ? null : perStep(l.inclusive.allocated, steps),
      cudaMaxRise: l?.cuda?.maxAllocatedRise ?? null,
    };
  });
  return { backend: report.environment.backend, lines };
}
