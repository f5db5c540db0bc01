// The `profile` subcommand end to end, in a child node process: argument handling, exit codes, outputs,
// and the example training script's two deliberate mistakes being found.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runProfileCli } from './profile-cli-runner';
import type { ProfileReport } from '../../src/profiler/report';

const PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';
const ROOT = path.resolve(__dirname, '../../..');
const EXAMPLE = path.join(ROOT, 'examples/train.py');

const profile = runProfileCli;

describe('memhint profile (cli)', function () {
  this.timeout(180_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-profile-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('rejects bad usage with exit code 2', async () => {
    for (const args of [[], ['x.py', '--steps', '0'], ['x.py', '--budget', 'huge'], ['x.py', '--format', 'xml'], ['x.py', '--setup', 'f'], ['x.py', '--bogus']]) {
      const run = await profile(args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /usage: memhint profile/);
    }
  });

  it('finds both deliberate mistakes of examples/train.py (json to --out)', async () => {
    const out = path.join(dir, 'report.json');
    const run = await profile([`${EXAMPLE}::train_step`, '--python', PYTHON, '--backend', 'cpu', '--format', 'json', '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, '', 'the report went to --out and the script prints to stderr');
    assert.match(run.stderr, /step 0 loss/);
    const report = JSON.parse(fs.readFileSync(out, 'utf-8')) as ProfileReport;
    const source = fs.readFileSync(EXAMPLE, 'utf-8').split('\n');
    const lineNo = (needle: string): number => source.findIndex((l) => l.includes(needle)) + 1;
    const graph = report.leaks.find((l) => l.line === lineNo('running_loss += loss'));
    assert.equal(graph?.reason, 'autograd_graph');
    const grad = report.leaks.find((l) => l.reason === 'storage' && l.heldBy?.includes('grad_snapshots'));
    assert.ok(grad, JSON.stringify(report.leaks));
    assert.equal(grad.bytesPerStep, 2048 * 2048 * 4, 'one fc2 weight gradient per step');
    assert.equal(grad.line, lineNo('h = F.gelu(self.fc2(h))'), 'located where the gradient was made');
    // MLP(512, 2048, 10) parameters, exact.
    const params = (512 * 2048 + 2048 + 2048 * 2048 + 2048 + 2048 * 10 + 10) * 4;
    assert.equal(report.peak?.byKind.parameter, params);
    assert.equal(report.peak?.byKind.optimizer_state, 2 * params + 6 * 4);
  });

  it('prints the text report on stdout and fails with a clear message', async () => {
    const ok = await profile([`${EXAMPLE}::train_step`, '--python', PYTHON, '--steps', '2', '--', '--hidden', '256']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /memhint profile — .*train\.py::train_step/);
    assert.match(ok.stdout, /Leaks \(memory from step k still alive after step k\+1\)/);
    const missing = await profile([`${EXAMPLE}::no_such_function`, '--python', PYTHON, '--', '--steps', '2', '--hidden', '64']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /memhint profile: missing target: .*no_such_function/);
  });

  it('profiles an inline training loop by script or script:LINE, with the module tree', async () => {
    const nano = path.join(ROOT, 'test/fixtures/profiler/nanogpt/train.py');
    const loop = await profile([nano, '--python', PYTHON, '--steps', '2']);
    assert.equal(loop.code, 0, loop.stderr);
    assert.match(loop.stdout, /memhint profile — .*train\.py:\d+ \(each iteration of the loop is a step\)/);
    assert.match(loop.stdout, /^Modules \(per step/m);
    assert.match(loop.stdout, /^ {8}mlp \(MLP\) +x2 /m, 'two micro-steps per iteration');
    const bad = await profile([`${nano}:2`, '--python', PYTHON]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /missing target: .*no for\/while loop starts on line 2/);
  });

  // minGPT's chargpt.py runs the loop of mingpt/trainer.py: `chargpt.py:LINE` can only name the script's own
  // lines, and `trainer.py:LINE` runs a module that defines the loop and never calls it.
  it('--loop FILE:LINE profiles a loop in a module the script imports and runs, with the script\'s -- flags', async () => {
    const dir = path.join(ROOT, 'test/fixtures/profiler/imported_loop');
    const trainer = path.join(dir, 'trainlib', 'trainer.py');
    const header = fs.readFileSync(trainer, 'utf-8').split('\n').findIndex((l) => l.trim() === 'while True:') + 1;
    const out = path.join(os.tmpdir(), `memhint-loop-file-${process.pid}.json`);
    try {
      const run = await profile([path.join(dir, 'run.py'), '--loop', `${trainer}:${header}`, '--python', PYTHON, '--format', 'json', '--out', out, '--', '--keep-losses']);
      assert.equal(run.code, 0, run.stderr);
      const report = JSON.parse(fs.readFileSync(out, 'utf-8')) as ProfileReport;
      assert.equal(report.target.loopFile, trainer);
      assert.equal(report.target.loopLine, header);
      assert.deepEqual(report.target.scriptArgs, ['--keep-losses']);
      assert.equal(report.steps.length, 3);
      assert.deepEqual(report.leaks.map((l) => [l.code, l.bytesByStep]), [['loss = out.square().sum()', [4, 4]]], 'the flag reached the script');
      assert.ok(!report.notes.some((n) => /has no training loop/.test(n)), 'chosen, not found: ' + report.notes.join('\n'));
    } finally {
      fs.rmSync(out, { force: true });
    }
    const notALoop = await profile([path.join(dir, 'run.py'), '--loop', `${trainer}:1`, '--python', PYTHON]);
    assert.equal(notALoop.code, 1);
    assert.match(notALoop.stderr, new RegExp(`^memhint profile: missing target: .*trainer\\.py: no for/while loop starts on line 1 \\(loops start on lines: ${header}\\)\\n$`));
    const notRun = await profile([path.join(dir, 'helpers_only.py'), '--loop', `${trainer}:${header}`, '--python', PYTHON]);
    assert.equal(notRun.code, 1);
    assert.match(notRun.stderr, /target not called: .*helpers_only\.py ran to completion without reaching the loop at .*trainer\.py:\d+\n$/);
    const adam = execFileSync(PYTHON, ['-c', 'import torch.optim.adam as m; print(m.__file__)'], { encoding: 'utf-8' }).trim();
    const library = await profile([path.join(dir, 'run.py'), '--loop', `${adam}:1`, '--python', PYTHON]);
    assert.equal(library.code, 1);
    assert.match(library.stderr, /adam\.py is library code, which the profiler does not trace line by line/);
    for (const args of [[`${dir}/run.py:3`, '--loop', `${trainer}:${header}`], [`${dir}/run.py::main`, '--loop', `${trainer}:${header}`], [`${dir}/run.py`, '--loop', trainer]]) {
      const usage = await profile([...args, '--python', PYTHON]);
      assert.equal(usage.code, 2, args.join(' '));
      assert.match(usage.stderr, /--loop/);
    }
  });
});
