// Per-line figures from allocator events (python/memhint_harness/event_lines.py; issue #17, the first piece
// of the event-fed tracker). Pure Python, no torch: synthetic (ptr, bytes, node, device) streams checked
// against the dispatch path's charging rules (tracker.py), which scripts/alloc_path_compare.py compares on
// the zoo models.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { findHarnessRoot } from '../../src/profiler/launcher';

const PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

type Figures = Record<string, [number, number, number, number]>; // line -> [allocated, freed, peak, allocations]

interface Result {
  self: Figures;
  backward: Figures;
  inclusive: Figures;
  step: [number, number, number]; // allocated, freed, peak
}

function run(body: string[]): Promise<Result> {
  const code = [
    'import json',
    'from memhint_harness.event_lines import EventLines',
    'F = "user.py"',
    // Backward nodes 0-9 were made by line 10, 10-19 by line 11.
    'lines = EventLines(lambda node: (F, 10) if node < 10 else (F, 11) if node < 20 else None)',
    ...body,
    'print(json.dumps({"self": {str(k[1]): v for k, v in lines.self_c.items()},',
    '                  "backward": {str(k[1]): v for k, v in lines.bw_c.items()},',
    '                  "inclusive": {str(k[1]): v for k, v in lines.incl_c.items()},',
    '                  "step": [lines.step_allocated, lines.step_freed, lines.peak]}))',
  ].join('\n');
  return new Promise((resolve, reject) =>
    execFile(PYTHON, ['-c', code], { env: { ...process.env, PYTHONPATH: findHarnessRoot() } }, (error, stdout, stderr) =>
      error
        ? reject(new Error(stderr || error.message))
        : resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Result),
    ),
  );
}

