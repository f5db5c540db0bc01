// Multi-rank runs in the editor (memhint.profile.nprocPerNode): a real 2-rank DDP job on CPU (gloo) through
// the editor's runner, the worst rank chosen for the hints, and the summary's rank section.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runProfileRequest } from '../../../src/extension/profile/run';
import { lineAcrossRanks, ranksLine, worstRank } from '../../../src/extension/ranks/ranksView';
import type { DistributedReport } from '../../../src/profiler/distributed-report';
import { TORCH1_PYTHON } from '../torch2';
import { report } from './reportFixture';

const ROOT = path.resolve(__dirname, '../../../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/profiler/ddp_train.py');

function leftoverRanks(): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf-8');
      if (cmd.includes('memhint_harness.distributed') && cmd.includes(FIXTURE)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('extension/ranks: worst rank', () => {
  const merged = (peaks: (number | null)[], firstFailedRank: number | null = null): DistributedReport =>
    ({
      worldSize: peaks.length,
      launcher: 'direct',
      firstFailedRank,
      imbalance: null,
      ranks: peaks.map((p, rank) => ({ rank, status: p === null ? 'crashed' : 'ok', peakBytes: p, stepPeaks: [], oom: false, error: null, lastStep: null })),
      reports: peaks.map((p) => (p === null ? null : report({ peak: null, steps: [{ ...report().steps[0], peakLive: p }] }))),
    }) as unknown as DistributedReport;

  it('shows the rank with the highest peak, the rank that failed first when it measured something, or the only report', () => {
    assert.deepEqual([worstRank(merged([10, 30, 20]))?.rank, worstRank(merged([10, 30, 20]))?.why], [1, 'highest peak']);
    assert.deepEqual([worstRank(merged([10, 30, 20], 2))?.rank, worstRank(merged([10, 30, 20], 2))?.why], [2, 'failed first']);
    assert.deepEqual([worstRank(merged([null, 5]))?.rank, worstRank(merged([null, 5]))?.why], [1, 'only report']);
    assert.equal(worstRank(merged([null, null])), null);
  });
});

describe('extension/ranks: a real 2-rank DDP run through the editor runner (torch 1.x, ranks started directly)', function () {
  this.timeout(300_000);

  it('hints come from the rank with the larger shard, every rank\'s peak is kept, no rank is left running', async () => {
    const progress: string[] = [];
    const result = await runProfileRequest(
      { python: TORCH1_PYTHON, script: FIXTURE, function: 'train_step', warmup: 1, steps: 2, backend: 'cpu', maxSeconds: 30, timeoutSeconds: 240, cwd: path.dirname(FIXTURE), nprocPerNode: 2 },
      { signal: new AbortController().signal, onProgress: (m) => progress.push(m), onOutput: () => undefined },
    );
    assert.equal(result.error, null, result.error ?? '');
    assert.ok(result.ranks !== undefined && result.report !== null);
    const ranks = result.ranks;
    assert.equal(ranks.worldSize, 2);
    // Shard R has 32 + 16 R samples: rank 1 holds more activations at its peak.
    const [p0, p1] = ranks.ranks.map((r) => r.peakBytes ?? 0);
    assert.ok(p1 > p0, `rank 1 peak ${p1} > rank 0 peak ${p0}`);
    assert.equal(ranks.shownRank, 1);
    assert.equal(ranks.why, 'highest peak');
    assert.equal(result.report.peak?.bytes ?? Math.max(...result.report.steps.map((s) => s.peakLive)), p1, 'the hints\' report is rank 1\'s');
    assert.equal(ranks.imbalance?.maxRank, 1);
    assert.match(ranksLine(ranks), /^figures of rank 1 of 2 \(highest peak\); peaks: rank 0 .*, rank 1 .*; max\/mean 1\.\d\d×/);
    // The forward line's hover lists it in every rank, worst first (rank 1: 48 samples against 32).
    const forward = fs.readFileSync(FIXTURE, 'utf-8').split('\n').findIndex((l) => l.includes('out = ddp(inputs)')) + 1;
    const perRank = lineAcrossRanks(ranks, FIXTURE, forward);
    assert.match(perRank ?? '', /^rank 1: [\d.]+ KiB live at its peak, [\d.]+ KiB allocated per step · rank 0: /);
    assert.equal(lineAcrossRanks(ranks, FIXTURE, 1), null, 'a line no rank measured');
    assert.ok(progress[0].includes('2 ranks'));
    assert.deepEqual(leftoverRanks(), []);
  });
});
