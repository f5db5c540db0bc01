// `memhint profile --nproc-per-node 2` on CPU with the gloo backend, under Debian's torch 1.13 (ranks started
// by memhint) and torch 2.x (torchrun): per-rank figures equal a single-process run of the same shard, a
// leak in one rank is reported for that rank only, a rank that raises is reported by rank and no rank is
// left running. Plus the pure merge (imbalance, worst rank first, DDP bucket rebuild).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type CliRun as Run, runProfileCli } from './profile-cli-runner';
import { assertEqualButLateFrees } from './late-collective-frees';
import type { DistributedOutcome, RankOutcome } from '../../src/profiler/distributed';
import { chooseLauncher, rankHarnessArgs, settleStatuses } from '../../src/profiler/distributed';
import { formatDistributed, mergeDistributed, type DistributedReport } from '../../src/profiler/distributed-report';
import { runProfile, type ProfileOptions } from '../../src/profiler/launcher';
import type { Leak, ProfileReport } from '../../src/profiler/report';

const ROOT = path.resolve(__dirname, '../../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/profiler/ddp_train.py');
const TORCH1_PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';
const TORCH2_PYTHON = process.env.MEMHINT_TEST_TORCH2_PYTHON ?? path.join(ROOT, '.venv-torch2/bin/python');

const profile = runProfileCli;

/** The buffers of DDP's bucket rebuild (second iteration, in warmup) that gloo's worker thread frees: the
 * broadcast bucket order (int32, one per parameter plus the bucket count: the fixture's 4 parameters, 1 bucket)
 * and the broadcast bucket sizes (int32, one per bucket). Under load the worker thread can release them after
 * the first profiled step began, in a rank or in the single process, and the free is charged to whatever line
 * the main thread then runs (CI: +20 B freed on the leak test's rank 1 backward line; the equal test's earlier
 * +4 B on the single process's backward line, then put down to the returned loss, is the 4-byte one). That is
 * the program's own timing, not the harness's: a rank equals the single process byte for byte except, at most,
 * for these two frees (late-collective-frees.ts), and a difference of any other size or in any allocation fails. */
const REBUILD_BROADCAST_BYTES = [(4 + 1) * 4, 1 * 4];

