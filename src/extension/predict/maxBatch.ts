// "Largest batch that fits" in the predict what-ifs: the same doubling-then-bisection as
// `memhint predict --max-batch` (src/predict/run.ts maxBatch), driven through the editor's runner, with
// the report of the largest fitting value kept for hints and the summary. Pure; no `vscode` here.
import { formatBytes } from '../format';
import type { BatchPoint, MaxBatchResult, PredictOptions, PredictOutcome, Predictor } from '../../predict/run';
import type { PredictedReport } from '../../predict/schema';

/** Where the search starts: the value the user last predicted with, else the setup's default, else 1. */
export function searchStart(remembered: number | null, defaultText: string | null): number {
  if (remembered !== null && Number.isInteger(remembered) && remembered > 0) return remembered;
  const n = defaultText === null ? NaN : Number(defaultText.trim());
  return Number.isInteger(n) && n > 0 ? n : 1;
}

/** A predictor that keeps each value's report, so the search's answer need not be predicted again. */
export function recordingPredictor(predict: Predictor, arg: string): { readonly predictor: Predictor; reportFor(value: number | null): PredictedReport | null } {
  const reports = new Map<number, PredictedReport>();
  return {
    predictor: async (options: PredictOptions): Promise<PredictOutcome> => {
      const outcome = await predict(options);
      const value = options.setupArgs[arg];
      if (outcome.failure === null && typeof value === 'number') reports.set(value, outcome.report);
      return outcome;
    },
    reportFor: (value) => (value === null ? null : reports.get(value) ?? null),
  };
}

/** The smallest value tried that does not fit (the other side of the answer), or null. */
function firstFailing(result: MaxBatchResult): BatchPoint | null {
  return result.curve.find((p) => !p.fits && (result.best === null || p.value > result.best)) ?? null;
}

/** The outcome in one line for the notification: the answer, its peak, and the next value's verdict. */
export function maxBatchSentence(result: MaxBatchResult, deviceLabel: string): string {
  const over = firstFailing(result);
  const overText = over === null ? '' : over.maxReservedBytes !== null ? `; ${result.arg}=${over.value} needs ${formatBytes(over.maxReservedBytes)}` : `; ${result.arg}=${over.value} failed (${over.error ?? 'no report'})`;
  if (result.best === null) return `no ${result.arg} tried fits ${deviceLabel} (smallest tried: ${result.curve[0]?.value ?? '?'})${overText}`;
  const best = result.curve.find((p) => p.value === result.best);
  const peak = best?.maxReservedBytes != null ? ` (max reserved ${formatBytes(best.maxReservedBytes)})` : '';
  return `largest ${result.arg} that fits ${deviceLabel}: ${result.best}${peak}${overText}`;
}

/** The curve for the log: one line per predicted value. */
export function maxBatchCurve(result: MaxBatchResult): string[] {
  return result.curve.map((p) => `  ${result.arg}=${p.value}: ${p.maxReservedBytes !== null ? `max reserved ${formatBytes(p.maxReservedBytes)}` : `error: ${p.error ?? ''}`}${p.fits ? '' : ' (does not fit)'}`);
}
