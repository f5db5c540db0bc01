// `memhint predict --world-sizes` with FSDP (FullyShardedDataParallel and fully_shard) on meta tensors over
// torch's fake process group (torch 2.x): per-rank shards against hand-computed sizes, a sweep over world sizes,
// and rank 0 and rank 1 of 2 against a real 2-rank gloo job on the CPU (`profile --nproc-per-node 2`).
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { collectiveSites, type CollectiveSite } from '../../src/profiler/collectives';
import type { FsdpUnitInfo } from '../../src/profiler/distributed';
import { findHarnessRoot } from '../../src/profiler/launcher';
import type { ProfileReport } from '../../src/profiler/report';
import { formatBytes } from '../../src/profiler/units';
import { formatPrediction } from '../../src/predict/format';
import { predictWorldSizes, type WorldSizesOutcome } from '../../src/predict/ranks';
import { childPredictor, type PredictOptions, type PredictOutcome, type Predictor } from '../../src/predict/run';
import type { PredictedReport } from '../../src/predict/schema';
import { runProfileCli } from './profile-cli-runner';
import { REPO, torch2Python } from './predict-torch2';

const FIXTURE = path.join(REPO, 'test/fixtures/predict/fsdp_mlp.py');
const MiB = 1024 ** 2;
const SWEEP = [1, 2, 8];
const HIDDEN = 1024;
const CAPACITY = 43 * MiB;

// fsdp_mlp.py: Linear(64, H), ReLU, Linear(H, H), ReLU, Linear(H, 10), float32, AdamW; each Linear a unit.
const LINEARS: readonly [number, number][] = [[64, HIDDEN], [HIDDEN, HIDDEN], [HIDDEN, 10]];
const FULL_BYTES = LINEARS.reduce((s, [i, o]) => s + 4 * (i * o + o), 0);
/** FSDP1: one flat parameter per unit, padded to a multiple of the world size; every rank holds ceil(n / N). */
const fsdp1Shard = (n: number): number => LINEARS.reduce((s, [i, o]) => s + 4 * Math.ceil((i * o + o) / n), 0);
/** FSDP2: each parameter's dim 0 split in chunks of ceil(rows / N) (torch.chunk); rank 0 holds a full chunk. */
const fsdp2Shard = (n: number): number =>
  LINEARS.reduce((s, [i, o]) => s + 4 * (Math.ceil(o / n) * i + Math.ceil(o / n)), 0);
/** AdamW's step counters (one per flat parameter with FSDP1, one per parameter with FSDP2): 4-byte tensors on
 *  the parameters' device on the CPU, host scalars with CUDA, which the prediction leaves out. */
const COUNTERS = { fsdp1: 3, fsdp2: 6 } as const;

function lineOf(text: string): number {
  return fs.readFileSync(FIXTURE, 'utf-8').split('\n').findIndex((l) => l.includes(text)) + 1;
}

/** A predictor that predicts each (world size, rank) once, for the sweep and the comparisons alike. */
function memoised(predictor: Predictor): { predictor: Predictor; outcome: (worldSize: number, rank: number) => PredictOutcome } {
  const seen = new Map<string, Promise<PredictOutcome>>();
  const done = new Map<string, PredictOutcome>();
  return {
    predictor: (o) => {
      const key = `${o.worldSize}/${o.rank}`;
      if (!seen.has(key)) seen.set(key, predictor(o).then((r) => (done.set(key, r), r)));
      return seen.get(key) as Promise<PredictOutcome>;
    },
    outcome: (worldSize, rank) => {
      const outcome = done.get(`${worldSize}/${rank}`);
      assert.ok(outcome, `rank ${rank} of ${worldSize} was not predicted`);
      return outcome;
    },
  };
}

function report(outcome: PredictOutcome): PredictedReport {
  assert.equal(outcome.failure, null, outcome.failure?.message);
  return outcome.report;
}

