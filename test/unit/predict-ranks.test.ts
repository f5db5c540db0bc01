// `memhint predict --world-sizes`: rank 0 of a DDP job predicted on meta tensors over torch's fake process
// group (torch 2.x), against hand-computed figures and against a real 2-rank gloo run on the CPU.
import * as assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findHarnessRoot } from '../../src/profiler/launcher';
import { reportProblem, type ProfileReport } from '../../src/profiler/report';
import { formatPrediction } from '../../src/predict/format';
import { parseWorldSizes, predictWorldSizes, ranksToPredict, worstRank } from '../../src/predict/ranks';
import { childPredictor, type PredictOptions } from '../../src/predict/run';
import type { PredictedReport } from '../../src/predict/schema';
import { runProfileCli } from './profile-cli-runner';
import { REPO, torch2Python } from './predict-torch2';

const FIXTURE = path.join(REPO, 'test/fixtures/predict/ddp_mlp.py');
const MiB = 1024 ** 2;

// ddp_mlp.py: Linear(512, 1024), GELU, Linear(1024, 1024), ReLU, Linear(1024, 10), float32, AdamW.
const PARAM_BYTES = 4 * (512 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10);
// DDP's rebuilt buckets, in the order gradients become ready (last layer first), the first capped at 1 MiB
// (dist._DEFAULT_FIRST_BUCKET_BYTES): it closes once it reaches the cap, so it holds the last Linear and the
// middle one; the second the first Linear.
const REBUILT_BUCKETS = [4 * (10 + 1024 * 10 + 1024 + 1024 * 1024), 4 * (1024 + 512 * 1024)];
/** x (float32, 512 features) and y (int64) of the rank's share of the global batch of 256. */
const inputBytes = (worldSize: number): number => (256 / worldSize) * (512 * 4 + 8);

function torchMajor(python: string): number {
  return Number(execFileSync(python, ['-c', 'import torch; print(torch.__version__.split(".")[0])'], { encoding: 'utf-8' }).trim());
}

function pythonSchemaCheck(python: string, report: unknown): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(
      python, ['-m', 'memhint_harness.schema_check', path.join(REPO, 'schema/report.schema.json')],
      { env: { ...process.env, PYTHONPATH: findHarnessRoot() } },
      (_error, stdout, stderr) => resolve((stdout || stderr).trim()),
    );
    child.stdin?.end(JSON.stringify(report));
  });
}

