// `memhint predict SCRIPT.py::STEP --setup NAME [options]`: predicts the step's CUDA memory on meta tensors.
// Exit codes: 0 predicted (fits, or no --device-memory), 3 predicted and does not fit, 1 the prediction
// failed, 2 bad usage.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ProfileFailure } from '../profiler/launcher';
import { removeStaleOutput, writeFileAtomic } from './atomic-write';
import { scanArgs, UsageError } from './step-args';
import { formatPrediction, type PredictionView } from '../predict/format';
import { findGpu, gpuFamilies } from '../predict/gpus';
import { parseWorldSizes, predictWorldSizes } from '../predict/ranks';
import {
  adviceVariants,
  childPredictor,
  compareVariants,
  maxBatch,
  snapshotAdvice,
  type PredictOptions,
  type Predictor,
  type VariantResult,
} from '../predict/run';

export const PREDICT_USAGE = `usage: memhint predict SCRIPT.py::FUNCTION --setup NAME [options]

Predicts a training step's CUDA memory per line without a GPU: the step runs on meta tensors (torch >= 2.0),
your code's .cuda() / .to("cuda") / device="cuda" unchanged.

options:
  --setup NAME            function of SCRIPT.py returning FUNCTION's arguments (required)
  --setup-arg K=V         keyword argument for the setup function (repeatable; V is JSON, else a string)
  --device cuda           the device predicted (only cuda)
  --device-memory SIZE    e.g. 80GiB: say whether the step fits, where it first does not, and what would help
  --gpu NAME              the target GPU (H100, A100 80GB, RTX 4090, ...): its memory (unless --device-memory
                          is given) and compute capability, which sets the cuBLAS workspaces predicted
  --compute-capability X.Y  the target's compute capability without a name (default 8.0)
  --amp bf16|fp16         predict under torch.autocast("cuda", dtype) and report the saving
  --checkpoint PATTERN    checkpoint modules whose path or class matches (fnmatch, comma-separated)
  --max-batch ARG         largest value of setup argument ARG that fits --device-memory (bisection)
  --max-split-size SIZE   the allocator's max_split_size (PYTORCH_CUDA_ALLOC_CONF)
  --world-sizes N,N,..    predict rank 0 and the last rank of a torch.distributed job of each size (DDP,
                          FSDP) on torch's fake process group: the worst rank's peaks side by side and the
                          smallest size whose worst rank fits --device-memory
  --nproc-per-node N      one world size, as profile --nproc-per-node N runs it (= --world-sizes N)
  --warmup N              calls before the predicted one (default 1: optimizer state exists; 2 with
                          --world-sizes: DDP rebuilds its buckets in its second iteration)
  --steps N               predicted calls (default 1; meta tensors are deterministic)
  --python PATH           interpreter with torch >= 2.0 (default python3)
  --format text|json      (default text)
  --out FILE              write the report to FILE instead of stdout
  --timeout S             stop a prediction after S seconds (default 600)
`;

interface ParsedPredict {
  readonly options: PredictOptions;
  readonly maxBatchArg: string | null;
  readonly format: 'text' | 'json';
  readonly out: string | null;
  /** --world-sizes, sorted; null for the ordinary single-device prediction. */
  readonly worldSizes: readonly number[] | null;
}

const RULES = {
  valued: new Set([
    '--setup', '--setup-arg', '--device', '--device-memory', '--gpu', '--compute-capability', '--amp', '--checkpoint', '--max-batch', '--max-split-size',
    '--warmup', '--steps', '--python', '--format', '--out', '--timeout', '--world-sizes', '--nproc-per-node',
  ]),
  repeatable: new Set(['--setup-arg']),
};

/** --world-sizes N,N,.. or --nproc-per-node N (profile's flag: one world size); null when neither is given. */
export function parseWorldSizeFlags(sizes: string | null, nproc: string | null): number[] | null {
  if (sizes !== null && nproc !== null) throw new UsageError('give --world-sizes or --nproc-per-node, not both');
  if (nproc !== null) {
    if (!/^[1-9][0-9]*$/.test(nproc.trim())) throw new UsageError(`--nproc-per-node: "${nproc}" is not a positive integer`);
    return [Number(nproc.trim())];
  }
  if (sizes === null) return null;
  const parsed = parseWorldSizes(sizes);
  if (parsed === null) throw new UsageError(`--world-sizes: "${sizes}" is not a list of positive integers (e.g. 1,2,8,64)`);
  return parsed;
}