/** What the tests read of `profile --nproc-per-node 2 --format json`. */
interface GlooJob {
  readonly reports: ProfileReport[];
  readonly fsdp: (FsdpUnitInfo & { rank: number })[];
  readonly collectives: CollectiveSite[];
}

/** Every Σ s_i x_i with s_i in {-1, 0, 1}. */
function signedSums(values: readonly number[]): Set<number> {
  return values.reduce((sums, x) => new Set([...sums].flatMap((t) => [t - x, t, t + x])), new Set([0]));
}

const units = (list: readonly FsdpUnitInfo[]) => list.map(({ location, ...u }) => ({ ...u, line: location?.line }));
const sum = (list: readonly FsdpUnitInfo[], f: (u: FsdpUnitInfo) => number | undefined) => list.reduce((s, u) => s + (f(u) ?? 0), 0);

for (const api of ['fsdp2', 'fsdp1'] as const) {
  describe(`predict --world-sizes: ${api} on meta tensors over the fake process group (torch 2)`, function () {
    this.timeout(120_000);
    const shard = api === 'fsdp1' ? fsdp1Shard : fsdp2Shard;
    const wrapLine = lineOf(api === 'fsdp1' ? 'model = FSDP(' : 'fully_shard(layer');
    let options: PredictOptions;
    let cache: ReturnType<typeof memoised>;
    let sweep: WorldSizesOutcome;

    before(async function () {
      this.timeout(600_000);
      const python = torch2Python();
      options = {
        script: FIXTURE, function: 'train_step', setup: 'make_inputs', setupArgs: { api, hidden: HIDDEN }, python, deviceMemoryBytes: CAPACITY,
        amp: null, checkpoint: null, maxSplitSizeBytes: null, warmup: 2, steps: 1, timeoutMs: 300_000, cwd: REPO,
      };
      cache = memoised(childPredictor());
      sweep = await predictWorldSizes(cache.predictor, options, SWEEP);
      assert.equal(sweep.failure, null, sweep.failure?.message);
    });

    it('each rank holds its shards: parameters, and AdamW\'s two moments of them, at the peak and per unit', () => {
      for (const n of SWEEP) {
        const rank0 = report(cache.outcome(n, 0));
        const fsdp = rank0.prediction.world?.fsdp ?? [];
        assert.equal(fsdp.length, 3, `world size ${n}: one unit per Linear`);
        assert.ok(fsdp.every((u) => u.api === (api === 'fsdp1' ? 'FullyShardedDataParallel' : 'fully_shard') && u.location?.line === wrapLine));
        assert.equal(sum(fsdp, (u) => u.fullBytes), FULL_BYTES);
        assert.equal(sum(fsdp, (u) => u.shardBytes), shard(n), `world size ${n}`);
        assert.equal(rank0.peak?.byKind.parameter, shard(n), `world size ${n}: parameters at the peak are the shards`);
        assert.equal(rank0.peak?.byKind.optimizer_state, 2 * shard(n), `world size ${n}: both moments, no step counters`);
        const root = rank0.modules.find((m) => m.path === '');
        assert.deepEqual([root?.params, root?.grads, root?.optimizer], [shard(n), shard(n), 2 * shard(n)], `world size ${n}: per module`);
      }
    });

    it('the sweep: shards shrink with the world size, and so do the peaks; the smallest world size that fits', () => {
      const entries = sweep.report?.prediction.ranks?.worldSizes ?? [];
      assert.deepEqual(entries.map((e) => e.worldSize), SWEEP);
      assert.ok(entries.every((e) => e.error === null));
      const shards = entries.map((e) => e.fsdpShardBytes ?? 0);
      assert.ok(shards[0] > shards[1] && shards[1] > shards[2], shards.join(' > '));
      assert.equal(shards[0], FULL_BYTES);
      // the largest unit gathered (Linear(H, H)) does not shrink: FSDP all-gathers it whole on every rank
      assert.deepEqual(entries.map((e) => e.fsdpLargestGatheredBytes), SWEEP.map(() => 4 * (HIDDEN * HIDDEN + HIDDEN)));
      const raw = entries.map((e) => e.rawPeakBytes ?? 0);
      assert.ok(raw[0] > raw[1] && raw[1] > raw[2], `raw peaks ${raw.join(' > ')}`);
      const allocated = entries.map((e) => e.maxAllocatedBytes ?? 0);
      assert.ok(allocated[0] > allocated[1] && allocated[1] > allocated[2], `max allocated ${allocated.join(' > ')}`);
      // Max reserved need not decrease (the allocator's segments): measured 62-64, 42 and 44 MiB, so the
      // smallest world size that fits 43 MiB is 2 although 8 does not fit.
      const ranks = sweep.report?.prediction.ranks;
      assert.deepEqual(entries.map((e) => e.fits), [false, true, false], entries.map((e) => `${e.worldSize}: ${e.maxReservedBytes}`).join(', '));
      assert.equal(ranks?.smallestFitting, 2);
      assert.equal(ranks?.reportWorldSize, 2);
      const text = formatPrediction({ report: sweep.report as PredictedReport, whatIf: null, advice: [], snapshotAdvice: [], maxBatch: null });
      const escape = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      assert.match(text, /Smallest world size that fits in 43 MiB per rank: 2/);
      assert.match(text, new RegExp(`^ {7}2 .* FSDP shards ${escape(formatBytes(shard(2)))}, largest unit gathered 4 MiB`, 'm'));
      assert.match(text, new RegExp(`^FSDP \\(rank \\d of 2, predicted\\):\\n  rank \\d: ${api === 'fsdp1' ? 'FullyShardedDataParallel FULL_SHARD' : 'fully_shard'} at .*fsdp_mlp\\.py:${wrapLine}: 3 unit\\(s\\), parameters ${escape(formatBytes(FULL_BYTES))} full, ${escape(formatBytes(shard(2)))} this rank’s shard`, 'm'));
    });

    // The real 2-rank gloo job on the CPU, run once for the comparisons below.
    let glooJob: Promise<GlooJob> | undefined;
    const gloo = (): Promise<GlooJob> => {
      glooJob ??= runProfileCli([
        `${FIXTURE}::train_step`, '--setup', 'make_inputs', '--nproc-per-node', '2', '--warmup', '2', '--steps', '1',
        '--python', options.python, '--format', 'json',
      ], { FSDP_API: api, FSDP_HIDDEN: String(HIDDEN) }).then((run) => {
        assert.equal(run.code, 0, run.stderr);
        return JSON.parse(run.stdout) as GlooJob;
      });
      return glooJob;
    };

    it('rank 0 and rank 1 of 2 equal a real gloo job on the CPU in shards, gradients and optimizer state; the rest differs as explained', async function () {
      this.timeout(300_000);
      const merged = await gloo();
      const counters = 4 * COUNTERS[api];
      const [forward, backward, step] = [lineOf('model(x), y)'), lineOf('loss.backward()'), lineOf('opt.step()')];
      for (const rank of [0, 1]) {
        const measured = merged.reports[rank];
        const predicted = report(cache.outcome(2, rank));
        // the FSDP units: full, gathered and shard bytes, byte for byte
        assert.deepEqual(units(predicted.prediction.world?.fsdp ?? []), units(merged.fsdp.filter((u) => u.rank === rank).map(({ rank: _r, ...u }) => u)));
        // per module: parameter and gradient shards equal; optimizer state but for the step counters
        const modules = (r: ProfileReport) => (r.modules ?? []).map((m) => [m.path, m.params, m.grads]);
        assert.deepEqual(modules(predicted), modules(measured), `rank ${rank}`);
        const root = (r: ProfileReport) => (r.modules ?? []).find((m) => m.path === '')?.optimizer ?? 0;
        assert.equal(root(measured), root(predicted) + counters);
        assert.equal(measured.peak?.byKind.parameter, predicted.peak?.byKind.parameter);
        assert.equal(measured.peak?.byKind.optimizer_state, (predicted.peak?.byKind.optimizer_state ?? 0) + counters);
        // lines: the forward's allocations equal, its all-gathers included (frees are not compared: gloo frees its
        // reduce-scatter copies when its worker thread lets go of them, sometimes during the next forward)
        const at = (r: ProfileReport, line: number) => r.lines.find((l) => l.line === line);
        const forwardFigures = (r: ProfileReport) => {
          const l = at(r, forward);
          return [l?.calls, l?.self.allocated, l?.self.allocations, l?.inclusive.allocated, l?.inclusive.allocations, l?.savedForBackward];
        };
        assert.deepEqual(forwardFigures(predicted), forwardFigures(measured), `rank ${rank}: the forward line`);
        // the forward line's frees: gloo's Work holds a collective's buffers until its worker thread lets go of
        // the work (see the last test), so a unit's buffer may be freed on the next line, or a previous
        // line's on this one; each such move is one unit's gathered bytes, never anything else
        const freedDifference = (at(measured, forward)?.self.freed ?? 0) - (at(predicted, forward)?.self.freed ?? 0);
        const unitBytes = (predicted.prediction.world?.fsdp ?? []).map((u) => u.gatheredBytes ?? 0);
        assert.ok(signedSums(unitBytes).has(freedDifference), `rank ${rank}: forward frees differ by ${freedDifference} B, not a signed sum of the units' gathered bytes ${unitBytes.join(', ')}`);
        // backward: gloo's reduce-scatter copies its input through torch (the fake group does not), one
        // unsharded gradient per unit: the units' gathered bytes in 3 more allocations
        const gathered = sum(predicted.prediction.world?.fsdp ?? [], (u) => u.gatheredBytes);
        assert.equal(at(measured, backward)?.inclusive.allocated, (at(predicted, backward)?.inclusive.allocated ?? 0) + gathered);
        assert.equal(at(measured, backward)?.inclusive.allocations, (at(predicted, backward)?.inclusive.allocations ?? 0) + 3);
        // opt.step(): on the CPU AdamW loops over the parameters (two temporaries per shard), with CUDA it
        // runs its foreach kernels (one), which the prediction models
        assert.equal(at(measured, step)?.self.allocated, 2 * (at(predicted, step)?.self.allocated ?? 0));
        assert.equal(at(predicted, step)?.self.allocated, shard(2));
      }
    });

    it('FSDP collectives per line and unit: rank 0 and rank 1 of 2 issue what the gloo job issued, call for call', async function () {
      this.timeout(300_000);
      const merged = await gloo();
      const [forward, backward] = [lineOf('model(x), y)'), lineOf('loss.backward()')];
      for (const rank of [0, 1]) {
        const predicted = report(cache.outcome(2, rank));
        const calls = predicted.prediction.world?.collectives ?? [];
        // Everything must be equal: operation, phase, the user's line, the unit (class and name), the buffer and
        // shard bytes, and the calls per profiled step and over the run, in the order issued. Nothing differs:
        // gloo's reduce-scatter copy (see above) is the backend's work inside one call, not another collective.
        const sites = collectiveSites([{ rank, collectives: calls, report: predicted }]);
        assert.deepEqual(sites, merged.collectives.filter((s) => s.rank === rank), `rank ${rank}`);
        // per unit (told apart by its gathered bytes, unique here) and step: one all-gather in forward, one in
        // backward and one reduce-scatter of its gathered bytes (FSDP2's root holds no parameters and issues none)
        const fsdp = predicted.prediction.world?.fsdp ?? [];
        assert.equal(sites.length, 3 * fsdp.length);
        for (const unit of fsdp) {
          const of = (op: string, phase: string, line: number) =>
            sites.filter((s) => s.op === op && s.phase === phase && s.location?.line === line && s.name !== null && s.bytesPerCall === unit.gatheredBytes && s.shardBytesPerCall === unit.shardBytes);
          for (const [op, phase, line] of [['all_gather', 'forward', forward], ['all_gather', 'backward', backward], ['reduce_scatter', 'backward', backward]] as const) {
            assert.deepEqual(of(op, phase, line).map((s) => [s.callsPerStep, s.calls]), [[1, 3]], `rank ${rank}, unit of ${unit.gatheredBytes} B: ${op} ${phase}`);
          }
        }
        // shown as the profile shows them
        const text = formatPrediction({ report: predicted, whatIf: null, advice: [], snapshotAdvice: [], maxBatch: null });
        assert.match(text, new RegExp(`^FSDP collectives \\(rank ${rank} of 2, predicted; .*\\n  rank ${rank}: all-gather \\(forward\\) for \\w+ '0' at .*fsdp_mlp\\.py:${forward}: `, 'm'));
      }
    });
  });
}

