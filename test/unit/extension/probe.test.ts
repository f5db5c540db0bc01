// The interpreter probe against real interpreters: torch found (and its version as torch reports it),
// torch missing (a venv without it), a path that does not exist; only usable answers are cached.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describeInterpreter, execProbe, InterpreterProbe, interpretProbe } from '../../../src/extension/profile/probe';

const python = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

describe('interpreter probe', function () {
  this.timeout(120_000);

  it('reports the Python and torch versions the interpreter itself has', async () => {
    const info = await new InterpreterProbe().probe(python);
    const expected = execFileSync(python, ['-c', 'import torch, sys; print(torch.__version__); print("%d.%d.%d" % sys.version_info[:3])'], { encoding: 'utf8' }).trim().split('\n');
    assert.equal(info.problem, null);
    assert.equal(info.torchVersion, expected[0]);
    assert.equal(info.pythonVersion, expected[1]);
    assert.match(describeInterpreter(info, 'py'), new RegExp(`^py · Python ${expected[1].replace(/\./g, '\\.')} · torch `));
  });

  it('says torch is missing for an interpreter without it, and asks again next time', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-probe-'));
    try {
      // A venv without system site-packages cannot import torch, whatever the machine has installed.
      execFileSync(python, ['-m', 'venv', '--without-pip', path.join(dir, 'venv')]);
      const bare = path.join(dir, 'venv', 'bin', 'python');
      let calls = 0;
      const counting = new InterpreterProbe((p, a, t) => {
        calls++;
        return execProbe(p, a, t);
      });
      const info = await counting.probe(bare);
      assert.equal(info.problem?.kind, 'torch_missing');
      assert.match(info.problem.message, /torch is not installed for .*venv\/bin\/python \((ModuleNotFoundError|ImportError)/);
      await new Promise((r) => setImmediate(r));
      await counting.probe(bare);
      assert.equal(calls, 2, 'a missing torch is not cached');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('caches a usable interpreter: one process per path', async () => {
    let calls = 0;
    const probe = new InterpreterProbe(() => {
      calls++;
      return Promise.resolve({ stdout: '{"executable": "/x/python", "python": "3.12.1", "torch": "2.5.0", "cuda": false}', stderr: '', error: null });
    });
    const [a, b] = await Promise.all([probe.probe('/x/python'), probe.probe('/x/python')]);
    await probe.probe('/x/python');
    assert.equal(calls, 1);
    assert.equal(a, b);
    assert.equal(a.torchVersion, '2.5.0');
  });

  it('names a path that does not exist', async () => {
    const info = await new InterpreterProbe().probe('/nonexistent/memhint/python');
    assert.equal(info.problem?.kind, 'spawn');
    assert.equal(info.problem.message, 'cannot run /nonexistent/memhint/python: no such file');
  });

  it('reads garbage output as a probe problem, not as torch missing', () => {
    const info = interpretProbe('py', 'Traceback...', null, 'boom');
    assert.equal(info.problem?.kind, 'probe');
  });
});