describe('predict --world-sizes: one rank of a DDP job on the fake process group', function () {
  this.timeout(180_000); // the gloo comparison runs a 2-rank job and a prediction: over a minute on a loaded machine
  let python: string;
  let options: PredictOptions;
  let predicted: PredictedReport;

  before(async function () {
    this.timeout(180_000);
    python = torch2Python();
    if (torchMajor(python) < 2) this.skip(); // predict needs torch >= 2.0 (meta kernels, the fake process group)
    options = {
      script: FIXTURE, function: 'train_step', setup: 'make_inputs', setupArgs: {}, python, deviceMemoryBytes: 65 * MiB,
      amp: null, checkpoint: null, maxSplitSizeBytes: null, warmup: 2, steps: 1, timeoutMs: 120_000, cwd: REPO,
    };
    const outcome = await predictWorldSizes(childPredictor(), options, [1, 2, 8]);
    assert.equal(outcome.failure, null, outcome.failure?.message);
    predicted = outcome.report;
  });

  it('parses --world-sizes', () => {
    assert.deepEqual(parseWorldSizes('64,1, 8,2,8'), [1, 2, 8, 64]);
    assert.equal(parseWorldSizes('1,0'), null);
    assert.equal(parseWorldSizes('2,x'), null);
  });

  it('every world size: DDP replicates parameters, gradients, buckets and AdamW state; the batch is split', () => {
    const ranks = predicted.prediction.ranks;
    assert.ok(ranks);
    assert.deepEqual(ranks.worldSizes.map((e) => [e.worldSize, e.rank, e.error]), [[1, 0, null], [2, 0, null], [8, 0, null]]);
    for (const e of ranks.worldSizes) assert.deepEqual(e.gradientBuckets, REBUILT_BUCKETS, `world size ${e.worldSize}`);
    const shown = predicted.prediction.world;
    assert.ok(shown);
    assert.equal(shown.worldSize, ranks.reportWorldSize);
    assert.equal(shown.ddp.length, 1);
    assert.equal(shown.ddp[0].bucketBytes, PARAM_BYTES);
    assert.deepEqual(shown.ddp[0].bucketSizes, [PARAM_BYTES]); // built as one bucket (25 MiB cap) ...
    assert.deepEqual(shown.ddp[0].rebuiltBucketSizes, REBUILT_BUCKETS); // ... rebuilt in ready order
    assert.equal(shown.ddp[0].location?.line, fs.readFileSync(FIXTURE, 'utf-8').split('\n').findIndex((l) => l.includes('ddp = DDP(')) + 1);
    const peak = predicted.peak;
    assert.ok(peak);
    // The step's peak is in AdamW's step: parameters, gradients, both moments (no 4-byte step counters: with
    // CUDA they are host scalars) and this rank's inputs.
    assert.equal(peak.byKind.parameter, PARAM_BYTES);
    assert.equal(peak.byKind.gradient, PARAM_BYTES);
    assert.equal(peak.byKind.optimizer_state, 2 * PARAM_BYTES);
    assert.equal(peak.byKind.input, inputBytes(ranks.reportWorldSize));
    // Fewer samples per rank, less activation memory: strictly decreasing raw peaks.
    const raw = ranks.worldSizes.map((e) => e.rawPeakBytes as number);
    assert.ok(raw[0] > raw[1] && raw[1] > raw[2], raw.join(' > '));
  });

  it('predicts rank 0 and the last rank; DDP with an even split: alike, shown as rank 0', () => {
    const ranks = predicted.prediction.ranks;
    assert.ok(ranks);
    assert.deepEqual(ranks.worldSizes.map((e) => e.ranksPredicted?.map((r) => r.rank)), [[0], [0, 1], [0, 7]]);
    for (const e of ranks.worldSizes) {
      for (const r of e.ranksPredicted ?? []) assert.deepEqual([r.maxReservedBytes, r.maxAllocatedBytes, r.rawPeakBytes], [e.maxReservedBytes, e.maxAllocatedBytes, e.rawPeakBytes]);
    }
    const text = formatPrediction({ report: predicted, whatIf: null, advice: [], snapshotAdvice: [], maxBatch: null });
    assert.match(text, /^ {7}8 .*\(ranks 0, 7 alike\)$/m);
  });

  it('a remainder left to the last rank: the last rank is predicted as the worst, by its extra samples', async () => {
    // 260 samples over 8 ranks: 32 each, the last rank 32 + 4.
    const uneven = { ...options, setupArgs: { global_batch: 260, remainder_to_last: true } };
    const outcome = await predictWorldSizes(childPredictor(), uneven, [8]);
    assert.equal(outcome.failure, null, outcome.failure?.message);
    const entry = outcome.report.prediction.ranks?.worldSizes[0];
    assert.ok(entry?.ranksPredicted);
    assert.equal(entry.rank, 7);
    const [first, last] = entry.ranksPredicted;
    assert.ok((last.rawPeakBytes ?? 0) > (first.rawPeakBytes ?? 0), `${last.rawPeakBytes} > ${first.rawPeakBytes}`);
    assert.equal(entry.rawPeakBytes, last.rawPeakBytes);
    // the report shown is the last rank's: its inputs are 36 samples
    assert.equal(outcome.report.prediction.world?.rank, 7);
    assert.equal(outcome.report.peak?.byKind.input, 36 * (512 * 4 + 8));
    const text = formatPrediction({ report: outcome.report, whatIf: null, advice: [], snapshotAdvice: [], maxBatch: null });
    assert.match(text, /the report above is rank 7 of world size 8/);
    assert.match(text, /\(rank 7 worst: \+?[\d.]+ \w+ reserved, \+[\d.]+ \w+ allocated vs rank 0\)/);
  });

  it('which ranks are predicted, and which is worst', () => {
    assert.deepEqual(ranksToPredict(1), [0]);
    assert.deepEqual(ranksToPredict(64), [0, 63]);
    const r = (rank: number, reserved: number, allocated: number, error: string | null = null) =>
      ({ rank, maxReservedBytes: reserved, maxAllocatedBytes: allocated, rawPeakBytes: allocated, fits: null, error });
    assert.equal(worstRank([r(0, 10, 5), r(3, 10, 5)]).rank, 0, 'a tie is rank 0');
    assert.equal(worstRank([r(0, 10, 5), r(3, 10, 6)]).rank, 3, 'reserved equal: allocated decides');
    assert.equal(worstRank([r(0, 12, 5), r(3, 10, 9)]).rank, 0, 'reserved first');
    assert.equal(worstRank([r(0, 12, 5), r(3, 0, 0, 'failed')]).rank, 3, 'a rank that failed');
  });

  it('names the smallest world size whose rank fits --device-memory, and shows its report', () => {
    const ranks = predicted.prediction.ranks;
    assert.ok(ranks);
    assert.deepEqual(ranks.worldSizes.map((e) => e.fits), [false, true, true]);
    assert.equal(ranks.smallestFitting, 2);
    assert.equal(ranks.reportWorldSize, 2);
    // 46, 44, 42 MiB of the tensors' segments + 20 MiB: the two cuBLAS workspaces (forward and backward thread,
    // 8 MiB + 128 KiB each at the default capability 8.0) share one 20 MiB large-pool segment.
    assert.deepEqual(ranks.worldSizes.map((e) => e.maxReservedBytes), [66 * MiB, 64 * MiB, 62 * MiB]);
    const text = formatPrediction({ report: predicted, whatIf: null, advice: [], snapshotAdvice: [], maxBatch: null });
    assert.match(text, /Smallest world size that fits in 65 MiB per rank: 2/);
    assert.match(text, /^ {7}1 {8}66 MiB .* 2 \(4\.04 MiB, 2 MiB\) {2}✗$/m);
  });

  it('the report with prediction.world and prediction.ranks passes the schema on both sides', async () => {
    assert.equal(reportProblem(predicted), null);
    assert.equal(await pythonSchemaCheck(python, predicted), 'ok');
  });

  it('rank 0 of 2 equals a real gloo 2-rank run on the CPU byte for byte, but for AdamW\'s step counters', async () => {
    const run = await runProfileCli([
      `${FIXTURE}::train_step`, '--setup', 'make_inputs', '--nproc-per-node', '2', '--warmup', '2', '--steps', '1',
      '--python', python, '--format', 'json',
    ]);
    assert.equal(run.code, 0, run.stderr);
    const measured = (JSON.parse(run.stdout) as { reports: ProfileReport[] }).reports[0];
    const rank0of2 = await childPredictor()({ ...options, worldSize: 2 });
    assert.equal(rank0of2.failure, null, rank0of2.failure?.message);
    const report = rank0of2.report;
    const lines = (r: ProfileReport) => r.lines.map((l) => ({ line: l.line, calls: l.calls, self: l.self, inclusive: l.inclusive, saved: l.savedForBackward, backward: l.backward }));
    assert.deepEqual(lines(report), lines(measured));
    assert.deepEqual(report.steps.map((s) => s.allocated), measured.steps.map((s) => s.allocated));
    // On the CPU, AdamW keeps one float32 step counter per parameter tensor on the device it measures; with
    // CUDA they are host tensors, which the prediction rightly leaves out: 6 parameters x 4 bytes.
    const counters = 6 * 4;
    assert.equal(measured.peak?.byKind.optimizer_state, (report.peak?.byKind.optimizer_state ?? 0) + counters);
    assert.deepEqual({ ...measured.peak?.byKind, optimizer_state: 0 }, { ...report.peak?.byKind, optimizer_state: 0 });
    assert.equal(measured.steps[0].peakLive, report.steps[0].peakLive + counters);
  });
});
