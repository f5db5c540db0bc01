// Runs predictions (the harness with --predict) and the what-ifs built on them: --amp / --checkpoint against
// the baseline, advice variants ranked by their predicted effect, and the --max-batch bisection.
import { runProfile, type ProfileFailure, type RunnerHooks } from '../profiler/launcher';
import { isPredictedReport, type ModuleStats, type PredictedReport } from './schema';

export interface PredictOptions {
  readonly script: string;
  readonly function: string;
  readonly setup: string;
  readonly setupArgs: Readonly<Record<string, unknown>>;
  readonly python: string;
  readonly deviceMemoryBytes: number | null;
  readonly amp: 'bf16' | 'fp16' | null;
  readonly checkpoint: string | null;
  readonly maxSplitSizeBytes: number | null;
  /** The target GPU's MAJOR.MINOR (cuBLAS workspace size); the harness assumes 8.0 when absent. */
  readonly computeCapability?: string | null;
  readonly warmup: number;
  readonly steps: number;
  readonly timeoutMs: number;
  readonly cwd?: string;
  /** Predict one rank of a job of this many ranks on torch's fake process group (python/memhint_harness/predict/ranks.py). */
  readonly worldSize?: number | null;
  /** Which rank of `worldSize` (0 when absent). */
  readonly rank?: number | null;
}

export type PredictOutcome =
  | { readonly report: PredictedReport; readonly failure: null }
  | { readonly report: PredictedReport | null; readonly failure: ProfileFailure };

/** One prediction in a child Python. */
export type Predictor = (options: PredictOptions) => Promise<PredictOutcome>;

export function predictArgs(options: PredictOptions): string[] {
  const args = ['--predict'];
  if (options.deviceMemoryBytes !== null) args.push('--device-memory', String(Math.floor(options.deviceMemoryBytes)));
  if (options.amp) args.push('--amp', options.amp);
  if (options.checkpoint) args.push('--checkpoint', options.checkpoint);
  if (options.maxSplitSizeBytes !== null) args.push('--max-split-size', String(Math.floor(options.maxSplitSizeBytes)));
  if (options.computeCapability) args.push('--compute-capability', options.computeCapability);
  if (options.worldSize !== undefined && options.worldSize !== null) args.push('--world-size', String(options.worldSize));
  if (options.rank !== undefined && options.rank !== null) args.push('--rank', String(options.rank));
  return args;
}

export function childPredictor(hooks: RunnerHooks = {}): Predictor {
  return async (options) => {
    const outcome = await runProfile(
      {
        script: options.script,
        function: options.function,
        setup: options.setup,
        setupArgs: options.setupArgs,
        warmup: options.warmup,
        steps: options.steps,
        maxSeconds: null,
        backend: 'cpu', // unused with --predict; the harness predicts a CUDA device
        python: options.python,
        budgetBytes: null,
        memoryLimitBytes: null,
        timeoutMs: options.timeoutMs,
        scriptArgs: [],
        cwd: options.cwd,
        extraArgs: predictArgs(options),
      },
      // No process sampler: nothing of a prediction runs on a device.
      { ...hooks, onSpawn: hooks.onSpawn ?? (() => undefined) },
    );
    const report = outcome.report !== null && isPredictedReport(outcome.report) ? outcome.report : null;
    if (outcome.failure) return { report, failure: outcome.failure };
    if (report === null) {
      const failure: ProfileFailure = {
        kind: 'protocol',
        message: 'the harness sent a report without the prediction (is python/memhint_harness out of date?)',
        traceback: null,
        location: null,
        exitCode: null,
        signal: null,
        stderrTail: '',
      };
      return { report: null, failure };
    }
    return { report, failure: null };
  };
}

/** The figure compared with the device's memory: what the caching allocator would hold at most. */
export function peakReserved(report: PredictedReport): number {
  return report.prediction.allocator.maxReservedBytes;
}

export interface Variant {
  readonly label: string;
  readonly advice: string;
  readonly options: PredictOptions;
}

export interface VariantResult {
  readonly label: string;
  readonly advice: string;
  readonly maxReservedBytes: number | null;
  readonly maxAllocatedBytes: number | null;
  /** Baseline max reserved minus the variant's (positive: saves memory). */
  readonly savingBytes: number | null;
  readonly error: string | null;
}

export async function compareVariants(
  predictor: Predictor,
  baseline: PredictedReport,
  variants: readonly Variant[],
): Promise<VariantResult[]> {
  const results: VariantResult[] = [];
  for (const variant of variants) {
    const outcome = await predictor(variant.options);
    if (outcome.failure || !outcome.report) {
      results.push({ label: variant.label, advice: variant.advice, maxReservedBytes: null, maxAllocatedBytes: null, savingBytes: null, error: outcome.failure?.message ?? 'no report' });
      continue;
    }
    const reserved = peakReserved(outcome.report);
    results.push({
      label: variant.label,
      advice: variant.advice,
      maxReservedBytes: reserved,
      maxAllocatedBytes: outcome.report.prediction.allocator.maxAllocatedBytes,
      savingBytes: peakReserved(baseline) - reserved,
      error: null,
    });
  }
  // Ranked by measured (predicted) effect, largest saving first; failed variants last.
  return results.sort((a, b) => (b.savingBytes ?? -Infinity) - (a.savingBytes ?? -Infinity));
}

/** The module class that repeats most among modules with children (transformer blocks): the usual unit of
 *  activation checkpointing. Null when nothing repeats. */