/** Processes still running memhint's rank entry on the fixture: there must be none after a profile. */
function leftoverRanks(fixture = FIXTURE): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf-8');
      if (cmd.includes('memhint_harness.distributed') && cmd.includes(fixture)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Everything a profile measures about memory in a step, without times and pids. */
function figures(report: ProfileReport): unknown {
  return {
    lines: report.lines.map((l) => ({ line: l.line, calls: l.calls, self: l.self, inclusive: l.inclusive, saved: l.savedForBackward, backward: l.backward })),
    steps: report.steps.map((s) => ({ allocated: s.allocated, freed: s.freed, start: s.liveAtStart, end: s.liveAtEnd, peak: s.peakLive })),
    peak: report.peak && { bytes: report.peak.bytes, byKind: report.peak.byKind, byLine: report.peak.byLine },
    leaks: report.leaks.map((l: Leak) => ({ line: l.line, bytesByStep: l.bytesByStep, reason: l.reason, heldBy: l.heldBy })),
    modules: report.modules,
  };
}

function singleOptions(python: string, scriptArgs: string[]): ProfileOptions {
  return {
    script: FIXTURE,
    function: 'train_step',
    setup: null,
    warmup: 2,
    steps: 3,
    maxSeconds: null,
    backend: 'cpu',
    python,
    budgetBytes: null,
    memoryLimitBytes: null,
    timeoutMs: 300_000,
    scriptArgs,
  };
}

for (const [label, python, launcher] of [
  ['system python (torch 1.13 on Debian 12), ranks started by memhint', TORCH1_PYTHON, 'direct'],
  ['torch 2.x (torchrun)', TORCH2_PYTHON, 'torchrun'],
] as const) {
  describe(`memhint profile --nproc-per-node 2: ${label}`, function () {
    this.timeout(600_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-dist-'));
    after(() => fs.rmSync(dir, { recursive: true, force: true }));
    before(function () {
      if (launcher === 'torchrun' && !fs.existsSync(python)) {
        throw new Error(
          `torch 2.x interpreter missing: ${python}. Create it (python3 -m venv .venv-torch2 && .venv-torch2/bin/pip install torch numpy) or set MEMHINT_TEST_TORCH2_PYTHON`,
        );
      }
    });

    const distributed = async (scriptArgs: string[], name: string): Promise<{ run: Run; report: DistributedReport }> => {
      const out = path.join(dir, `${name}.json`);
      const run = await profile([
        `${FIXTURE}::train_step`, '--python', python, '--nproc-per-node', '2', '--launcher', launcher,
        '--backend', 'cpu', '--format', 'json', '--out', out, '--timeout', '300', '--', ...scriptArgs,
      ]);
      assert.deepEqual(leftoverRanks(), [], 'no rank is left running');
      return { run, report: JSON.parse(fs.readFileSync(out, 'utf-8')) as DistributedReport };
    };

    it('equal ranks: each rank’s figures equal a single-process run of the same shard, byte for byte', async function () {
      const { run, report } = await distributed(['--equal'], 'equal');
      assert.equal(run.code, 0, run.stderr);
      assert.equal(report.launcher, launcher);
      assert.deepEqual(report.ranks.map((r) => r.status), ['ok', 'ok']);
      const [rank0, rank1] = report.reports;
      assert.ok(rank0 && rank1);
      assert.equal(rank0.steps.length, 3);
      for (const shard of [0, 1]) {
        const single = await runProfile(singleOptions(python, ['--equal', '--shard', String(shard)]), { onSpawn: () => undefined });
        assert.equal(single.failure, null, JSON.stringify(single.failure));
        assert.ok(single.report);
        assertEqualButLateFrees(figures(report.reports[shard] as ProfileReport), figures(single.report), REBUILD_BROADCAST_BYTES, `rank ${shard} vs single process`);
      }
      assert.equal(report.imbalance?.spreadBytes, 0, 'equal shards, equal peaks');
      // DDP described per rank, with its buckets sized as the trainable parameters' gradients.
      const params = (64 * 256 + 256 + 256 * 10 + 10) * 4;
      assert.deepEqual(report.ddp.map((d) => [d.rank, d.bucketBytes, d.location?.line]), [
        [0, params, lineOf('ddp = DDP(model)')],
        [1, params, lineOf('ddp = DDP(model)')],
      ]);
    });

    it('a leak in rank 1 only is reported for rank 1 only, and the imbalance is measured', async () => {
      const { run, report } = await distributed(['--leak-rank', '1'], 'leak');
      assert.equal(run.code, 0, run.stderr);
      const held = report.leaks.filter((l) => l.ranks.some((r) => r.heldBy?.includes('history')));
      assert.equal(held.length, 1, JSON.stringify(report.leaks));
      assert.deepEqual(held[0].ranks.map((r) => r.rank), [1]);
      assert.equal(held[0].line, lineOf('loss = nn.functional.cross_entropy'));
      assert.ok(report.reports[0]?.leaks.every((l) => l.heldBy === null), 'rank 0 holds nothing');
      // Shard 1 has 48 samples, shard 0 has 32: rank 1 peaks higher, and the forward line shows it first.
      const [p0, p1] = report.ranks.map((r) => r.peakBytes ?? 0);
      assert.ok(p1 > p0, `${p1} > ${p0}`);
      assert.equal(report.imbalance?.maxRank, 1);
      assert.equal(report.imbalance?.spreadBytes, p1 - p0);
      const forward = report.lines.find((l) => l.line === lineOf('out = ddp(inputs)'));
      assert.equal(forward?.ranks[0].rank, 1, 'worst rank first');
      // Per module too: the model (DDP, root "") has more live at rank 1's peak (48 vs 32 samples), so rank 1
      // comes first; the first Linear's forward allocates batch x 256 floats in each rank, its parameters are
      // the same in both, and each rank's figures are its own report's.
      const root = report.modules?.find((m) => m.path === '');
      assert.deepEqual(root?.ranks.map((r) => r.rank), [1, 0]);
      assert.equal(report.modules?.[0], root, 'the module with the most live at the worst rank’s peak first');
      const fc1 = report.modules?.find((m) => m.path === 'module.0');
      assert.ok(fc1, JSON.stringify(report.modules?.map((m) => m.path)));
      assert.equal(fc1.type, 'Linear');
      const byRank = new Map(fc1.ranks.map((r) => [r.rank, r]));
      assert.deepEqual([0, 1].map((r) => byRank.get(r)?.forwardAlloc), [32 * 256 * 4, 48 * 256 * 4]);
      assert.deepEqual([0, 1].map((r) => byRank.get(r)?.params), [(64 * 256 + 256) * 4, (64 * 256 + 256) * 4]);
      for (const m of report.modules ?? []) {
        for (const r of m.ranks) {
          const own = report.reports[r.rank]?.modules?.find((o) => o.root === m.root && o.path === m.path);
          assert.deepEqual([r.liveAtPeak, r.backwardAlloc, r.saved, r.grads], [own?.live_at_peak, own?.backward_alloc, own?.saved, own?.grads]);
        }
      }
      assert.match(formatDistributed(report, () => null), /DistributedDataParallel \(DistributedDataParallel\)\n\s+rank 1: live@peak/);
      // The unequal shard too: rank 1 is exactly a single process on shard 1 with the same leak.
      const single = await runProfile(singleOptions(python, ['--leak-rank', '1', '--shard', '1']), { onSpawn: () => undefined });
      assert.ok(single.report, JSON.stringify(single.failure));
      assertEqualButLateFrees(figures(report.reports[1] as ProfileReport), figures(single.report), REBUILD_BROADCAST_BYTES, 'rank 1 vs single process');
    });

    it('a rank that raises is reported by rank, the other rank is stopped, exit code 1', async () => {
      const { run, report } = await distributed(['--raise-rank', '1'], 'raise');
      assert.equal(run.code, 1);
      const rank1 = report.ranks[1];
      assert.equal(rank1.status, 'failed');
      assert.equal(rank1.error?.kind, 'user_exception');
      assert.match(rank1.error?.message ?? '', /rank 1 gave up/);
      assert.equal(rank1.error?.location?.line, lineOf('raise RuntimeError'));
      assert.equal(report.firstFailedRank, 1);
      assert.ok(['failed', 'stopped'].includes(report.ranks[0].status), report.ranks[0].status);
      assert.match(run.stderr, /rank 1: failed — user exception: RuntimeError: rank 1 gave up/);
    });

    it('a rank that runs out of memory is named with its OOM and line; the other rank did not finish; exit code 1', async () => {
      // Rank 1's step asks for 16 GiB more from its fourth call on; --memory-limit caps each rank's address space.
      const out = path.join(dir, 'oom.json');
      const run = await profile([
        `${FIXTURE}::train_step`, '--python', python, '--nproc-per-node', '2', '--launcher', launcher,
        '--backend', 'cpu', '--memory-limit', '2GiB', '--format', 'json', '--out', out, '--timeout', '300', '--', '--oom-rank', '1',
      ]);
      assert.deepEqual(leftoverRanks(), [], 'no rank is left running');
      assert.equal(run.code, 1, run.stderr);
      const report = JSON.parse(fs.readFileSync(out, 'utf-8')) as DistributedReport;
      const [rank0, rank1] = report.ranks;
      assert.equal(rank1.status, 'failed');
      assert.equal(rank1.oom, true);
      assert.equal(rank1.error?.kind, 'oom');
      assert.equal(rank1.error?.location?.line, lineOf('torch.empty(extra_bytes'));
      assert.equal(rank0.oom, false);
      assert.ok(['failed', 'stopped'].includes(rank0.status), `rank 0 did not finish its steps: ${rank0.status}`);
      assert.equal(report.firstFailedRank, 1);
      assert.match(formatDistributed(report, () => null), /rank 1: FAILED · OOM/);
    });

    it('a rank that hangs: every rank is killed at --timeout and reported by rank with its last step', async () => {
      const out = path.join(dir, 'hang.json');
      const run = await profile([
        `${FIXTURE}::train_step`, '--python', python, '--nproc-per-node', '2', '--launcher', launcher,
        '--backend', 'cpu', '--format', 'json', '--out', out, '--timeout', launcher === 'torchrun' ? '90' : '40', '--', '--hang-rank', '0',
      ]);
      assert.deepEqual(leftoverRanks(), [], 'no rank is left running');
      assert.equal(run.code, 1);
      const report = JSON.parse(fs.readFileSync(out, 'utf-8')) as DistributedReport;
      assert.deepEqual(report.ranks.map((r) => r.status), ['timeout', 'timeout']);
      // Both ranks finished warmup and the first profiled step (calls 0..2) before rank 0 stopped calling.
      assert.deepEqual(report.ranks.map((r) => r.lastStep), [0, 0]);
      assert.match(run.stderr, /rank 0: timeout/);
    });
  });
}

// FSDP on CPU with gloo runs under torch 2.x (FullyShardedDataParallel with device_id=cpu, and fully_shard):
// each rank keeps half of every unit's parameters; memhint describes every unit per rank, and for FSDP1 the
// measured parameter and optimizer-state bytes at the peak are this rank's shards.
describe('memhint profile --nproc-per-node 2: FSDP on CPU (torch 2.x, torchrun)', function () {
  this.timeout(600_000);
  const fixture = path.join(ROOT, 'test/fixtures/profiler/fsdp_train.py');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-fsdp-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // The fixture's three Linear layers, each an FSDP unit: (in x out + out) float32 parameters.
  const units = [64 * 256 + 256, 256 * 256 + 256, 256 * 10 + 10].map((n) => n * 4);
  const full = units.reduce((a, b) => a + b, 0);

  for (const api of ['fsdp1', 'fsdp2'] as const) {
    it(`${api}: every unit described per rank, full and shard bytes; no rank left running`, async () => {
      const out = path.join(dir, `${api}.json`);
      const run = await profile([
        `${fixture}::train_step`, '--python', TORCH2_PYTHON, '--nproc-per-node', '2', '--backend', 'cpu', '--format', 'json',
        '--out', out, '--timeout', '300', '--', '--api', api,
      ]);
      assert.deepEqual(leftoverRanks(fixture), [], 'no rank is left running');
      assert.equal(run.code, 0, run.stderr);
      const report = JSON.parse(fs.readFileSync(out, 'utf-8')) as DistributedReport;
      assert.deepEqual(report.ranks.map((r) => r.status), ['ok', 'ok']);
      for (const rank of [0, 1]) {
        const mine = (report.fsdp ?? []).filter((u) => u.rank === rank);
        assert.deepEqual(mine.map((u) => [u.api, u.fullBytes, u.shardBytes, u.location?.line]), units.map((bytes) => [
          api === 'fsdp1' ? 'FullyShardedDataParallel' : 'fully_shard', bytes, bytes / 2, lineOfIn(fixture, api === 'fsdp1' ? 'return FSDP(model' : 'fully_shard(layer)'),
        ]));
      }
      for (const rankReport of report.reports) {
        const byKind = rankReport?.peak?.byKind;
        // FSDP2's parameters are DTensors: counted by their local shard, not by the logical (global) size
        assert.equal(byKind?.parameter, full / 2, 'a rank holds its shard of the parameters');
        // AdamW: exp_avg and exp_avg_sq of the shard, plus a 4-byte step counter per flat parameter
        // (FSDP1: one per unit) or per parameter (FSDP2: weight and bias of each unit)
        assert.equal(byKind?.optimizer_state, full + (api === 'fsdp1' ? 3 : 6) * 4);
      }
      // Every unit's buffers per rank: an all-gather of its gathered bytes for forward (on the forward line) and
      // again for backward, then a reduce-scatter of its unsharded gradient, both on the backward line.
      const forward = lineOfIn(fixture, 'out = model(inputs)');
      const backward = lineOfIn(fixture, 'loss.backward()');
      for (const rank of [0, 1]) {
        const sites = (report.collectives ?? []).filter((c) => c.rank === rank);
        const gathered = new Map((report.fsdp ?? []).filter((u) => u.rank === rank).map((u, i) => [String(2 * i), u.gatheredBytes]));
        const expected = [...gathered].flatMap(([name, bytes]) => [
          ['all_gather', 'forward', forward, name, bytes], ['all_gather', 'backward', backward, name, bytes], ['reduce_scatter', 'backward', backward, name, bytes],
        ]);
        const key = (x: unknown[]): string => x.join(' ');
        assert.deepEqual(sites.map((c) => key([c.op, c.phase, c.location?.line, c.name, c.bytesPerCall])).sort(), expected.map(key).sort());
        assert.equal(new Set(sites.map((c) => c.calls)).size, 1, 'each unit gathered and reduced once per call of the step');
        // per profiled step: once each, though the run also made them in its warmup step(s) (--nproc-per-node's
        // default warmup is 2), which the whole-run count includes
        const steps = (report.reports[rank] as ProfileReport).steps.length;
        assert.ok(steps > 0);
        assert.deepEqual(sites.map((c) => [c.callsPerStep, c.calls > steps]), sites.map(() => [1, true]), JSON.stringify(sites));
        assert.ok(sites.every((c) => c.module?.endsWith('Linear') && c.shardBytesPerCall * 2 === c.bytesPerCall), JSON.stringify(sites));
      }
      const text = formatDistributed(report);
      assert.match(text, new RegExp(`rank 1: ${api === 'fsdp1' ? 'FullyShardedDataParallel FULL_SHARD' : 'fully_shard'} at .*fsdp_train\\.py:\\d+: 3 unit\\(s\\)`));
      assert.match(text, /rank 1: reduce-scatter \(backward\) for \w*Linear '2' at .*fsdp_train\.py:\d+: 257 KiB buffer \(shard 129 KiB\)/);
    });
  }
});

// Per-rank figures of an FSDP job equal a single process standing for that rank: the fixture's --fake-rank R
// runs the same FSDP code over torch's fake process group (collectives complete without moving data, so
// every allocation is the one rank R makes). An odd hidden width makes every unit's shards uneven (FSDP1
// pads the flat parameter, FSDP2 pads the last rank's dim-0 chunk), so rank 1 is not a copy of rank 0.
describe('FSDP per rank equals a single-process run of the same shard (torch 2.x, byte for byte on CPU)', function () {
  this.timeout(900_000);
  const fixture = path.join(ROOT, 'test/fixtures/profiler/fsdp_train.py');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-fsdp-single-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const api of ['fsdp1', 'fsdp2'] as const) {
    it(`${api}, uneven shards: rank R of 2 equals one process as rank R over the fake group`, async () => {
      const scriptArgs = ['--api', api, '--hidden', '255'];
      const out = path.join(dir, `${api}.json`);
      const run = await profile([
        `${fixture}::train_step`, '--python', TORCH2_PYTHON, '--nproc-per-node', '2', '--backend', 'cpu', '--format', 'json',
        '--out', out, '--timeout', '300', '--', ...scriptArgs,
      ]);
      assert.deepEqual(leftoverRanks(fixture), [], 'no rank is left running');
      assert.equal(run.code, 0, run.stderr);
      const report = JSON.parse(fs.readFileSync(out, 'utf-8')) as DistributedReport;
      for (const rank of [0, 1]) {
        const options = { ...singleOptions(TORCH2_PYTHON, [...scriptArgs, '--fake-rank', String(rank), '--fake-world', '2']), script: fixture };
        const single = await runProfile(options, { onSpawn: () => undefined });
        assert.equal(single.failure, null, JSON.stringify(single.failure));
        assert.ok(single.report);
        const measured = report.reports[rank] as ProfileReport;
        // gloo's reduce-scatter copies its input through torch (the fake group moves nothing): one buffer of each
        // reduce-scatter's size per call, on the backward line, is all that the single process does not allocate.
        const copies = (report.collectives ?? []).filter((c) => c.rank === rank && c.op === 'reduce_scatter');
        assert.equal(copies.length, 3, 'one reduce-scatter per unit');
        const perStep = copies.reduce((sum, c) => sum + c.bytesPerCall, 0);
        assert.deepEqual(sameShard(measured, perStep, copies.length), sameShard(single.report, 0, 0), `rank ${rank} vs single process`);
        // Live between steps: equal, but for copies gloo's worker had not released yet (any subset of them).
        const held = copies.reduce((sums, c) => [...sums, ...sums.map((x) => x + c.bytesPerCall)], [0]);
        measured.steps.forEach((step, i) => {
          const other = single.report?.steps[i];
          const pairs: [number, number | undefined][] = [[step.liveAtStart, other?.liveAtStart], [step.liveAtEnd, other?.liveAtEnd]];
          for (const [a, b] of pairs) {
            assert.ok(held.includes(a - (b ?? NaN)), `step ${i}: ${a} - ${b} is not a set of gloo's copies (${held.join(', ')})`);
          }
        });
        // the shards really are uneven: FSDP2's last rank holds a narrower local shard of the odd dim 0
        const shards = (report.fsdp ?? []).filter((u) => u.rank === rank).map((u) => u.shardBytes);
        // (rows x (in + 1 bias) x 4 B: 255 rows split 128 + 127, the 10-row last layer 5 + 5)
        const rows = rank === 0 ? 128 : 127;
        if (api === 'fsdp2') assert.deepEqual(shards, [rows * 65 * 4, rows * 256 * 4, 5 * 256 * 4]);
      }
    });
  }
});

/** What a rank allocates per line and step and holds at its peak, byte for byte, with `extra` bytes in `count`
 * allocations per step taken off the backward line and the steps (gloo's reduce-scatter copies). When those
 * copies are freed depends on gloo's worker thread, so frees, the peak's composition and what is live between
 * steps are left out here (the caller checks the last against the copies); parameters, optimizer state and
 * inputs at the peak are compared. */
function sameShard(report: ProfileReport, extra: number, count: number): unknown {
  const backward = lineOfIn(path.join(ROOT, 'test/fixtures/profiler/fsdp_train.py'), 'loss.backward()');
  return {
    // the step function's own lines (its callers' inclusive figures add up the steps, compared below)
    lines: report.lines.filter((l) => l.calls > 0).map((l) => {
      const off = l.line === backward ? l.calls : 0;
      return {
        line: l.line, calls: l.calls, saved: l.savedForBackward,
        allocated: l.inclusive.allocated - off * extra, allocations: l.inclusive.allocations - off * count,
      };
    }),
    steps: report.steps.map((s) => s.allocated - extra),
    held: report.peak && { parameter: report.peak.byKind.parameter, optimizer: report.peak.byKind.optimizer_state, input: report.peak.byKind.input },
  };
}

function lineOfIn(file: string, needle: string): number {
  const index = fs.readFileSync(file, 'utf-8').split('\n').findIndex((l) => l.includes(needle));
  assert.ok(index >= 0, needle);
  return index + 1;
}

function lineOf(needle: string): number {
  const index = fs.readFileSync(FIXTURE, 'utf-8').split('\n').findIndex((l) => l.includes(needle));
  assert.ok(index >= 0, needle);
  return index + 1;
}

describe('distributed profile: merge and launch arguments', () => {
  const report = (peaks: number[], live: number, leak?: Partial<Leak>): ProfileReport =>
    ({
      steps: peaks.map((p) => ({ peakLive: p })),
      lines: [{ file: '/t.py', line: 5, code: 'y = f(x)', calls: 1, self: { allocated: 100, net: 0, freed: 100, peak: 100, allocations: 1 } }],
      peak: { byLine: [{ file: '/t.py', line: 5, bytes: live }] },
      leaks: leak ? [{ file: '/t.py', line: 5, code: 'y = f(x)', bytesPerStep: 0, bytesByStep: [], graphNodesPerStep: 0, reason: 'storage', heldBy: null, ...leak }] : [],
      target: { script: '/t.py', function: 'step' },
    }) as unknown as ProfileReport;
  const rank = (r: number, rep: ProfileReport | null, extra: Partial<RankOutcome> = {}): RankOutcome => ({
    rank: r, status: rep ? 'ok' : 'crash', hello: null, report: rep, error: null, lastProgress: null, protocolError: null, ddp: [], lastWriteEpochMs: null, ...extra,
  });
  const outcome = (ranks: RankOutcome[]): DistributedOutcome => ({
    launcher: 'torchrun', worldSize: ranks.length, torchVersion: '2.5.0', ranks, launchError: null, timedOut: false, cancelled: false, outputTail: '',
  });

  it('measures imbalance over ranks with a report and puts the worst rank first per line', () => {
    const merged = mergeDistributed(outcome([rank(0, report([100, 300], 50)), rank(1, report([600], 400)), rank(2, report([200], 10)), rank(3, null)]));
    assert.deepEqual(merged.ranks.map((r) => r.peakBytes), [300, 600, 200, null]);
    assert.equal(merged.imbalance?.maxRank, 1);
    assert.equal(merged.imbalance?.minRank, 2);
    assert.equal(merged.imbalance?.spreadBytes, 400);
    assert.equal(merged.imbalance?.maxOverMean, 600 / ((300 + 600 + 200) / 3));
    assert.deepEqual(merged.lines[0].ranks.map((r) => r.rank), [1, 0, 2]);
    assert.match(formatDistributed(merged, () => null), /rank 3: CRASHED/);
  });

  it('merges module figures per rank, worst rank first, modules ordered by their worst rank', () => {
    const mod = (path: string, live: number, params: number) =>
      ({ root: 'Net', path, type: path ? 'Linear' : 'Net', calls: 1, params, grads: params, optimizer: 0, saved: 0, forward_alloc: live, backward_alloc: 0, live_at_peak: live });
    const withModules = (rep: ProfileReport, modules: unknown[]): ProfileReport => ({ ...rep, modules }) as unknown as ProfileReport;
    const merged = mergeDistributed(
      outcome([
        rank(0, withModules(report([1], 1), [mod('', 500, 100), mod('fc', 10, 100)])),
        rank(1, withModules(report([1], 1), [mod('', 900, 100), mod('fc', 10, 400)])),
        rank(2, null),
      ]),
    );
    assert.deepEqual(merged.modules?.map((m) => m.path), ['', 'fc']);
    assert.deepEqual(merged.modules?.[0].ranks.map((r) => [r.rank, r.liveAtPeak]), [[1, 900], [0, 500]]);
    assert.deepEqual(merged.modules?.[1].ranks.map((r) => r.rank), [1, 0], 'equal live at the peak: the rank holding more first');
    const text = formatDistributed(merged, () => null, 1);
    assert.match(text, /Modules \(per step/);
    assert.match(text, /Net \(Net\)\n\s+rank 1: live@peak 900 B, params 100 B/);
    assert.match(text, /… 1 more module\(s\)/);
  });

  it('settles statuses: a partial report without an error while another rank failed was stopped, not ok', () => {
    const partial = { ...report([1], 1), partial: true } as ProfileReport;
    const failed = rank(1, report([1], 1), { status: 'failed', error: { type: 'error', kind: 'oom', message: 'x', location: null } as never });
    const statuses = (ranks: RankOutcome[], stopping: Parameters<typeof settleStatuses>[1]) => settleStatuses(ranks, stopping).map((r) => r.status);
    assert.deepEqual(statuses([rank(0, partial), failed], 'failure'), ['stopped', 'failed']);
    assert.deepEqual(statuses([rank(0, partial), rank(1, report([1], 1))], null), ['ok', 'ok'], 'partial for its own reasons (--max-seconds): ok');
    assert.deepEqual(statuses([rank(0, report([1], 1)), failed], 'failure'), ['ok', 'failed'], 'a rank that finished stays ok');
    assert.deepEqual(statuses([rank(0, null), failed], 'failure'), ['stopped', 'failed']);
    assert.deepEqual(statuses([rank(0, null), rank(1, null)], 'timeout'), ['timeout', 'timeout']);
  });

  it('names a one-time allocation of exactly the DDP bucket size a bucket rebuild, not other leaks', () => {
    const ddp = [{ location: null, bucketBytes: 4096 }];
    const rebuild = mergeDistributed(outcome([rank(0, report([1], 1, { bytesByStep: [4096, 0] }), { ddp })]));
    assert.equal(rebuild.leaks[0].ddpBucketRebuild, true);
    const growing = mergeDistributed(outcome([rank(0, report([1], 1, { bytesByStep: [4096, 4096] }), { ddp })]));
    assert.equal(growing.leaks[0].ddpBucketRebuild, false);
    const other = mergeDistributed(outcome([rank(0, report([1], 1, { bytesByStep: [4000, 0] }), { ddp })]));
    assert.equal(other.leaks[0].ddpBucketRebuild, false);
  });

  it('counts collectives per profiled step apart from warmup and calls outside the steps', () => {
    const call = (step: number | null, warmup = false) => ({ op: 'all_gather' as const, bytes: 1024, shardBytes: 512, phase: 'forward' as const, location: { file: '/t.py', line: 5 }, unit: { module: 'Linear', name: '0' }, step, warmup });
    const collectives = [call(null, true), call(null, true), call(null), call(0), call(0), call(1), call(1)];
    const [site] = mergeDistributed(outcome([rank(0, report([1, 1], 1), { collectives })])).collectives ?? [];
    assert.equal(site.calls, 7, 'the whole run: two warmup steps, one call outside the steps, two profiled steps');
    assert.equal(site.callsPerStep, 2);
    const text = formatDistributed(mergeDistributed(outcome([rank(0, report([1, 1], 1), { collectives })])), () => null);
    assert.match(text, /1 KiB buffer \(shard 512 B\) × 2 per step, 7 call\(s\) in the run/);
    const none = mergeDistributed(outcome([rank(0, null, { collectives })])).collectives ?? [];
    assert.equal(none[0].callsPerStep, null, 'no profiled step reported: no per-step figure');
  });

  it('launches torchrun on torch 2 and ranks directly on torch 1; rank args drop the inherited fd', () => {
    assert.equal(chooseLauncher('auto', '2.13.0+cpu'), 'torchrun');
    assert.equal(chooseLauncher('auto', '1.13.0a0+gitunknown'), 'direct');
    assert.equal(chooseLauncher('auto', null), 'direct');
    assert.equal(chooseLauncher('torchrun', '1.13.0'), 'torchrun');
    const args = rankHarnessArgs(singleOptions('python3', ['--x']), '/tmp/d');
    assert.deepEqual(args.slice(0, 4), ['-m', 'memhint_harness.distributed', '--report-dir', '/tmp/d']);
    assert.ok(!args.includes('--protocol-fd') && !args.includes('memhint_harness'), args.join(' '));
    assert.deepEqual(args.slice(-2), ['--', '--x']);
  });
});
