// "Profile this loop" CodeLens targets: the TypeScript loop finder must pick the same loops as the
// harness (python/memhint_harness/loops.py), which is what `profile train.py:LINE` and `--loop auto` run.
// Differential over every corpus and profiler fixture, plus hand-written cases.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { trainingLoops } from '../../../src/extension/profile/loopFinder';
import { loopTargets, topLevelFunctions } from '../../../src/extension/profile/stepFinder';
import { getLinter } from '../lint/harness';
import { TORCH1_PYTHON } from '../torch2';

const ROOT = path.resolve(__dirname, '../../../..');

const PY = `
import json, sys
sys.path.insert(0, sys.argv[1])
from memhint_harness.loops import LoopFinder
out = {}
for f in sys.argv[2:]:
    try:
        out[f] = [l.header for l in LoopFinder(open(f, encoding="utf-8").read(), f).training_loops()]
    except SyntaxError:
        out[f] = None
print(json.dumps(out))
`;

function pythonFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? pythonFiles(p) : e.name.endsWith('.py') ? [p] : [];
  });
}

async function loopsOf(source: string): Promise<number[]> {
  const linter = await getLinter();
  const doc = linter.open(source);
  try {
    return trainingLoops(doc.source).map((l) => l.line);
  } finally {
    doc.dispose();
  }
}

describe('extension/profile/loopFinder', function () {
  this.timeout(120_000);

  it('picks the same training loops as the harness on every corpus and profiler fixture', async () => {
    const files = [...pythonFiles(path.join(ROOT, 'test/fixtures/corpus')), ...pythonFiles(path.join(ROOT, 'test/fixtures/profiler'))];
    assert.ok(files.length > 50, `${files.length} fixtures`);
    const expected = JSON.parse(execFileSync(TORCH1_PYTHON, ['-c', PY, path.join(ROOT, 'python'), ...files], { encoding: 'utf8', maxBuffer: 1 << 24 })) as Record<string, number[] | null>;
    const mismatches: string[] = [];
    let withLoops = 0;
    for (const file of files) {
      const want = expected[file];
      if (want === null) continue; // Python cannot parse it: the harness would refuse the file anyway
      if (want.length > 0) withLoops++;
      const got = await loopsOf(fs.readFileSync(file, 'utf8'));
      if (JSON.stringify(got) !== JSON.stringify(want)) mismatches.push(`${path.relative(ROOT, file)}: harness ${JSON.stringify(want)}, editor ${JSON.stringify(got)}`);
    }
    assert.deepEqual(mismatches, []);
    assert.ok(withLoops > 20, `${withLoops} fixtures have a training loop`);
  });

  it('skips the epoch loop and the accumulation loop, follows calls into the file\'s functions', async () => {
    const source = [
      'def update(loss, opt):',
      '    loss.backward()',
      '    opt.step()',
      '',
      'def train(model, loader, opt):',
      '    for epoch in range(3):',
      '        for x, y in loader:',
      '            update(model(x).sum(), opt)',
      '',
      'while True:',
      '    for micro in range(4):',
      '        loss = model(x).sum()',
      '        loss.backward()',
      '    optimizer.step()',
      '',
    ].join('\n');
    assert.deepEqual(await loopsOf(source), [7, 10]);
    const linter = await getLinter();
    const doc = linter.open(source);
    try {
      // `train` is named like a step but holds the training loop: its loop is the step, not the function.
      assert.equal(topLevelFunctions(doc.source).find((f) => f.name === 'train')?.stepReason, null);
      assert.equal(trainingLoops(doc.source)[0].function, 'train');
    } finally {
      doc.dispose();
    }
  });

  it('offers no loop lens where the loop only calls a step that has its own lens', async () => {
    const linter = await getLinter();
    const doc = linter.open('def train_step(x):\n    x.sum().backward()\n    opt.step()\n\ndef main():\n    for _ in range(4):\n        train_step(1)\n\nfor b in data:\n    b.sum().backward()\n    opt.step()\n');
    try {
      assert.deepEqual(trainingLoops(doc.source).map((l) => l.line), [6, 9]);
      assert.deepEqual(loopTargets(doc.source).map((l) => l.line), [9]);
    } finally {
      doc.dispose();
    }
  });

  it('without any .step(), the innermost loop reaching backward()', async () => {
    assert.deepEqual(await loopsOf('for epoch in range(2):\n    for b in data:\n        b.sum().backward()\n'), [2]);
    assert.deepEqual(await loopsOf('for b in data:\n    print(b)\n'), []);
  });
});
