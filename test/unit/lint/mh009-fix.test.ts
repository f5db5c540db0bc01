import * as assert from 'node:assert/strict';
import { findingsOf, fixOnly } from './steps-fix-helpers';

const pinned = (body: string): string =>
  [
    'import torch',
    'from torch.utils.data import DataLoader',
    'loader = DataLoader(ds, batch_size=8, pin_memory=True)',
    'device = torch.device("cuda")',
    'for x, y in loader:',
    body,
    '    loss = model(x).sum()',
    '    loss.backward()',
    '    opt.step()',
    '',
  ].join('\n');

describe('MH009 blocking-transfer fix', () => {
  it('adds non_blocking=True to .to() and .cuda()', async () => {
    assert.match(await fixOnly(pinned('    x = x.to(device)'), 'MH009'), /x = x\.to\(device, non_blocking=True\)/);
    assert.match(await fixOnly(pinned('    x = x.cuda()'), 'MH009'), /x = x\.cuda\(non_blocking=True\)/);
    assert.match(await fixOnly(pinned('    x = x.to(device, torch.float16)'), 'MH009'), /x\.to\(device, torch\.float16, non_blocking=True\)/);
    assert.match(await fixOnly(pinned('    x = x.to(\n        device,\n    )'), 'MH009'), /x\.to\(\n {8}device, non_blocking=True,\n {4}\)/);
  });

  it('leaves copies that already say non_blocking, dtype casts and unknown loaders', async () => {
    assert.equal((await findingsOf(pinned('    x = x.to(device, non_blocking=True)'), 'MH009')).length, 0);
    assert.equal((await findingsOf(pinned('    x = x.to(device, non_blocking=False)'), 'MH009')).length, 0);
    assert.equal((await findingsOf(pinned('    x = x.to(torch.float16)'), 'MH009')).length, 0);
    assert.equal((await findingsOf(pinned('    x = x.to("cpu")'), 'MH009')).length, 0);
    const unknown = pinned('    x = x.to(device)').replace('loader = DataLoader(ds, batch_size=8, pin_memory=True)', 'loader = make_loader()');
    assert.equal((await findingsOf(unknown, 'MH009')).length, 0);
  });

  it('reports the unpinned CUDA training loader without a fix', async () => {
    const src = pinned('    x = x.to(device)').replace(', pin_memory=True', '');
    const f = await findingsOf(src, 'MH009');
    assert.equal(f.length, 1);
    assert.match(src.slice(f[0].start, f[0].end), /^DataLoader\(/);
    assert.equal(f[0].fix, null);
  });

  it('does not fix a whole-batch object (it may not be a tensor)', async () => {
    const src = pinned('    x = x').replace('for x, y in loader:', 'for batch in loader:').replace('    x = x', '    batch = batch.to(device)\n    x = batch');
    const f = await findingsOf(src, 'MH009');
    assert.equal(f.length, 1);
    assert.equal(f[0].fix, null);
  });
});
