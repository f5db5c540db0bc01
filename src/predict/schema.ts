// What `memhint predict` adds to the profile report (python/memhint_harness/predict/run.py builds it).
// A predicted report is a ProfileReport (same per-line counters, peak snapshot, steps) with
// `mode: "predicted"`, environment.device "cuda (predicted)", plus the allocator model and a per-module
// breakdown. Sizes in bytes.
import type { CollectiveCall, FsdpUnitInfo } from '../profiler/distributed';
import { isProfileReport, type ModuleStats, type ProfileReport, type SourceLocation } from '../profiler/report';

export type { ModuleStats };

/** CUDA caching-allocator model fed with the step's allocation sequence (allocator.py). */
export interface AllocatorPrediction {
  /** memory_allocated() at the end of the run: block sizes after rounding. */
  readonly allocatedBytes: number;
  readonly reservedBytes: number;
  /** max_memory_allocated() / max_memory_reserved() over the whole run (setup, warmup and steps). */
  readonly maxAllocatedBytes: number;
  readonly maxReservedBytes: number;
  readonly requestedBytes: number;
  readonly segments: number;
  readonly allocRetries: number;
  readonly ooms: number;
  readonly model: string;
  readonly maxSplitSize: number | null;
}

export interface FirstExceeded extends SourceLocation {
  readonly code: string;
  readonly reservedBytes: number;
  readonly allocatedBytes: number;
  readonly step: number | null;
  readonly phase: 'forward' | 'backward' | 'other';
}

/** One DistributedDataParallel built in the predicted rank, as its reducer built it. */
export interface DdpPrediction {
  readonly location: SourceLocation | null;
  readonly parameters?: number;
  /** Bytes of all gradient buckets together (every trainable parameter's gradient). */
  readonly bucketBytes?: number;
  readonly bucketCapBytes?: number;
  readonly gradientAsBucketView?: boolean;
  readonly findUnusedParameters?: boolean;
  /** Each bucket's bytes when DDP was built, and after its rebuild (second iteration; null before it). */
  readonly bucketSizes?: readonly number[];
  readonly rebuiltBucketSizes?: readonly number[] | null;
  readonly error?: string;
}

/** `--world-size N` (harness): the rank predicted and its job, on torch's fake process group. */
export interface WorldPrediction {
  readonly worldSize: number;
  readonly rank: number;
  readonly backend: 'fake';
  readonly ddp: readonly DdpPrediction[];
  /** Each FSDP unit of the rank, as `profile --nproc-per-node` describes it (absent before FSDP was predicted). */
  readonly fsdp?: readonly FsdpUnitInfo[];
  /** Every all-gather and reduce-scatter of the run (warmup included), in order, as `profile --nproc-per-node`
   *  records them (collectives.py) over the fake process group (absent before they were predicted). */
  readonly collectives?: readonly CollectiveCall[];
  /** Backends the user's init_process_group asked for (the fake group stood in for them). */
  readonly userInitBackends: readonly string[];
}

/** One world size of `--world-sizes` (CLI): the predicted rank's figures in a job of that size. */
/** One predicted rank of a world size. */
export interface RankFigures {
  readonly rank: number;
  readonly maxAllocatedBytes: number | null;
  readonly maxReservedBytes: number | null;
  readonly rawPeakBytes: number | null;
  readonly fits: boolean | null;
  readonly error: string | null;
}

/** A world size: the figures are those of its worst predicted rank (`rank`), `ranksPredicted` has each. */
export interface WorldSizePrediction {
  readonly worldSize: number;
  readonly rank: number;
  readonly maxAllocatedBytes: number | null;
  readonly maxReservedBytes: number | null;
  readonly rawPeakBytes: number | null;
  readonly fits: boolean | null;
  /** Gradient bucket bytes of every DDP in the rank, in the order built (rebuilt sizes where DDP rebuilt). */
  readonly gradientBuckets: readonly number[];
  /** FSDP: the rank's parameter shards over all units, and the largest unit's gathered buffer (what FSDP
   *  all-gathers at once for one unit); absent without FSDP. */
  readonly fsdpShardBytes?: number;
  readonly fsdpLargestGatheredBytes?: number;
  readonly error: string | null;
  /** Rank 0 and the last rank (absent in reports written before other ranks were predicted). */
  readonly ranksPredicted?: readonly RankFigures[];
}

/** `--world-sizes` (CLI): per world size, and the smallest that fits --device-memory. */
export interface RanksPrediction {
  readonly worldSizes: readonly WorldSizePrediction[];
  /** Smallest world size listed whose rank fits --device-memory; null when none does or none was given. */
  readonly smallestFitting: number | null;
  /** The world size whose per-line report this is. */
  readonly reportWorldSize: number;
}

export interface PredictionInfo {
  readonly allocator: AllocatorPrediction;
  /** Highest live tensor bytes in a predicted step, before allocator rounding (= profile's peakLive). */
  readonly rawPeakBytes: number;
  readonly deviceMemoryBytes: number | null;
  /** Whether max reserved stays within deviceMemoryBytes; null when no device memory was given. */
  readonly fits: boolean | null;
  /** First allocation that took the predicted reserved memory above deviceMemoryBytes. */
  readonly firstExceeded: FirstExceeded | null;
  /** The target's compute capability the prediction assumed (MAJOR.MINOR). */
  readonly computeCapability?: string;
  /** cuBLAS workspaces included in the allocator figures (one per thread that ran a matmul). */
  readonly cublasWorkspaceBytes?: number;
  readonly amp: 'bf16' | 'fp16' | null;
  readonly checkpoint: string | null;
  readonly setupArgs: Readonly<Record<string, unknown>>;
  /** Wall time of the prediction inside the harness (import of torch excluded). */
  readonly seconds: number;
  readonly world?: WorldPrediction;
  readonly ranks?: RanksPrediction;
}

export interface PredictedReport extends ProfileReport {
  readonly mode: 'predicted';
  readonly prediction: PredictionInfo;
  readonly modules: readonly ModuleStats[];
}

export function isPredictedReport(value: unknown): value is PredictedReport {
  if (!isProfileReport(value)) return false;
  const v = value as unknown as Record<string, unknown>;
  const prediction = v.prediction as Record<string, unknown> | undefined;
  return (
    v.mode === 'predicted' &&
    typeof prediction === 'object' &&
    prediction !== null &&
    typeof prediction.allocator === 'object' &&
    typeof prediction.rawPeakBytes === 'number' &&
    Array.isArray(v.modules)
  );
}
