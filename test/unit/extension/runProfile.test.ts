// The editor's adapter over the profiler launcher, against real torch: progress per step, the report,
// and Cancel killing the child (its process group) rather than waiting for it.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runProfileRequest } from '../../../src/extension/profile/run';
import type { ProfileRequest } from '../../../src/extension/profile/request';

const python = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

const SCRIPT = `import time
import torch

def train_step(model, opt, x):
    opt.zero_grad(set_to_none=True)
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    return loss

def main():
    model = torch.nn.Linear(64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(6):
        train_step(model, opt, torch.randn(32, 64))

if __name__ == "__main__":
    main()
`;

const SLOW = `import time

def slow_step():
    time.sleep(30)

for _ in range(3):
    slow_step()
`;

/** Processes whose command line names `file` (the harness child and anything it started). */
function processesFor(file: string): number[] {
  return fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(file);
    } catch {
      return false;
    }
  }).map(Number);
}

describe('extension/runProfile (real torch)', function () {
  this.timeout(120_000);
  let dir: string;
  let script: string;
  let slow: string;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-ext-'));
    script = path.join(dir, 'tiny_train.py');
    fs.writeFileSync(script, SCRIPT);
    slow = path.join(dir, 'slow_train.py');
    fs.writeFileSync(slow, SLOW);
  });

  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const request = (fn: string, file = script): ProfileRequest => ({ python, script: file, function: fn, warmup: 1, steps: 3, backend: 'cpu', maxSeconds: 30, timeoutSeconds: 100, cwd: dir });

  it('reports progress per step and returns the report', async () => {
    const progress: [string, number | null][] = [];
    const result = await runProfileRequest(request('train_step'), { signal: new AbortController().signal, onProgress: (m, f) => progress.push([m, f]), onOutput: () => {} });
    assert.equal(result.error, null);
    assert.equal(result.cancelled, false);
    assert.ok(result.report);
    assert.equal(result.report.steps.length, 3);
    assert.ok(result.report.lines.some((l) => l.file === fs.realpathSync(script) || l.file === script), 'lines of the script');
    assert.match(progress[0][0], /^torch \S+ on cpu/);
    const fractions = progress.map((p) => p[1]).filter((f): f is number => f !== null);
    assert.deepEqual(fractions.slice(-1), [1]);
    for (let i = 1; i < fractions.length; i++) assert.ok(fractions[i] >= fractions[i - 1]);
    assert.ok(progress.some(([m]) => /^step 3\/3 took \d+ ms$/.test(m)), progress.map((p) => p[0]).join(' | '));
  });

  it('Cancel kills the child at once', async () => {
    const abort = new AbortController();
    let running: number[] = [];
    const started = Date.now();
    const result = await runProfileRequest(request('slow_step', slow), {
      signal: abort.signal,
      onProgress: (m) => {
        if (!/^torch/.test(m)) return;
        setTimeout(() => {
          running = processesFor(slow);
          abort.abort();
        }, 300);
      },
      onOutput: () => {},
    });
    assert.equal(result.cancelled, true);
    assert.equal(result.report, null);
    assert.ok(Date.now() - started < 25_000, 'did not wait for the 30 s step');
    assert.ok(running.length > 0, 'the harness was running when cancelled');
    assert.deepEqual(processesFor(slow), [], 'no process left');
  });

  it('a missing function is an error with a message, not a report', async () => {
    const result = await runProfileRequest(request('no_such_step'), { signal: new AbortController().signal, onProgress: () => {}, onOutput: () => {} });
    assert.equal(result.cancelled, false);
    assert.ok(result.error !== null && /no_such_step/.test(result.error), String(result.error));
  });

  // The command line could pass the script its flags (`-- --keep-losses`) and pick a loop in an imported
  // module (`--loop FILE:LINE`); the editor passed neither (scriptArgs were always empty).
  it('passes memhint.profile.args to the script and profiles a loop in a module the script runs', async () => {
    const fixture = path.resolve(__dirname, '../../../../test/fixtures/profiler/imported_loop');
    const trainer = path.join(fixture, 'trainlib', 'trainer.py');
    const header = fs.readFileSync(trainer, 'utf-8').split('\n').findIndex((l) => l.trim() === 'while True:') + 1;
    const result = await runProfileRequest(
      { ...request('unused'), function: null, script: path.join(fixture, 'run.py'), loopLine: header, loopFile: trainer, scriptArgs: ['--keep-losses'], cwd: fixture },
      { signal: new AbortController().signal, onProgress: () => {}, onOutput: () => {} },
    );
    assert.equal(result.error, null, String(result.error));
    assert.equal(result.report?.target.loopFile, trainer);
    assert.equal(result.report?.target.loopLine, header);
    assert.deepEqual(result.report?.target.scriptArgs, ['--keep-losses']);
    assert.deepEqual(result.report?.leaks.map((l) => l.code), ['loss = out.square().sum()'], 'the flag made the trainer keep its losses');
  });
});
