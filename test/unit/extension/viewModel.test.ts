import * as assert from 'node:assert/strict';
import { isFromWebview } from '../../../src/extension/webview/messages';
import { buildViewModel, displayPath, downsample, titleOf } from '../../../src/extension/webview/viewModel';
import { counters, FILE, kinds, line, report } from './reportFixture';

describe('extension/webview view model', () => {
  it('downsampling keeps every bucket extreme, so a one-sample spike survives', () => {
    const points: [number, number][] = [];
    for (let i = 0; i < 10_000; i++) points.push([i, i === 6543 ? 1e9 : i % 7]);
    const out = downsample(points, 300);
    assert.ok(out.length <= 310, `${out.length} points`);
    assert.ok(out.some(([t, v]) => t === 6543 && v === 1e9));
    assert.deepEqual(out[0], [0, 0]);
    assert.equal(out[out.length - 1][0], 9999);
    for (let i = 1; i < out.length; i++) assert.ok(out[i][0] > out[i - 1][0], 'times increase');
    assert.deepEqual(downsample([[1, 2]], 10), [[1, 2]]);
  });

  it('shows paths relative to a workspace folder', () => {
    assert.equal(displayPath('/work/project/src/train.py', ['/work/project']), 'src/train.py');
    assert.equal(displayPath('/elsewhere/train.py', ['/work/project']), '/elsewhere/train.py');
    assert.equal(displayPath('<untracked>', ['/work/project']), '<untracked>');
  });

  it('titles a loop by the script and the loop, naming the loop\'s module when the script runs another file\'s loop', () => {
    const base = { kind: 'loop' as const, script: '/w/projects/chargpt.py', function: null, setup: null, loopLine: 72 };
    assert.equal(titleOf({ ...report().target, ...base, loopFile: '/w/mingpt/trainer.py' }), 'chargpt.py — loop at trainer.py:72');
    assert.equal(titleOf({ ...report().target, ...base, loopFile: null }), 'chargpt.py — loop on line 72');
    assert.equal(titleOf({ ...report().target, ...base, loopFile: '/w/projects/chargpt.py' }), 'chargpt.py — loop on line 72');
    assert.equal(titleOf({ ...report().target, kind: 'script', script: '/w/train.py', function: null, loopLine: null }), 'train.py');
    assert.equal(titleOf({ ...report().target, script: '/w/train.py', function: 'train_step' }), 'train.py::train_step');
  });

  it('gives per-step figures per line, with leaks and live-at-peak joined in', () => {
    const r = report({
      lines: [line(7, '  out = model(x)  ', { calls: 3, inclusive: counters(3000, 1500, 900, 6), self: counters(300, 0, 100), savedForBackward: 600, backward: counters(1200, 1200, 500) })],
      leaks: [{ file: FILE, line: 7, code: 'out = model(x)', bytesPerStep: 64, bytesByStep: [64, 64], graphNodesPerStep: 2, reason: 'autograd_graph', heldBy: '`outs` (list) in main()' }],
      peak: { bytes: 5000, step: 1, atMs: 260, location: { file: FILE, line: 7 }, phase: 'backward', byKind: kinds({ activation: 3000, parameter: 2000 }), byLine: [{ file: FILE, line: 7, bytes: 700, byKind: kinds({ activation: 700 }) }] },
    });
    const m = buildViewModel(r, { roots: ['/work/project'] });
    assert.equal(m.title, 'train.py::train_step');
    assert.deepEqual(m.lines[0], {
      file: FILE,
      displayFile: 'train.py',
      line: 7,
      code: 'out = model(x)',
      function: 'train_step',
      calls: 1,
      allocated: 1000,
      freed: 500,
      net: 500,
      peak: 900,
      selfNet: 100,
      savedForBackward: 200,
      backward: 400,
      leakPerStep: 64,
      liveAtPeak: 700,
    });
    assert.deepEqual(m.peakByKind, [
      { kind: 'activation', bytes: 3000 },
      { kind: 'parameter', bytes: 2000 },
    ]);
    assert.equal(m.headline.peakBytes, 5000);
    assert.equal(m.headline.medianStepMs, 80);
    assert.equal(m.headline.leakBytesPerStep, 64);
    assert.equal(m.leaks[0].heldBy, '`outs` (list) in main()');
    assert.equal(m.cuda, null);
    assert.equal(m.hasSnapshot, false);
  });

  it('puts the sampler series on the harness clock and bounds the chart', () => {
    const origin = 1_700_000_000_000;
    const r = report({
      timeline: {
        originEpochMs: origin,
        allocator: [
          { t: 0, live: 10 },
          { t: 50, live: 400 },
          { t: 90, live: 20 },
        ],
        steps: [{ step: 0, warmup: false, startMs: 10, endMs: 80 }],
        os: { source: 'native', pid: 1, t: [origin - 300, origin + 5, origin + 120], rssBytes: [5, 1000, 2000] },
      },
    });
    const tl = buildViewModel(r, { roots: [] }).timeline;
    assert.deepEqual(tl.os?.rss, [
      [5, 1000],
      [120, 2000],
    ]);
    assert.equal(tl.endMs, 120);
    assert.equal(tl.maxBytes, 2000);
    // Already relative times (what the launcher writes) stay as they are.
    const rel = buildViewModel(report({ timeline: { ...r.timeline, os: { source: 'js', pid: 1, t: [3, 4], rssBytes: [1, 2] } } }), { roots: [] }).timeline;
    assert.deepEqual(rel.os?.rss.map((p) => p[0]), [3, 4]);
  });

  it('carries CUDA allocator figures and the snapshot flag', () => {
    const r = report({
      cuda: { memoryStats: { 'num_ooms': 0, 'allocated_bytes.all.peak': 4096 }, memorySummary: '|  PyTorch CUDA memory summary |', allocatedBytes: 1, reservedBytes: 2, maxAllocatedBytes: 3, maxReservedBytes: 4, fragmentationBytes: 1, snapshotPath: '/tmp/s.pickle' },
    });
    const m = buildViewModel(r, { roots: [] });
    assert.deepEqual(m.cuda?.stats, [
      ['allocated_bytes.all.peak', 4096],
      ['num_ooms', 0],
    ]);
    assert.equal(m.hasSnapshot, true);
  });

  it('validates messages from the webview', () => {
    assert.ok(isFromWebview({ type: 'ready' }));
    assert.ok(isFromWebview({ type: 'reveal', file: FILE, line: 3 }));
    assert.ok(!isFromWebview({ type: 'reveal', file: FILE, line: 0 }));
    assert.ok(!isFromWebview({ type: 'reveal', file: 3, line: 3 }));
    assert.ok(isFromWebview({ type: 'export', what: 'json' }));
    assert.ok(!isFromWebview({ type: 'export', what: 'exe' }));
    assert.ok(!isFromWebview({ type: 'run', command: 'rm' }));
    assert.ok(!isFromWebview(null));
  });
});