export function parseSetupArg(text: string): [string, unknown] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`--setup-arg "${text}" is not KEY=VALUE`);
  const key = text.slice(0, eq);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new UsageError(`--setup-arg: "${key}" is not a Python identifier`);
  const raw = text.slice(eq + 1);
  try {
    return [key, JSON.parse(raw) as unknown];
  } catch {
    return [key, raw];
  }
}

export function parsePredictArgs(args: readonly string[]): ParsedPredict {
  const scanned = scanArgs(args, RULES);
  const spec = scanned.stepTarget('missing target SCRIPT.py::FUNCTION');
  if (spec.function === null) throw new UsageError('predict needs a step function: SCRIPT.py::FUNCTION');
  const setup = scanned.string('--setup');
  if (!setup) throw new UsageError('predict needs --setup NAME (a function returning the step\'s arguments)');
  const setupArgs = Object.fromEntries(scanned.repeated('--setup-arg').map(parseSetupArg)) as Record<string, unknown>;
  const device = scanned.string('--device') ?? 'cuda';
  if (device !== 'cuda') throw new UsageError(`--device ${device}: only cuda can be predicted`);
  const amp = scanned.has('--amp') ? scanned.choice('--amp', ['bf16', 'fp16'], 'bf16') : null;
  const format = scanned.choice('--format', ['text', 'json'], 'text');
  const maxBatchArg = scanned.string('--max-batch');
  const gpuName = scanned.string('--gpu');
  const gpu = gpuName === null ? null : findGpu(gpuName);
  if (gpuName !== null && gpu === null) throw new UsageError(`--gpu ${gpuName}: not a GPU memhint knows (${gpuFamilies()})`);
  const capability = scanned.string('--compute-capability') ?? gpu?.computeCapability ?? null;
  if (capability !== null && !/^\d+\.\d+$/.test(capability)) throw new UsageError(`--compute-capability ${capability}: not MAJOR.MINOR (e.g. 9.0)`);
  const deviceMemoryBytes = scanned.size('--device-memory') ?? gpu?.bytes ?? null;
  if (maxBatchArg !== null) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(maxBatchArg)) throw new UsageError(`--max-batch: "${maxBatchArg}" is not an argument name`);
    if (deviceMemoryBytes === null) throw new UsageError('--max-batch needs --device-memory');
    const given = setupArgs[maxBatchArg];
    if (given !== undefined && !(typeof given === 'number' && Number.isInteger(given) && given > 0)) {
      throw new UsageError(`--max-batch ${maxBatchArg}: the given --setup-arg ${maxBatchArg} is not a positive integer`);
    }
  }
  const worldSizes = parseWorldSizeFlags(scanned.string('--world-sizes'), scanned.string('--nproc-per-node'));
  const timeoutS = scanned.seconds('--timeout') ?? 600;
  return {
    format,
    out: scanned.string('--out'),
    maxBatchArg,
    worldSizes,
    options: {
      script: spec.script,
      function: spec.function,
      setup,
      setupArgs,
      python: scanned.string('--python') ?? 'python3',
      deviceMemoryBytes,
      amp,
      checkpoint: scanned.string('--checkpoint'),
      maxSplitSizeBytes: scanned.size('--max-split-size'),
      computeCapability: capability,
      // DDP rebuilds its gradient buckets at the start of its second iteration: with --world-sizes the
      // predicted step is the third call, as profile --nproc-per-node's is.
      warmup: scanned.int('--warmup', worldSizes === null ? 1 : 2, 0),
      steps: scanned.int('--steps', 1, 1),
      timeoutMs: timeoutS * 1000,
    },
  };
}

/** Which setup argument is the batch size, for the "smaller batch" advice. */
function batchArgument(parsed: ParsedPredict): string | null {
  if (parsed.maxBatchArg !== null) return parsed.maxBatchArg;
  return ['batch', 'batch_size', 'bs'].find((name) => typeof parsed.options.setupArgs[name] === 'number') ?? null;
}