export function repeatedBlockType(modules: readonly ModuleStats[]): string | null {
  const children = new Set<string>();
  for (const m of modules) {
    const parent = m.path.includes('.') ? m.path.slice(0, m.path.lastIndexOf('.')) : m.path === '' ? null : '';
    if (parent !== null) children.add(parent);
  }
  const counts = new Map<string, number>();
  for (const m of modules) {
    if (m.path === '' || !children.has(m.path) || m.type === 'ModuleList' || m.type === 'Sequential' || m.type === 'ModuleDict') continue;
    counts.set(m.type, (counts.get(m.type) ?? 0) + 1);
  }
  let best: string | null = null;
  let bestCount = 1;
  for (const [type, count] of counts) {
    if (count > bestCount) {
      best = type;
      bestCount = count;
    }
  }
  return best;
}

/** The variants worth predicting for advice, given what the baseline shows. */
export function adviceVariants(base: PredictOptions, baseline: PredictedReport, batchArg: string | null): Variant[] {
  const variants: Variant[] = [];
  const batch = batchArg !== null ? base.setupArgs[batchArg] : undefined;
  if (batchArg !== null && typeof batch === 'number' && Number.isInteger(batch) && batch > 1) {
    const half = Math.max(1, Math.floor(batch / 2));
    variants.push({
      label: `${batchArg}=${half}`,
      advice: `halve the batch (--setup-arg ${batchArg}=${half}); use gradient accumulation to keep the effective batch`,
      options: { ...base, setupArgs: { ...base.setupArgs, [batchArg]: half } },
    });
  }
  if (base.amp === null) {
    variants.push({
      label: '--amp bf16',
      advice: 'train under torch.autocast("cuda", dtype=torch.bfloat16) (activations and matmul inputs in 16 bits)',
      options: { ...base, amp: 'bf16' },
    });
  }
  const block = base.checkpoint === null ? repeatedBlockType(baseline.modules) : null;
  if (block !== null) {
    variants.push({
      label: `--checkpoint ${block}`,
      advice: `activation checkpointing of each ${block} (torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)): recomputes its forward in backward`,
      options: { ...base, checkpoint: block },
    });
  }
  return variants;
}

/** Savings read from the baseline's peak snapshot rather than re-predicted (exact for the peak's content). */
export function snapshotAdvice(report: PredictedReport): string[] {
  const advice: string[] = [];
  const peak = report.peak;
  if (!peak) return advice;
  if (peak.byKind.gradient > 0 && peak.phase === 'forward') {
    advice.push(
      `gradients (${peak.byKind.gradient} bytes) are still live at the forward peak: optimizer.zero_grad(set_to_none=True) ` +
        'before the forward (or at the end of the step) frees them there',
    );
  }
  if (peak.byKind.optimizer_state > 0) {
    advice.push(
      `optimizer state holds ${peak.byKind.optimizer_state} bytes at the peak: SGD without momentum holds none, ` +
        'Adafactor or 8-bit Adam (bitsandbytes) a fraction',
    );
  }
  return advice;
}

export interface BatchPoint {
  readonly value: number;
  readonly maxReservedBytes: number | null;
  readonly maxAllocatedBytes: number | null;
  readonly fits: boolean;
  readonly error: string | null;
}

export interface MaxBatchResult {
  readonly arg: string;
  /** Largest value whose prediction fits; null when even the smallest tried does not. */
  readonly best: number | null;
  /** Every predicted point, sorted by value: the curve of peak vs batch. */
  readonly curve: readonly BatchPoint[];
}

/** Doubles the setup argument from `start` until the prediction no longer fits, then bisects. A failing
 *  prediction (e.g. a shape error at that size) counts as not fitting. At most `maxRuns` predictions. */
export async function maxBatch(
  predictor: Predictor,
  base: PredictOptions,
  arg: string,
  start: number,
  capacity: number,
  maxRuns = 20,
): Promise<MaxBatchResult> {
  const curve = new Map<number, BatchPoint>();
  const probe = async (value: number): Promise<boolean> => {
    const cached = curve.get(value);
    if (cached) return cached.fits;
    const outcome = await predictor({ ...base, setupArgs: { ...base.setupArgs, [arg]: value } });
    const report = outcome.report;
    if (outcome.failure || !report) {
      curve.set(value, { value, maxReservedBytes: null, maxAllocatedBytes: null, fits: false, error: outcome.failure?.message ?? 'no report' });
      return false;
    }
    const reserved = peakReserved(report);
    const point = { value, maxReservedBytes: reserved, maxAllocatedBytes: report.prediction.allocator.maxAllocatedBytes, fits: reserved <= capacity, error: null };
    curve.set(value, point);
    return point.fits;
  };
  let runs = 0;
  let low = 0; // largest known fitting value (0: none)
  let high = 0; // smallest known failing value (0: none)
  let value = Math.max(1, Math.floor(start));
  while (runs < maxRuns) {
    runs++;
    if (await probe(value)) {
      low = value;
      if (high === 0) {
        value *= 2;
        continue;
      }
    } else {
      high = value;
      if (low === 0 && value > 1) {
        value = Math.max(1, Math.floor(value / 2));
        continue;
      }
    }
    if (high === 0 || high - low <= 1) break;
    value = Math.floor((low + high) / 2);
  }
  return { arg, best: low > 0 ? low : null, curve: [...curve.values()].sort((a, b) => a.value - b.value) };
}