describe('event lines (per-line figures from allocator events)', function () {
  this.timeout(60_000);

  it('charges allocations and frees to the running line, and its peak above the level it began at', async () => {
    const result = await run([
      'lines.feed([(1, 100, -1, 0)])', // before any user line: live, charged to no line
      'lines.call(None); lines.move((F, 1))',
      'lines.feed([(2, 1000, -1, 0), (3, 500, -1, 0), (2, -1000, -1, 0), (4, 200, -1, 0)])',
      'lines.move((F, 2))',
      'lines.feed([(3, -500, -1, 0), (1, -100, -1, 0), (9, -64, -1, 0)])', // 9: allocated before the stream
      'lines.move((F, 1))', // line 1 again: its peak is the higher of its two runs
      'lines.feed([(5, 300, -1, 0)])',
      'lines.ret()',
    ]);
    // Line 1, first run: began at 100, reached 1,600 (after 1,000 and 500): peak 1,500.
    assert.deepEqual(result.self['1'], [1000 + 500 + 200 + 300, 1000, 1500, 4]);
    // Line 2 frees 500 and the 100 allocated before any line; the unknown block's 64 B are not counted.
    assert.deepEqual(result.self['2'], [0, 600, 0, 0]);
  });

  it('charges a backward node to the forward line that made it, and backward frees to the next allocation', async () => {
    const result = await run([
      'lines.call(None); lines.move((F, 10))',
      'lines.feed([(1, 4000, -1, 0)])',
      'lines.move((F, 11))',
      'lines.feed([(2, 2000, -1, 0)])',
      'lines.move((F, 12))', // loss.backward()
      'lines.backward_begin()',
      'lines.feed([(3, 4, -1, 0)])', // the initial gradient: no node, the backward() line itself
      // Node 15 (line 11) makes a gradient; the engine frees line 11's activation after the node's call;
      // the poll that finds it dead runs in node 5's op (line 10), so the free is charged there.
      'lines.feed([(4, 800, 15, 0), (2, -2000, 15, 0), (5, 300, 5, 0), (4, -800, 5, 0)])',
      'lines.backward_end()', // the free after node 5's last allocation: the backward() line's
      'lines.move((F, 13))',
    ]);
    assert.deepEqual(result.backward['11'], [800, 0, 804, 1]); // peak: 4 + 800 above backward()'s start
    // Node 5's allocation comes after 2,000 B were freed: the live level is below backward()'s start.
    assert.deepEqual(result.backward['10'], [300, 2000, 0, 1]);
    assert.deepEqual(result.self['12'], [4, 800, 0, 1]); // backward allocations do not raise a line's self peak
  });

  it("charges backward frees at the engine's gradient sum to the summed node, and inside an op to its allocation", async () => {
    const result = await run([
      'lines.call(None); lines.move((F, 12))',
      'lines.feed([(1, 1000, -1, 0), (2, 600, -1, 0)])',
      'lines.backward_begin()',
      // A free between nodes, then the engine sums node 15's gradient (a marker, no memory): the dispatch
      // path polls there and charges the free to node 15's line (11), not to the next allocation's (10).
      'lines.feed([(1, -1000, 15, 0, 0), (0, 0, 15, -1, 0), (3, 40, 5, 0, 7)])',
      // Inside op 7, after its allocation: polled when op 7 returns, so node 5's (line 10).
      'lines.feed([(2, -600, 5, 0, 7), (4, 8, 15, 0, 8)])',
      'lines.backward_end()',
    ]);
    assert.deepEqual(result.backward['11'], [8, 1000, 0, 1]);
    assert.deepEqual(result.backward['10'], [40, 600, 0, 1]);
  });

  it("charges the frees before a returned frame's first allocation to it (its locals dying), then pops it", async () => {
    const result = await run([
      'lines.call(None); lines.move((F, 20))',
      'lines.call(None); lines.move((F, 30))', // the callee
      'lines.feed([(1, 1000, -1, 0), (2, 10, -1, 0)])',
      // The callee returned: 1,000 B of its locals die, then the caller allocates and frees.
      'lines.feed([(1, -1000, -1, 0), (3, 50, -1, 0), (2, -10, -1, 0)], returned=True)',
      'lines.move((F, 21))',
    ]);
    assert.deepEqual(result.self['30'], [1010, 1000, 1010, 2]);
    // The caller's peak counts the callee's 10 B still live at its allocation (the level, not its own bytes).
    assert.deepEqual(result.self['20'], [50, 10, 60, 1]);
  });

  it('charges inclusive figures to every distinct line of the stack, and keeps the step totals and peak', async () => {
    const result = await run([
      'lines.counting = False',
      'lines.call(None); lines.move((F, 40))', // the step's line, set up before counting starts
      'lines.feed([(1, 100, -1, 0)])',
      'lines.counting = True; lines.peak = lines.live',
      'lines.call(None); lines.move((F, 50))', // a callee
      'lines.call(None); lines.move((F, 50))', // the same line, recursively: charged once
      'lines.feed([(2, 1000, -1, 0), (2, -1000, -1, 0), (3, 30, -1, 0)])',
      'lines.ret()',
      'lines.feed([(1, -100, -1, 0)])',
      'lines.ret()',
      'lines.move((F, 41))', // loss.backward() in the step's frame
      'lines.backward_begin()',
      'lines.feed([(4, 8, 5, 0), (5, 16, 15, 0)])', // nodes of lines 10 and 11
      'lines.backward_end()',
      'lines.move((F, 42))',
    ]);
    // Line 50 ran inside line 40: its self figures are its own, inclusive once for the recursive pair.
    assert.deepEqual(result.self['50'], [1030, 1100, 1000, 2]);
    assert.deepEqual(result.inclusive['50'], [1030, 1100, 1000, 2]);
    // Line 40 includes its callee's bytes; its peak is the level they reached above the level it began at
    // (0, before counting started), as on the dispatch path; it allocated nothing itself while counted.
    assert.deepEqual(result.inclusive['40'], [1030, 1100, 1100, 2]);
    assert.deepEqual(result.self['40'], [0, 0, 0, 0]);
    // Backward allocations: the nodes' lines (backward) and the backward() line's inclusive figures.
    assert.deepEqual(result.inclusive['41'], [24, 0, 24, 2]);
    assert.deepEqual(result.backward['10'], [8, 0, 8, 1]);
    assert.deepEqual(result.step, [1054, 1100, 1100]);
  });

  // Session 20: the blocks live at the step's peak (the peak's composition by kind and line), replayed from
  // the step's batches at its end rather than copied at each new peak; each record names its line and epoch.
  it('replays the records live at the step peak, with their lines, epochs and the peak phase', async () => {
    const code = [
      'import json',
      'from memhint_harness.event_lines import EventLines, R_BYTES, R_SITE, R_EPOCH',
      'F = "user.py"',
      'lines = EventLines(lambda node: (F, 10) if node < 10 else None)',
      'lines.counting = False',
      'lines.call(None); lines.move((F, 1))',
      'lines.feed([(1, 100, -1, 0, 0, 1)])', // a parameter, made before the step (epoch -1)
      'lines.epoch = 3; lines.counting = True',
      'start = lines.start_step("forward")',
      'lines.move((F, 2))',
      // 2 freed before the peak, 3 made in the same batch as the peak, 4 (grad mode off) is the peak
      'lines.feed([(2, 1000, -1, 0, 0, 1), (2, -1000, -1, 0, 0, 1), (3, 300, -1, 0, 0, 1)])',
      'lines.move((F, 3))',
      'lines.feed([(4, 2000, -1, 0, 0, 0), (3, -300, -1, 0, 0, 1), (5, 50, -1, 0, 0, 1)])',
      'lines.move((F, 4))',
      'lines.feed([(4, -2000, -1, 0, 0, 1), (6, 10, -1, 0, 0, 1)])',
      'live = sorted([r[R_BYTES], r[R_SITE][1], r[R_EPOCH]] for r in lines.live_at_peak(start))',
      'print(json.dumps({"live": live, "peak": lines.peak, "phase": lines.peak_phase, "key": lines.peak_key[1],',
      '                  "now": sorted(r[R_BYTES] for r in lines.records.values())}))',
    ].join('\n');
    const out = await new Promise<string>((resolve, reject) =>
      execFile(PYTHON, ['-c', code], { env: { ...process.env, PYTHONPATH: findHarnessRoot() } }, (error, stdout, stderr) =>
        error ? reject(new Error(stderr || error.message)) : resolve(stdout.trim().split('\n').pop() ?? '{}'),
      ),
    );
    const result = JSON.parse(out) as { live: number[][]; peak: number; phase: string; key: number; now: number[] };
    // At the peak (2,400 B): the parameter, line 2's 300 B and line 3's 2,000 B; not the 1,000 B freed
    // before it, nor what came after it in its own batch (50 B) or later (10 B).
    assert.deepEqual(result.live, [[100, 1, -1], [300, 2, 3], [2000, 3, 3]]);
    assert.equal(result.peak, 2400);
    assert.equal(result.key, 3);
    assert.equal(result.phase, 'other'); // the peak's allocation ran with grad mode off (an optimizer step)
    assert.deepEqual(result.now, [10, 50, 100]);
  });
});
