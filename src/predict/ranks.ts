// `memhint predict --world-sizes 1,2,8,64`: per world size, rank 0 and the last rank of a job of that size
// on torch's fake process group (python/memhint_harness/predict/ranks.py), the worst of them side by side
// with the other world sizes, and the smallest world size whose worst rank fits --device-memory.
import type { ProfileFailure } from '../profiler/launcher';
import type { PredictOptions, PredictOutcome, Predictor } from './run';
import type { PredictedReport, RankFigures, RanksPrediction, WorldSizePrediction } from './schema';

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

/** FSDP figures of the rank: its parameter shards over all units, and the largest unit's gathered buffer. */
export function fsdpFigures(report: PredictedReport): Pick<WorldSizePrediction, 'fsdpShardBytes' | 'fsdpLargestGatheredBytes'> {
  const units = (report.prediction.world?.fsdp ?? []).filter((u) => !u.error);
  if (units.length === 0) return {};
  return {
    fsdpShardBytes: units.reduce((sum, u) => sum + (u.shardBytes ?? 0), 0),
    fsdpLargestGatheredBytes: Math.max(...units.map((u) => u.gatheredBytes ?? u.fullBytes ?? 0)),
  };
}

function figures(rank: number, outcome: PredictOutcome): RankFigures {
  const report = outcome.failure === null ? outcome.report : null;
  return {
    rank,
    maxAllocatedBytes: report?.prediction.allocator.maxAllocatedBytes ?? null,
    maxReservedBytes: report?.prediction.allocator.maxReservedBytes ?? null,
    rawPeakBytes: report?.prediction.rawPeakBytes ?? null,
    fits: report?.prediction.fits ?? null,
    error: outcome.failure?.message ?? null,
  };
}

/** The ranks predicted for a world size: rank 0, and the last rank, where a split that is not even puts its
 *  remainder or its padding (FSDP pads the last shard) in the usual conventions. Ranks in between get the
 *  share of one of the two in those conventions, so they are not predicted (one child process per rank). */
export function ranksToPredict(worldSize: number): number[] {
  return worldSize > 1 ? [0, worldSize - 1] : [0];
}

/** The rank that needs the most memory: highest max reserved, then max allocated, then raw peak; the lower
 *  rank on a tie (ranks that are alike are shown as rank 0). A rank that failed is worst of all: its error
 *  is what the world size reports. */
export function worstRank(ranks: readonly RankFigures[]): RankFigures {
  const score = (r: RankFigures): number[] =>
    r.error !== null ? [Infinity] : [r.maxReservedBytes ?? 0, r.maxAllocatedBytes ?? 0, r.rawPeakBytes ?? 0];
  return ranks.reduce((worst, r) => {
    const [a, b] = [score(r), score(worst)];
    const i = a.findIndex((x, k) => x !== b[k]);
    return i >= 0 && a[i] > (b[i] ?? 0) ? r : worst;
  });
}

function entry(worldSize: number, ranks: readonly RankFigures[], worstReport: PredictedReport | undefined): WorldSizePrediction {
  const worst = worstRank(ranks);
  return {
    worldSize,
    rank: worst.rank,
    maxAllocatedBytes: worst.maxAllocatedBytes,
    maxReservedBytes: worst.maxReservedBytes,
    rawPeakBytes: worst.rawPeakBytes,
    fits: worst.fits,
    gradientBuckets: worstReport ? gradientBuckets(worstReport) : [],
    ...(worstReport ? fsdpFigures(worstReport) : {}),
    error: worst.error,
    ranksPredicted: ranks,
  };
}

export type WorldSizesOutcome =
  | { readonly report: PredictedReport; readonly failure: null }
  | { readonly report: null; readonly failure: ProfileFailure };

/**
 * Predicts each world size in turn, rank 0 and the last rank (ranksToPredict). The report returned is that
 * of the worst rank of the smallest world size that fits (the job the user would run), else of the largest
 * that was predicted, with `prediction.ranks` added; a failure only when no world size could be predicted
 * (the first failure, which names the cause).
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
    const ranks: RankFigures[] = [];
    const byRank = new Map<number, PredictedReport>();
    for (const rank of ranksToPredict(worldSize)) {
      const outcome = await predictor({ ...options, worldSize, rank });
      ranks.push(figures(rank, outcome));
      if (outcome.failure === null) byRank.set(rank, outcome.report);
      else firstFailure ??= outcome.failure;
      // What this torch cannot predict (FSDP on meta) fails the same way at every world size and rank.
      if (outcome.failure?.kind === 'unsupported_torch') return { report: null, failure: outcome.failure };
    }
    const worst = byRank.get(worstRank(ranks).rank);
    entries.push(entry(worldSize, ranks, worst));
    if (worst !== undefined) reports.set(worldSize, worst);
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
