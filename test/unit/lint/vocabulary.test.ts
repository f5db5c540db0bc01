// The shared names of src/lint/analysis/vocabulary.ts: which optimizer names each question accepts.
import * as assert from 'node:assert/strict';
import { isOptimizerClass, isTorchOptimizerName, looksLikeOptimizer } from '../../../src/lint/analysis/vocabulary';

describe('optimizer vocabulary', () => {
  it('isTorchOptimizerName: a torch.optim class as the last segment of a dotted name', () => {
    for (const name of ['Adam', 'optim.Adam', 'torch.optim.SGD', 'torch.optim.LBFGS', 'AdamW', 'SparseAdam', 'RMSprop']) assert.ok(isTorchOptimizerName(name), name);
    for (const name of ['FusedAdam', 'Lion', 'adam', 'Adam2', 'torch.optim', 'optim.AdamOptimizer', 'MyAdam', 'lr_scheduler.StepLR', '']) assert.ok(!isTorchOptimizerName(name), name);
  });

  it('isOptimizerClass: an exact last name, torch or another library, case-sensitive', () => {
    for (const name of ['Adam', 'SGD', 'Adafactor', 'FusedAdam', 'FusedLAMB', 'Lamb', 'LAMB', 'Lion', 'LARS']) assert.ok(isOptimizerClass(name), name);
    // A dotted name is not a last name; lowercase and variants are not classes this list knows.
    for (const name of ['optim.Adam', 'adam', 'sgd', 'AdamP', 'Optimizer', 'optimizer', '']) assert.ok(!isOptimizerClass(name), name);
  });

  it('looksLikeOptimizer: any case, `optim` anywhere, Adam variants', () => {
    for (const name of ['torch.optim.Adam', 'build_optimizer', 'Optimizer', 'adam', 'AdamP', 'Adam8bit', 'sgd', 'lars', 'Lion', 'FusedAdam', 'apex.optimizers.FusedLAMB']) assert.ok(looksLikeOptimizer(name), name);
    for (const name of ['model', 'step', 'scheduler', 'torch.cat', 'MyAdam', 'Lionel', '']) assert.ok(!looksLikeOptimizer(name), name);
  });
});