describe('predict --world-sizes: FSDP feature detection (torch 2)', function () {
  this.timeout(60_000);

  for (const api of ['fsdp1', 'fsdp2'] as const) {
    it(`${api} with parameter CPU offload is refused in one line at the user's FSDP call`, async function () {
      this.timeout(120_000);
      const outcome = await childPredictor()({
        script: FIXTURE, function: 'train_step', setup: 'make_inputs', setupArgs: { api, hidden: 64, offload: true }, python: torch2Python(),
        deviceMemoryBytes: null, amp: null, checkpoint: null, maxSplitSizeBytes: null, warmup: 1, steps: 1, timeoutMs: 110_000, cwd: REPO,
        worldSize: 2, rank: 0,
      });
      assert.equal(outcome.failure?.kind, 'unsupported_torch', outcome.failure?.message);
      const what = api === 'fsdp1' ? 'CPUOffload\\(offload_params=True\\)' : 'CPUOffloadPolicy';
      assert.match(outcome.failure?.message ?? '', new RegExp(`^FSDP with CPU offload \\(${what}\\) is not predicted: .*memhint profile --nproc-per-node N`));
      assert.ok(!(outcome.failure?.message ?? '').includes('\n'));
      assert.equal(outcome.failure?.location?.line, lineOf(api === 'fsdp1' ? 'model = FSDP(' : 'fully_shard(layer'));
    });
  }

  it('why frees move between lines under gloo: its Work holds a collective\'s buffer after wait(), the fake group\'s does not', () => {
    // test/fixtures/predict/collective_buffer_release.py: the caller drops its output tensor after wait() while
    // still referencing the Work. Under gloo the buffer stays allocated (the Work owns it; its last reference is
    // dropped by gloo's worker thread, whenever that thread runs); under the fake process group it is freed.
    const out = execFileSync(torch2Python(), [path.join(REPO, 'test/fixtures/predict/collective_buffer_release.py')], { encoding: 'utf-8' });
    assert.deepEqual(JSON.parse(out.trim().split('\n').pop() ?? '{}'), { gloo: true, fake: false });
  });

  it('every FSDP function the prediction adjusts exists in this torch; a missing one is named (FSDP then refused)', () => {
    const missing = (before: string): string =>
      execFileSync(torch2Python(), ['-c', `${before}\nfrom memhint_harness.predict import fsdp\nprint(fsdp.missing())`], {
        env: { ...process.env, PYTHONPATH: findHarnessRoot() }, encoding: 'utf-8',
      }).trim();
    assert.equal(missing(''), 'None');
    assert.equal(
      missing('import torch.distributed.fsdp._init_utils as u\ndel u._materialize_meta_module'),
      'torch.distributed.fsdp._init_utils._materialize_meta_module',
    );
  });
});
