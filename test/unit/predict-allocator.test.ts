// The caching-allocator model (python/memhint_harness/predict/allocator.py) against cases computed by hand
// from c10/cuda/CUDACachingAllocator.cpp's rules. Pure Python (no torch): runs with the system python3.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

const PYTHON = process.env.MEMHINT_TEST_PYTHON ?? 'python3';
const HARNESS = path.resolve(__dirname, '../../../python');
const KiB = 1024;
const MiB = 1024 * 1024;

type Op = { op: 'malloc'; key: number; bytes: number } | { op: 'free'; key: number } | { op: 'empty_cache' };

interface Stats {
  readonly block?: number;
  readonly oom?: string;
  readonly allocatedBytes: number;
  readonly reservedBytes: number;
  readonly maxAllocatedBytes: number;
  readonly maxReservedBytes: number;
  readonly segments: number;
}

function replay(ops: Op[], options: { maxSplitSize?: number; capacity?: number } = {}): Stats[] {
  const out = execFileSync(PYTHON, ['-m', 'memhint_harness.predict.replay'], {
    input: JSON.stringify({ ...options, ops }),
    env: { ...process.env, PYTHONPATH: HARNESS },
    encoding: 'utf-8',
  });
  return JSON.parse(out) as Stats[];
}

const malloc = (key: number, bytes: number): Op => ({ op: 'malloc', key, bytes });
const free = (key: number): Op => ({ op: 'free', key });

describe('predict: CUDA caching-allocator model', () => {
  it('rounds to 512-byte blocks and packs small requests into one 2 MiB segment', () => {
    const s = replay([malloc(1, 1), malloc(2, 513), malloc(3, MiB)]);
    assert.deepEqual(s.map((x) => x.block), [512, 1024, MiB]);
    assert.equal(s[2].allocatedBytes, 512 + 1024 + MiB);
    assert.equal(s[2].reservedBytes, 2 * MiB);
    assert.equal(s[2].segments, 1);
  });

  it('opens a new 2 MiB small segment when the first one is full', () => {
    // 2 MiB - 1 MiB - 1 MiB leaves nothing: the third 1 MiB request needs a second segment.
    const s = replay([malloc(1, MiB), malloc(2, MiB), malloc(3, MiB)]);
    assert.deepEqual(s.map((x) => x.reservedBytes), [2 * MiB, 2 * MiB, 4 * MiB]);
  });

  it('serves a 1-10 MiB request from a 20 MiB segment and splits it (remainder > 1 MiB)', () => {
    const request = MiB + 1; // rounds to 1 MiB + 512: large pool
    const s = replay([malloc(1, request), malloc(2, 10 * MiB)]);
    assert.equal(s[0].block, MiB + 512);
    assert.equal(s[0].reservedBytes, 20 * MiB);
    // The 10 MiB request fits the 20 MiB - (1 MiB + 512) remainder: no new segment, split again.
    assert.equal(s[1].reservedBytes, 20 * MiB);
    assert.equal(s[1].allocatedBytes, MiB + 512 + 10 * MiB);
  });

  it('rounds requests of 10 MiB and more up to 2 MiB segments', () => {
    const s = replay([malloc(1, 10 * MiB + 1), malloc(2, 12 * MiB)]);
    // 10 MiB + 1 -> 10 MiB + 512 -> a 12 MiB segment; the 2 MiB - 512 remainder (> 1 MiB) is split off.
    assert.equal(s[0].reservedBytes, 12 * MiB);
    assert.equal(s[0].block, 10 * MiB + 512);
    // 12 MiB does not fit that remainder: a second 12 MiB segment, used whole.
    assert.equal(s[1].block, 12 * MiB);
    assert.equal(s[1].reservedBytes, 24 * MiB);
  });

  it('does not split a large block when the remainder is at most 1 MiB: the whole block is allocated', () => {
    // A freed 20 MiB segment serves a 19.5 MiB request: 0.5 MiB remainder stays in the block.
    const s = replay([malloc(1, 5 * MiB), free(1), malloc(2, 19.5 * MiB)]);
    assert.equal(s[2].block, 20 * MiB);
    assert.equal(s[2].allocatedBytes, 20 * MiB);
    assert.equal(s[2].reservedBytes, 20 * MiB);
  });

  it('merges freed neighbours, so a later request of the merged size reuses the segment', () => {
    const s = replay([malloc(1, 4 * MiB), malloc(2, 4 * MiB), malloc(3, 4 * MiB), free(1), free(2), malloc(4, 8 * MiB)]);
    assert.equal(s[2].reservedBytes, 20 * MiB);
    assert.equal(s[5].reservedBytes, 20 * MiB); // 4 + 4 merged: no new segment
    assert.equal(s[5].allocatedBytes, 12 * MiB);
    assert.equal(s[5].maxAllocatedBytes, 12 * MiB);
  });

  it('takes the best fit: the smallest free block that is large enough', () => {
    // Two segments of 12 MiB and 16 MiB, both freed; an 11 MiB request must take the 12 MiB one (kept whole:
    // remainder 1 MiB is not > 1 MiB), leaving 16 MiB for a 16 MiB request without a new segment.
    const s = replay([malloc(1, 12 * MiB), malloc(2, 16 * MiB), free(1), free(2), malloc(3, 11 * MiB), malloc(4, 16 * MiB)]);
    assert.equal(s[4].block, 12 * MiB);
    assert.equal(s[5].reservedBytes, 28 * MiB);
    assert.equal(s[5].segments, 2);
  });

  it('keeps segments reserved after frees until empty_cache releases the entirely free ones', () => {
    const s = replay([malloc(1, 30 * MiB), malloc(2, KiB), free(1), free(2), { op: 'empty_cache' }]);
    assert.equal(s[3].allocatedBytes, 0);
    assert.equal(s[3].reservedBytes, 32 * MiB);
    assert.equal(s[4].reservedBytes, 0);
    assert.equal(s[4].maxReservedBytes, 32 * MiB);
  });

  it('max_split_size: small requests avoid oversize blocks, large ones take them only within 20 MiB', () => {
    const options = { maxSplitSize: 4 * MiB };
    // 3 MiB < max_split: its 20 MiB segment is split; the 17 MiB remainder is oversize (>= 4 MiB), which a
    // request below max_split may not use, so the second 3 MiB request opens another segment.
    const s = replay([malloc(1, 3 * MiB), malloc(2, 3 * MiB)], options);
    assert.equal(s[0].allocatedBytes, 3 * MiB);
    assert.equal(s[1].reservedBytes, 40 * MiB);
    // A cached 40 MiB block is refused to a 12 MiB request (40 >= 12 + 20) but taken whole by a 30 MiB one.
    const t = replay([malloc(1, 40 * MiB), free(1), malloc(2, 12 * MiB), free(2), malloc(3, 30 * MiB)], options);
    assert.equal(t[2].reservedBytes, 52 * MiB);
    assert.equal(t[4].block, 40 * MiB);
    assert.equal(t[4].reservedBytes, 52 * MiB);
  });

  it('with a capacity, frees cached segments and retries before reporting an out-of-memory', () => {
    const s = replay([malloc(1, 30 * MiB), free(1), malloc(2, 40 * MiB), malloc(3, 30 * MiB)], { capacity: 64 * MiB });
    assert.equal(s[2].oom, undefined);
    assert.equal(s[2].reservedBytes, 40 * MiB); // the free 30 MiB segment was released for the 40 MiB one
    assert.match(s[3].oom ?? '', /out of memory/);
  });
});
