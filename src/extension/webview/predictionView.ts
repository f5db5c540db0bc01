// What a predicted report (`memhint predict`, mode "predicted") adds to the summary. Pure; no `vscode` here.
import type { PredictionInfo } from '../../predict/schema';
import type { ProfileReport } from '../../profiler/report';
import type { PredictionView } from './messages';
import { displayWhere } from './paths';

/** The prediction's assumptions in a few words (`AMP bf16, batch=64`); '' when it ran as written. */
export function whatIfText(p: PredictionInfo): string {
  return [p.amp ? `AMP ${p.amp}` : '', p.checkpoint ? `checkpoint ${p.checkpoint}` : '', ...Object.entries(p.setupArgs).map(([k, v]) => `${k}=${JSON.stringify(v)}`)].filter(Boolean).join(', ');
}

/** The prediction of a report in mode "predicted", or null for a measured one. */
export function predictionOf(report: ProfileReport): PredictionInfo | null {
  if ((report as { mode?: unknown }).mode !== 'predicted') return null;
  return (report as { prediction?: PredictionInfo }).prediction ?? null;
}

export function predictionView(report: ProfileReport, roots: readonly string[]): PredictionView | null {
  const p = predictionOf(report);
  if (p === null) return null;
  return {
    maxAllocated: p.allocator.maxAllocatedBytes,
    maxReserved: p.allocator.maxReservedBytes,
    rawPeak: p.rawPeakBytes,
    deviceMemory: p.deviceMemoryBytes,
    fits: p.fits,
    firstExceeded: displayWhere(p.firstExceeded, roots),
    whatIf: whatIfText(p),
    seconds: p.seconds,
  };
}
