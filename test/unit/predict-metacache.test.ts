// The prediction's memoised meta kernels (python/memhint_harness/predict/metacache.py) change nothing the
// profiler sees: op by op, over three training steps of a GPT-style model with AdamW and an MLP with
// LayerNorm/Dropout/SGD, the outputs' dtype, shape, strides, storage offset and size and their aliasing of the
// inputs are the same with and without the cache, and most calls are answered from it. Calls a key must tell
// apart (aliased arguments, broadcast, a scalar's type, factories under another default dtype, views) give
// what the real kernels give.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { REPO, torch2Python } from './predict-torch2';

interface Case {
  ops: number;
  equal: boolean;
  hits: number;
  misses: number;
  firstDifference: unknown;
}

describe('predict: memoised meta kernels', function () {
  this.timeout(300_000);

  it('give every op the same outputs as the real meta kernels, and answer most calls', () => {
    const out = execFileSync(torch2Python(), [path.join(REPO, 'test/fixtures/predict/metacache_check.py'), path.join(REPO, 'python')], {
      encoding: 'utf-8',
      cwd: REPO,
    });
    const result = JSON.parse(out) as Record<'gpt' | 'mlp', Case> & { edges: { cached: unknown[]; plain: unknown[] } };
    for (const name of ['gpt', 'mlp'] as const) {
      const c = result[name];
      assert.ok(c.ops > 100, `${name}: ${c.ops} ops recorded`);
      assert.equal(c.equal, true, `${name}: first difference ${JSON.stringify(c.firstDifference)}`);
      // steps 2 and 3 repeat step 1's calls: at least half of the memoisable calls are answered from the cache
      assert.ok(c.hits > c.misses, `${name}: ${c.hits} hits, ${c.misses} misses`);
    }
    assert.deepEqual(result.edges.cached, result.edges.plain);
    assert.deepEqual(result.edges.plain.slice(8, 13), ['torch.int64', 'torch.float32', 'torch.int64', 'torch.float32', 'torch.float64']);
  });
});
