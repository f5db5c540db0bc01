import * as assert from 'node:assert/strict';
import { InterpreterTorchVersions, type TorchProbe } from '../../../src/extension/lint/interpreterTorch';
import type { InterpreterInfo } from '../../../src/extension/profile/probe';

function info(python: string, torchVersion: string | null): InterpreterInfo {
  return {
    requested: python,
    executable: python,
    pythonVersion: '3.11.2',
    torchVersion,
    cudaAvailable: false,
    problem: torchVersion === null ? { kind: 'torch_missing', message: 'torch is not installed' } : null,
  };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('editor target torch: the interpreter that will run the code', () => {
  it('probes each interpreter once and answers with its torch after the probe', async () => {
    const asked: string[] = [];
    const learned: string[] = [];
    const probe: TorchProbe = (python) => {
      asked.push(python);
      return Promise.resolve(info(python, python.includes('venv') ? '2.13.0+cpu' : '1.13.0a0'));
    };
    const versions = new InterpreterTorchVersions(probe, (python, v) => learned.push(`${python}=${v ? `${v.major}.${v.minor}` : 'none'}`));
    assert.equal(versions.versionOf('/usr/bin/python3'), undefined, 'unknown until the probe answers');
    assert.equal(versions.versionOf('/usr/bin/python3'), undefined);
    assert.equal(versions.versionOf('/p/.venv/bin/python'), undefined);
    await tick();
    assert.deepEqual(versions.versionOf('/usr/bin/python3'), { major: 1, minor: 13 });
    assert.deepEqual(versions.versionOf('/p/.venv/bin/python'), { major: 2, minor: 13 });
    assert.deepEqual(asked, ['/usr/bin/python3', '/p/.venv/bin/python'], 'one probe per interpreter');
    assert.deepEqual(learned, ['/usr/bin/python3=1.13', '/p/.venv/bin/python=2.13']);
  });

  it('an interpreter without torch, or one that cannot run, gives no version (the pin or default applies)', async () => {
    const probe: TorchProbe = (python) => (python === 'broken' ? Promise.reject(new Error('spawn')) : Promise.resolve(info(python, null)));
    const versions = new InterpreterTorchVersions(probe, () => undefined);
    versions.versionOf('python3');
    versions.versionOf('broken');
    await tick();
    assert.equal(versions.versionOf('python3'), null);
    assert.equal(versions.versionOf('broken'), null);
  });

  it('forget() drops answers, and a probe started before it does not land afterwards', async () => {
    let torch = '1.13.0';
    const pending: Array<() => void> = [];
    const probe: TorchProbe = (python) => {
      const answer = info(python, torch);
      return new Promise((resolve) => pending.push(() => resolve(answer)));
    };
    const learned: string[] = [];
    const versions = new InterpreterTorchVersions(probe, (python) => learned.push(python));
    versions.versionOf('python3');
    versions.forget(); // e.g. memhint.python changed while the first probe ran
    torch = '2.4.1';
    versions.versionOf('python3');
    for (const resolve of pending) resolve();
    await tick();
    assert.deepEqual(versions.versionOf('python3'), { major: 2, minor: 4 }, 'the stale answer (1.13) was dropped');
    assert.deepEqual(learned, ['python3']);
  });
});
