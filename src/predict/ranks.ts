// `memhint predict --world-sizes 1,2,8,64`: one prediction per world size (rank 0 of a job of that size on
// torch's fake process group, python/memhint_harness/predict/ranks.py), the per-rank figures side by side,
// and the smallest world size whose rank fits --device-memory.
import type { ProfileFailure } from '../profiler/launcher';
import type { PredictOptions, PredictOutcome, Predictor } from './run';
import type { PredictedReport, RanksPrediction, WorldSizePrediction } from './schema';

/** "1,2,8,64" → [1, 2, 8, 64] (sorted, unique); null when it is not a list of positive integers. */
export function parseWorldSizes(text: string): number[] | null {
  const parts = text.split(',').map((part) => part.trim());
  if (parts.length === 0 || parts.some((part) => !/^[1-9][0-9]*$/.test(part))) return null;
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

/** Gradient bucket sizes of every DDP of the rank: the rebuilt buckets where DDP rebuilt them (what lives
 *  from the second iteration on), else the buckets it was built with. */
export function gradientBuckets(report: PredictedReport): number[] {
  const sizes: number[] = [];
  for (const ddp of report.prediction.world?.ddp ?? []) {
    sizes.push(...(ddp.rebuiltBucketSizes ?? ddp.bucketSizes ?? (ddp.bucketBytes !== undefined ? [ddp.bucketBytes] : [])));
  }
  return sizes;
}

function entry(worldSize: number, outcome: PredictOutcome): WorldSizePrediction {
  const report = outcome.failure === null ? outcome.report : null;
  return {
    worldSize,
    rank: report?.prediction.world?.rank ?? 0,
    maxAllocatedBytes: report?.prediction.allocator.maxAllocatedBytes ?? null,
    maxReservedBytes: report?.prediction.allocator.maxReservedBytes ?? null,
    rawPeakBytes: report?.prediction.rawPeakBytes ?? null,
    fits: report?.prediction.fits ?? null,
    gradientBuckets: report ? gradientBuckets(report) : [],
    error: outcome.failure?.message ?? null,
  };
}

export type WorldSizesOutcome =
  | { readonly report: PredictedReport; readonly failure: null }
  | { readonly report: null; readonly failure: ProfileFailure };

/**
 * Predicts each world size in turn. The report returned is that of the smallest world size that fits (the
 * job the user would run), else of the largest that was predicted, with `prediction.ranks` added; a failure
 * only when no world size could be predicted (the first one's failure, which names the cause).
 */
export async function predictWorldSizes(
  predictor: Predictor,
  options: PredictOptions,
  worldSizes: readonly number[],
): Promise<WorldSizesOutcome> {
  const entries: WorldSizePrediction[] = [];
  const reports = new Map<number, PredictedReport>();
  let firstFailure: ProfileFailure | null = null;
  for (const worldSize of worldSizes) {
    const outcome = await predictor({ ...options, worldSize });
    entries.push(entry(worldSize, outcome));
    if (outcome.failure === null) reports.set(worldSize, outcome.report);
    else firstFailure ??= outcome.failure;
    // What this torch cannot predict (FSDP on meta) fails the same way at every world size.
    if (outcome.failure?.kind === 'unsupported_torch') return { report: null, failure: outcome.failure };
  }
  const smallestFitting = entries.find((e) => e.fits === true)?.worldSize ?? null;
  const predicted = entries.filter((e) => e.error === null).map((e) => e.worldSize);
  const shown = smallestFitting ?? predicted[predicted.length - 1];
  const report = shown === undefined ? undefined : reports.get(shown);
  if (report === undefined) {
    return { report: null, failure: firstFailure ?? noPrediction() };
  }
  const ranks: RanksPrediction = { worldSizes: entries, smallestFitting, reportWorldSize: shown };
  return { report: { ...report, prediction: { ...report.prediction, ranks } }, failure: null };
}

function noPrediction(): ProfileFailure {
  return { kind: 'protocol', message: 'no world size was predicted', traceback: null, location: null, exitCode: null, signal: null, stderrTail: '' };
}
