import * as assert from 'node:assert/strict';
import { profileFindings } from '../../../src/extension/lint/profileFindings';
import type { DataLoaderStats } from '../../../src/profiler/report';
import { FILE, report } from './reportFixture';

const loader = (partial: Partial<DataLoaderStats>): DataLoaderStats => ({
  file: FILE, line: 30, function: 'main', code: 'loader = DataLoader(ds, num_workers=2)', datasetType: 'FloatRows', numWorkers: 2,
  pids: [11, 12], ussByStep: [1, 2, 3], pssByStep: [2, 3, 4], ussGrowthPerStep: 1_117_000, grows: true, ...partial,
});

describe('extension/profileFindings (graphs without backward, growing DataLoader workers)', () => {
  const r = report({
    noBackwardGraphs: [{ file: FILE, line: 24, function: 'train_step', code: 'val_out = model(val_x)', nodesPerStep: 5, bytesKeptPerStep: 16384, steps: 3 }],
    dataLoaders: [loader({}), loader({ line: 31, grows: false, ussGrowthPerStep: 19_000 })],
  });

  it('puts each measurement on its line, confirming the lint rule of the same problem', () => {
    const found = profileFindings(r, [FILE], 40);
    assert.deepEqual(found.map((f) => [f.line, f.confirms]), [[24, ['MH001']], [30, ['MH014']]]);
    assert.equal(
      found[0].message,
      'This forward pass builds an autograd graph that no backward() uses: 5 autograd nodes and 16 KiB of saved activations per step, kept while its result lives. Measured by memhint profile; run it under `torch.no_grad()` (or `torch.inference_mode()`).',
    );
    assert.equal(found[0].sentence, 'Measured by memhint profile: its graph is never backpropagated and keeps 5 autograd nodes and 16 KiB of saved activations per step.');
    assert.match(found[1].message, /^The worker processes of this DataLoader grow by 1\.07 MiB per step \(USS of its 2 workers\): copy-on-read/);
  });

  it('says nothing of loaders that do not grow, other files, or lines past the end of the document', () => {
    assert.deepEqual(profileFindings(r, ['/other/train.py'], 40), []);
    assert.deepEqual(profileFindings(r, [FILE], 25).map((f) => f.line), [24]);
    assert.deepEqual(profileFindings(report({}), [FILE], 40), []);
  });
});
