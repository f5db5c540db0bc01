// The target torch from a project's pins: the oldest version the requirement allows, nearest folder first.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findTorchPin, torchPinIn, TorchPinCache } from '../../../src/lint/torch-pin';

const version = (text: string, file = 'requirements.txt'): string | null => {
  const pin = torchPinIn(text, file);
  return pin === null ? null : `${pin.version.major}.${pin.version.minor}`;
};

describe('torch pins', () => {
  it('reads requirement files, pyproject (PEP 621 and Poetry), setup.cfg and conda environments', () => {
    assert.equal(version('numpy\ntorch==2.1.0\n'), '2.1');
    assert.equal(version('torch>=1.13,<3  # cuda 11.7\n'), '1.13');
    assert.equal(version('torch~=2.3.0\n'), '2.3');
    assert.equal(version('torch[opt]>=2.2\n'), '2.2');
    assert.equal(version('[project]\ndependencies = ["numpy", "torch>=2.0.1"]\n', 'pyproject.toml'), '2.0');
    assert.equal(version('[tool.poetry.dependencies]\ntorch = "^2.4"\n', 'pyproject.toml'), '2.4');
    assert.equal(version('[tool.poetry.dependencies]\ntorch = { version = ">=2.2", source = "pytorch" }\n', 'pyproject.toml'), '2.2');
    assert.equal(version('[options]\ninstall_requires =\n    torch>=1.12\n', 'setup.cfg'), '1.12');
    assert.equal(version('dependencies:\n  - python=3.10\n  - pytorch=2.1.2\n', 'environment.yml'), '2.1');
  });

  it('says nothing without a lower bound, for other packages, and in comments', () => {
    assert.equal(version('torch\n'), null);
    assert.equal(version('torch<2\n'), null);
    assert.equal(version('torchvision==0.15.2\npytorch-lightning>=2.0\n'), null);
    assert.equal(version('# torch==1.13\n'), null);
    assert.equal(version('pytorch=2.1\n'), null); // conda syntax outside an environment file
  });

  it('takes the oldest allowed version when several lines name torch', () => {
    assert.equal(version('torch>=2.2; python_version >= "3.12"\ntorch>=1.13; python_version < "3.12"\n'), '1.13');
  });

  it('finds the nearest pin above a file and stops at the repository root', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-pin-'));
    try {
      fs.mkdirSync(path.join(root, 'repo', '.git'), { recursive: true });
      fs.mkdirSync(path.join(root, 'repo', 'pkg', 'sub'), { recursive: true });
      fs.writeFileSync(path.join(root, 'requirements.txt'), 'torch==1.9\n'); // outside the repository
      const file = path.join(root, 'repo', 'pkg', 'sub', 'train.py');
      fs.writeFileSync(file, 'import torch\n');
      assert.equal(findTorchPin(file), null);
      fs.writeFileSync(path.join(root, 'repo', 'requirements-dev.txt'), 'pytest\ntorch>=2.3\n');
      const cache = new TorchPinCache();
      const pin = findTorchPin(file, cache);
      assert.deepEqual(pin && { ...pin.version, spec: pin.spec, file: path.basename(pin.file) }, { major: 2, minor: 3, spec: 'torch>=2.3', file: 'requirements-dev.txt' });
      fs.writeFileSync(path.join(root, 'repo', 'pkg', 'requirements.txt'), 'torch==2.0.1\n');
      assert.equal(findTorchPin(file)?.version.minor, 0); // the nearer folder wins
      assert.equal(findTorchPin(file, cache)?.version.minor, 3); // a run's cache keeps its first answer
      // A requirements "file" that is a directory is skipped, not fatal.
      fs.mkdirSync(path.join(root, 'repo', 'pkg', 'sub', 'requirements.txt'));
      assert.equal(findTorchPin(file)?.version.minor, 0);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
