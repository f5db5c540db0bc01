// The CUDA backend's trace attribution (python/memhint_harness/cuda_trace.py) on synthetic allocator traces
// in torch's exact snapshot format: no GPU needed. The format itself is checked by feeding the same snapshot
// to torch 2.x's own reader (torch.cuda._memory_viz.trace); test/gpu/check_trace.py runs it on a real trace.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { TORCH1_PYTHON, torch2Python } from './torch2';

const ROOT = path.resolve(__dirname, '../../..');
const USER = '/work/user/train.py';
const LIB = '/usr/lib/python3/dist-packages/torch/nn/modules/linear.py';

const frame = (filename: string, line: number, name = 'f') => ({ filename, line, name });
const event = (action: string, addr: number, size: number, frames: object[]) => ({ action, addr, size, stream: 0, frames });

// forward: line 10 (inside a library call from line 20) allocates 512 B, line 11 allocates 1024 B; backward
// (entries 4..6, called from line 12) allocates 2048 B with no Python frames and frees line 10's block and a
// 64 B block allocated before the trace began;
// line 13 frees the 1024 B block. Also a segment_alloc and a free_requested, which only completed frees count.
const entries = [
  event('segment_alloc', 0x1000, 2097152, []),
  event('alloc', 0x1000, 512, [frame(LIB, 114, 'forward'), frame(USER, 10, 'block'), frame(USER, 20, 'step')]),
  event('alloc', 0x1200, 1024, [frame(USER, 11, 'step')]),
  event('free_requested', 0x1000, 512, []),
  event('alloc', 0x1600, 2048, []),
  event('free_completed', 0x1000, 512, []),
  event('free_completed', 0x9999, 64, []),
  event('free_completed', 0x1200, 1024, [frame(USER, 13, 'step')]),
];
const snapshot = {
  segments: [
    {
      device: 0, address: 0x1000, total_size: 2097152, stream: 0, segment_type: 'large', allocated_size: 2048,
      active_size: 2048, requested_size: 2048, blocks: [],
    },
  ],
  device_traces: [entries],
};

interface Figures {
  allocated: number;
  freed: number;
  allocations: number;
  inclusive_allocated: number;
  inclusive_allocations: number;
  backward_allocated: number;
  backward_freed: number;
  backward_allocations: number;
}
interface Attribution {
  lines: Record<string, Figures | undefined>;
  peak: number;
  peakSite: [string, number] | null;
  peakIndex: number;
  unmatched: number;
  unattributed: number;
}

function runPython(python: string, code: string): string {
  return execFileSync(python, ['-c', code], {
    env: { ...process.env, PYTHONPATH: path.join(ROOT, 'python') },
    input: JSON.stringify(snapshot),
    encoding: 'utf8',
  });
}

describe('CUDA trace attribution (cuda_trace.py)', function () {
  this.timeout(120_000);

  it('charges allocations to the innermost user line, inclusive once per distinct user line, backward to backward()', () => {
    const out = runPython(
      TORCH1_PYTHON,
      `import json, sys
from memhint_harness.cuda_trace import attribute, device_trace
snap = json.load(sys.stdin)
fig = attribute(device_trace(snap), lambda f: f.startswith("/work/user/"), [(4, 6, ("${USER}", 12))])
print(json.dumps({"lines": {"%s:%d" % k: v.as_dict() for k, v in fig.lines.items()}, "peak": fig.peak,
                  "peakSite": fig.peak_site, "peakIndex": fig.peak_index, "unmatched": fig.unmatched_frees,
                  "unattributed": fig.unattributed_allocated}))`,
    );
    const result = JSON.parse(out) as Attribution;
    const line = (n: number): Figures => {
      const found = result.lines[`${USER}:${n}`];
      assert.ok(found, `line ${n} charged`);
      return found;
    };
    assert.deepEqual(
      [line(10).allocated, line(10).allocations, line(10).inclusive_allocated, line(10).freed],
      [512, 1, 512, 0],
    );
    assert.deepEqual([line(20).allocated, line(20).inclusive_allocated, line(20).inclusive_allocations], [0, 512, 1]);
    assert.deepEqual([line(11).allocated, line(11).freed], [1024, 0]);
    assert.deepEqual([line(12).backward_allocated, line(12).backward_allocations, line(12).backward_freed], [2048, 1, 512 + 64]);
    assert.equal(line(13).freed, 1024);
    assert.equal(result.lines[`${LIB}:114`], undefined, 'library frames are never charged');
    // live: 512, 1536, 3584 (the backward alloc) then down; the free_requested does not lower it.
    assert.deepEqual([result.peak, result.peakSite, result.peakIndex], [3584, [USER, 12], 4]);
    assert.equal(result.unmatched, 1);
    assert.equal(result.unattributed, 0);
  });

  it('the synthetic snapshot is in the format torch 2.x reads (torch.cuda._memory_viz.trace)', () => {
    const out = runPython(
      torch2Python(),
      `import json, sys
from torch.cuda import _memory_viz
print(_memory_viz.trace(json.load(sys.stdin)))`,
    );
    assert.match(out, /8 entries/);
    assert.match(out, /a = cudaMalloc\(4096, 2.0MiB\)\nb = a\[0:512.0B\]/);
    assert.match(out, /# free completed for b 512.0B\n# free completed for 39321 64.0B\n# free completed for c 1.0KiB/);
  });
});