export async function runPredictCommand(args: string[], predictor: Predictor = childPredictor(stderrHooks())): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(PREDICT_USAGE);
    return 0;
  }
  let parsed: ParsedPredict;
  try {
    parsed = parsePredictArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`memhint predict: ${error.message}\n\n${PREDICT_USAGE}`);
    return 2;
  }
  // --out: the previous report goes when the run starts, the new one appears whole or not at all.
  if (parsed.out) {
    try {
      removeStaleOutput(parsed.out);
    } catch (error) {
      process.stderr.write(`memhint predict: ${error instanceof Error ? error.message : String(error)}\n`);
      return 2;
    }
  }
  const script = path.resolve(parsed.options.script);
  if (!fs.existsSync(script)) {
    process.stderr.write(`memhint predict: script not found: ${script}\n`);
    return 1;
  }
  const main =
    parsed.worldSizes === null
      ? await predictor({ ...parsed.options, script })
      : await predictWorldSizes(predictor, { ...parsed.options, script }, parsed.worldSizes);
  if (main.failure || !main.report) {
    if (main.failure) process.stderr.write(describePredictFailure(main.failure));
    return 1;
  }
  const report = main.report;
  // What-ifs, advice and --max-batch are predicted for the world size whose report is shown.
  const options = { ...parsed.options, script, worldSize: report.prediction.ranks?.reportWorldSize ?? null };
  let whatIf: VariantResult | null = null;
  if (options.amp !== null || options.checkpoint !== null) {
    const label = [options.amp ? `--amp ${options.amp}` : '', options.checkpoint ? `--checkpoint ${options.checkpoint}` : ''].filter(Boolean).join(' ');
    const baseline = await predictor({ ...options, amp: null, checkpoint: null });
    whatIf = baseline.report
      ? {
          label,
          advice: '',
          maxReservedBytes: baseline.report.prediction.allocator.maxReservedBytes,
          maxAllocatedBytes: baseline.report.prediction.allocator.maxAllocatedBytes,
          savingBytes: baseline.report.prediction.allocator.maxReservedBytes - report.prediction.allocator.maxReservedBytes,
          error: null,
        }
      : { label, advice: '', maxReservedBytes: null, maxAllocatedBytes: null, savingBytes: null, error: baseline.failure?.message ?? 'no report' };
  }
  const fits = report.prediction.fits;
  const advice = fits === false ? await compareVariants(predictor, report, adviceVariants(options, report, batchArgument(parsed))) : [];
  const fromSnapshot = fits === false ? snapshotAdvice(report) : [];
  let batch = null;
  if (parsed.maxBatchArg !== null && options.deviceMemoryBytes !== null) {
    const given = options.setupArgs[parsed.maxBatchArg];
    batch = await maxBatch(predictor, options, parsed.maxBatchArg, typeof given === 'number' ? given : 1, options.deviceMemoryBytes);
  }
  const view: PredictionView = { report, whatIf, advice, snapshotAdvice: fromSnapshot, maxBatch: batch };
  const rendered =
    parsed.format === 'json'
      ? `${JSON.stringify({ ...report, whatIf, advice, adviceFromPeak: fromSnapshot, maxBatch: batch }, null, 2)}\n`
      : formatPrediction(view);
  if (parsed.out) {
    try {
      writeFileAtomic(parsed.out, rendered);
    } catch (error) {
      process.stderr.write(`memhint predict: cannot write ${parsed.out}: ${error instanceof Error ? error.message : String(error)}\n`);
      return 1;
    }
  } else process.stdout.write(rendered);
  return fits === false ? 3 : 0;
}

function stderrHooks() {
  // The user's prints go to stderr so that stdout carries only the report.
  return { onStdout: (chunk: Buffer) => process.stderr.write(chunk), onStderr: (chunk: Buffer) => process.stderr.write(chunk) };
}

export function describePredictFailure(failure: ProfileFailure): string {
  const lines = [`memhint predict: ${failure.kind.replace(/_/g, ' ')}: ${failure.message}`];
  if (failure.location) lines.push(`  at ${failure.location.file}:${failure.location.line}`);
  if (failure.traceback && failure.kind !== 'unsupported_torch') lines.push(failure.traceback.trimEnd());
  if (failure.kind === 'torch_missing' || failure.kind === 'spawn') lines.push('  hint: pass --python PATH with an interpreter that has torch >= 2.0');
  if ((failure.kind === 'crash' || failure.kind === 'protocol') && failure.stderrTail.trim()) {
    lines.push('last output of the interpreter:', failure.stderrTail.trimEnd());
  }
  return `${lines.join('\n')}\n`;
}
