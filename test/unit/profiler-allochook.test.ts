// The allocation hook (python/memhint_harness/allochook.py, _callochook.cpp; issue #17): torch's own
// memory-reporting hook in C++, built against the running torch's headers. Runs under both torch passes:
// Debian's 1.13 ships no headers, so there the hook must be refused with the reason and nothing else
// changes; a torch 2.x wheel ships them, so there it must build offline and record exact events.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findHarnessRoot } from '../../src/profiler/launcher';

const PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function py(code: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) =>
    execFile(
      PYTHON,
      ['-c', code],
      { env: { ...process.env, PYTHONPATH: findHarnessRoot(), ...env }, timeout: 300_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    ),
  );
}

const HAS_HEADERS = [
  'import os, torch',
  'print(os.path.isfile(os.path.join(os.path.dirname(torch.__file__), "include", "c10", "core", "Allocator.h")))',
].join('\n');

describe('allocation hook (torch headers, C++; MEMHINT_ALLOCHOOK)', function () {
  this.timeout(300_000);
  let headers = false;

  before(async () => {
    const run = await py(HAS_HEADERS);
    assert.equal(run.code, 0, run.stderr);
    headers = run.stdout.trim() === 'True';
  });

  it('records each allocation and free with the backward node that made it, or says why it cannot', async () => {
    const code = [
      'import json, torch',
      'from memhint_harness import allochook',
      'torch.set_num_threads(1)',
      'hook, why = allochook.load()',
      'if hook is None:',
      '    print(json.dumps({"why": why})); raise SystemExit(0)',
      'w = torch.nn.Linear(256, 128)',
      'x = torch.randn(64, 256)',
      'assert hook.start()',
      'hook.take()',
      'y = w(x)',  // addmm: one 64 x 128 float32 output, one autograd node
      'peek, forward = hook.take()',
      'loss = y.sum()',
      'start, _ = hook.take()',
      'loss.backward()',
      'end, backward = hook.take()',
      'ptr = forward[0][0]',
      'del y, loss',
      '_, freed = hook.take()',
      'hook.stop()',
      'z = torch.empty(1000)',  // after stop(): not recorded
      '_, after = hook.take()',
      'with torch.profiler.profile(profile_memory=True):',  // the slot is free again for torch.profiler
      '    pass',
      // `t * 2` on a float32 tensor: Python's argument parser wraps 2 in a 0-dim tensor (8 bytes, before the
      // op, freed after it) and mul converts it to float32 inside the op (4 bytes, freed inside): neither is
      // an op output. ops=True keeps the dispatch path's view, the output alone.
      't = torch.ones(10)',
      'views = {}',
      'for ops in (False, True):',
      '    hook.start(ops); hook.take()',
      '    u = t * 2',
      '    del u',
      '    hook.stop()',
      '    views[str(ops)] = sorted(b for _, b, _, _ in hook.take()[1] if b > 0)',
      'print(json.dumps({"forward": forward, "peek": peek, "start": start, "backward": backward, "ptr": ptr,',
      '                  "freed": freed, "after": after, "views": views}))',
    ].join('\n');
    const run = await py(code, { MEMHINT_ALLOCHOOK: '' });
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as {
      why?: string;
      forward: [number, number, number, number][];
      backward: [number, number, number, number][];
      freed: [number, number, number, number][];
      after: unknown[];
      peek: number;
      start: number;
      ptr: number;
      views: Record<string, number[]>;
    };
    if (!headers) {
      assert.match(result.why ?? '', /no C\+\+ headers/);
      return;
    }
    assert.equal(result.why, undefined);
    // Forward: the output alone, outside any backward node, on the CPU (device type 0).
    assert.deepEqual(result.forward.map(([, bytes, node, device]) => [bytes, node, device]), [[64 * 128 * 4, -1, 0]]);
    // Backward: the weight's and bias's gradients come from the nodes made by the forward's two lines
    // (sum's node, then addmm's), whose sequence numbers lie below the peek taken after the forward line.
    const nodes = result.backward.filter(([, bytes, node]) => bytes > 0 && node >= 0).map(([, , node]) => node);
    assert.ok(nodes.length > 0, JSON.stringify(result.backward));
    assert.ok(nodes.every((n) => n < result.start), JSON.stringify({ nodes, start: result.start }));
    const grads = result.backward.filter(([, bytes]) => bytes === 128 * 256 * 4 || bytes === 128 * 4);
    assert.equal(grads.length, 2, JSON.stringify(result.backward));
    // The output's free: the same address, the same size, negative.
    assert.ok(result.freed.some(([ptr, bytes]) => ptr === result.ptr && bytes === -64 * 128 * 4), JSON.stringify(result.freed));
    assert.deepEqual(result.after, []);
    assert.deepEqual(result.views.True, [40]);
    assert.ok(result.views.False.includes(40) && result.views.False.length > 1, JSON.stringify(result.views));
  });

  it('with ops=True keeps the op outputs of backward nodes: the engine range around a node is no op', async () => {
    // The autograd engine wraps each node's evaluation in a FUNCTION-scope RecordFunction
    // ("autograd::engine::evaluate_function: ..."). Taken for an op, it hid the formula's ops and dropped
    // what was allocated and freed inside it: SinBackward's results (cos(y) and its product with the
    // gradient, freed when the engine sums it into y's gradient) were not reported at all, and of
    // CosBackward's three (sin, neg, mul) only the last. A dispatch mode sees every one of them.
    const code = [
      'import json, torch',
      'from memhint_harness import allochook',
      'torch.set_num_threads(1)',
      'hook, why = allochook.load()',
      'if hook is None:',
      '    print(json.dumps({"why": why})); raise SystemExit(0)',
      'x = torch.randn(256, 256, requires_grad=True)',
      'views = {}',
      'for ops in (False, True):',
      '    assert hook.start(ops)',
      '    y = x * 2',
      '    sin_node, _ = hook.take()',  // the next sequence number: y.sin()'s node, then y.cos()'s
      '    z = (y.sin() + y.cos()).sum()',
      '    hook.take()',
      '    z.backward()',
      '    hook.node_reset()',
      '    _, events = hook.take()',
      '    hook.stop()',
      '    x.grad = None',
      '    views[str(ops)] = {name: sorted(b for _, b, n, _ in events if b > 0 and n == node)',
      '                       for name, node in (("sin", sin_node), ("cos", sin_node + 1))}',
      'print(json.dumps({"views": views}))',
    ].join('\n');
    const run = await py(code, { MEMHINT_ALLOCHOOK: '' });
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as {
      why?: string;
      views: Record<string, Record<string, number[]>>;
    };
    if (!headers) {
      assert.match(result.why ?? '', /no C\+\+ headers/);
      return;
    }
    const block = 256 * 256 * 4;
    const expected = { sin: [block, block], cos: [block, block, block] };
    // Every one is an op output, so both views agree.
    assert.deepEqual(result.views.False, expected, JSON.stringify(result.views));
    assert.deepEqual(result.views.True, expected, JSON.stringify(result.views));
  });

  it('records a custom autograd.Function forward and backward with ops=True (the slot holds a profiler state)', async () => {
    // torch reads whatever is in the PROFILER_STATE slot as a profiler's state: an autograd.Function's apply
    // asks for the profiler's config (THPFunction_apply -> getProfilerConfig). With a bare memory reporter
    // there, it read past the object and threw std::bad_array_new_length (std::bad_alloc on 2.13); the
    // reporter is now a profiler state whose config says disabled.
    const code = [
      'import json, torch',
      'from memhint_harness import allochook',
      'torch.set_num_threads(1)',
      'hook, why = allochook.load()',
      'if hook is None:',
      '    print(json.dumps({"why": why})); raise SystemExit(0)',
      'class Square(torch.autograd.Function):',
      '    @staticmethod',
      '    def forward(ctx, x):',
      '        ctx.save_for_backward(x)',
      '        return x * x',
      '    @staticmethod',
      '    def backward(ctx, grad):',
      '        (x,) = ctx.saved_tensors',
      '        return 2 * x * grad',
      'x = torch.randn(64, 64, requires_grad=True)',
      'views = {}',
      'for ops in (False, True):',
      '    assert hook.start(ops)',
      '    node, _ = hook.take()', // the Function's node takes the next sequence number
      '    y = Square.apply(x)',
      '    _, forward = hook.take()',
      '    loss = y.sum()',
      '    hook.take()',
      '    loss.backward()',
      '    hook.node_reset()',
      '    _, backward = hook.take()',
      '    enabled = torch.autograd._profiler_enabled()',
      '    hook.stop()',
      '    x.grad = None',
      '    del y, loss',
      '    views[str(ops)] = {"forward": sorted(b for _, b, _, _ in forward if b > 0),',
      '                       "backward": sorted(b for _, b, n, _ in backward if b > 0 and n == node),',
      '                       "enabled": enabled}',
      'print(json.dumps({"views": views}))',
    ].join('\n');
    const run = await py(code, { MEMHINT_ALLOCHOOK: '' });
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as {
      why?: string;
      views: Record<string, { forward: number[]; backward: number[]; enabled: boolean }>;
    };
    if (!headers) {
      assert.match(result.why ?? '', /no C\+\+ headers/);
      return;
    }
    const block = 64 * 64 * 4;
    // Forward: x * x. Backward (the Function's node): 2 * x, then its product with the gradient; ops=False
    // also sees the 2 Python wraps in a 0-dim tensor and its float32 copy, which no op returns.
    assert.deepEqual(result.views.True, { forward: [block], backward: [block, block], enabled: false });
    assert.deepEqual(result.views.False, { forward: [block], backward: [4, 8, block, block], enabled: false });
  });

  it("with take(True) gives each event its op and marks the engine's gradient sums", async () => {
    // y's two gradients (from sin's and cos's nodes) are summed by the engine in y's input buffer. The
    // dispatch path polls for frees there, so event_lines.py needs the moment: a (0, 0, node, -1, 0, 1) marker
    // carrying the node whose gradient was summed. take() without the flag keeps the 4-tuples, no markers.
    const code = [
      'import json, torch',
      'from memhint_harness import allochook',
      'torch.set_num_threads(1)',
      'hook, why = allochook.load()',
      'if hook is None:',
      '    print(json.dumps({"why": why})); raise SystemExit(0)',
      'x = torch.randn(256, 256, requires_grad=True)',
      'out = {}',
      'for flag in (True, False):',
      '    assert hook.start(True)',
      '    y = x * 2',
      '    first, _ = hook.take()',
      '    z = (y.sin() + y.cos()).sum()',
      '    hook.take()',
      '    z.backward()',
      '    hook.node_reset()',
      '    _, events = hook.take(flag) if flag else hook.take()',
      '    hook.stop()',
      '    x.grad = None',
      '    out[str(flag)] = {"sizes": sorted({len(e) for e in events}),',
      '                      "markers": [list(e) for e in events if e[1] == 0],',
      '                      "ops": sum(1 for e in events if len(e) > 4 and e[1] > 0 and e[4] > 0),',
      '                      "nodes": [first, first + 1]}',
      'print(json.dumps(out))',
    ].join('\n');
    const run = await py(code, { MEMHINT_ALLOCHOOK: '' });
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as Record<
      string,
      { sizes: number[]; markers: number[][]; ops: number; nodes: number[] }
    > & { why?: string };
    if (!headers) {
      assert.match(result.why ?? '', /no C\+\+ headers/);
      return;
    }
    const withOps = result.True;
    assert.deepEqual(withOps.sizes, [6]);
    assert.ok(withOps.ops > 0, JSON.stringify(withOps));
    // At least y's sum, charged to sin's or cos's node; every marker is (0, 0, node, -1, 0, 1).
    assert.ok(withOps.markers.length >= 1, JSON.stringify(withOps));
    assert.ok(withOps.markers.every(([ptr, bytes, , device, op]) => ptr === 0 && bytes === 0 && device === -1 && op === 0));
    assert.ok(withOps.markers.some(([, , node]) => withOps.nodes.includes(node)), JSON.stringify(withOps));
    assert.deepEqual(result.False.sizes, [4]);
    assert.deepEqual(result.False.markers, []);
  });

  it('refuses to start while torch.profiler holds the memory-reporting slot', async function () {
    if (!headers) this.skip(); // no hook to start on a torch without headers: the test above checks the refusal
    const code = [
      'import torch',
      'from memhint_harness import allochook',
      'hook, why = allochook.load()',
      'assert hook is not None, why',
      'with torch.profiler.profile(profile_memory=True):',
      '    print(hook.start())',
      'print(hook.start()); hook.stop()',
    ].join('\n');
    const run = await py(code);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.stdout.trim().split('\n').slice(-2), ['False', 'True']);
  });

  it('falls back with the reason when there is no compiler, and fails only when MEMHINT_ALLOCHOOK=1', async () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-allochook-'));
    try {
      const code = 'from memhint_harness import allochook\nprint(allochook.load()[1])';
      const env = { MEMHINT_CTRACE_CACHE: cache, CXX: '/nonexistent/c++', MEMHINT_ALLOCHOOK: '' };
      const soft = await py(code, env);
      assert.equal(soft.code, 0, soft.stderr);
      // Without headers the build stops before the compiler; with them, at the missing compiler.
      assert.match(soft.stdout, headers ? /\/nonexistent\/c\+\+/ : /no C\+\+ headers/);
      const hard = await py(code, { ...env, MEMHINT_ALLOCHOOK: '1' });
      assert.notEqual(hard.code, 0);
      assert.match(hard.stderr, /MEMHINT_ALLOCHOOK=1 but the allocation hook is unavailable/);
      const off = await py(code, { ...env, MEMHINT_ALLOCHOOK: '0' });
      assert.equal(off.stdout.trim(), 'MEMHINT_ALLOCHOOK=0');
      // Nothing half-built is left in the cache (the next run tries again).
      const built = path.join(cache, 'allochook');
      const left = fs.existsSync(built) ? fs.readdirSync(built).flatMap((d) => fs.readdirSync(path.join(built, d))) : [];
      assert.deepEqual(left, []);
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});
