// MH010's fix (`D(fake)` -> `D(fake.detach())`) must leave the training unchanged: it is offered only when
// the generator's gradients are zeroed before the G step, and then both networks end with the same
// weights. Checked by running the original and the fixed script with torch (skipped without torch).
import * as assert from 'node:assert/strict';
import { checkFix, findingsOf } from './steps-fix-helpers';
import { hasTorch, runPython } from './autograd-fix-helpers';

/** A small GAN trained for a few steps on CPU; prints both networks' weights. */
const gan = (zeroG: string): string =>
  [
    'import torch',
    'import torch.nn as nn',
    'torch.manual_seed(0)',
    'netG = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6))',
    'netD = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))',
    'optimizerD = torch.optim.SGD(netD.parameters(), lr=0.1)',
    'optimizerG = torch.optim.SGD(netG.parameters(), lr=0.1)',
    'criterion = nn.BCEWithLogitsLoss()',
    'loader = [torch.randn(5, 6) for _ in range(3)]',
    'for real in loader:',
    '    optimizerD.zero_grad()',
    '    noise = torch.randn(5, 4)',
    '    fake = netG(noise)',
    '    output = netD(fake)',
    '    errD = criterion(netD(real), torch.ones(5, 1)) + criterion(output, torch.zeros(5, 1))',
    '    errD.backward()',
    '    optimizerD.step()',
    zeroG,
    '    fake = netG(noise)',
    '    errG = criterion(netD(fake), torch.ones(5, 1))',
    '    errG.backward()',
    '    optimizerG.step()',
    'print([round(float(p.sum()), 6) for p in list(netG.parameters()) + list(netD.parameters())])',
    '',
  ].join('\n');

describe('MH010 gan-d-step-no-detach fix', () => {
  it('detaches the fake sample, and the trained weights are unchanged', async function () {
    const src = gan('    optimizerG.zero_grad()');
    const found = await findingsOf(src, 'MH010');
    assert.equal(found.length, 1);
    const fixed = await checkFix(src, found[0]);
    assert.match(fixed, /output = netD\(fake\.detach\(\)\)/);
    if (!hasTorch()) this.skip();
    assert.equal(runPython(fixed), runPython(src));
  });

  it('accepts netG.zero_grad() and a reset_grad() helper that zeroes the generator, not one that zeroes D only', async () => {
    const helper = (body: string): string => `def reset_grad():\n${body}\n\n\n`;
    for (const [prefix, zero, fixed] of [
      ['', '    netG.zero_grad()', true],
      [helper('    optimizerD.zero_grad()\n    optimizerG.zero_grad()'), '    reset_grad()', true],
      [helper('    optimizerD.zero_grad()'), '    reset_grad()', false],
      ['', '    reset_grad()', false],
    ] as const) {
      const found = await findingsOf(prefix + gan(zero), 'MH010');
      assert.equal(found.length, 1);
      assert.equal(found[0].fix !== null, fixed, `${prefix}${zero}`);
    }
  });

  it('offers no fix when the G step would include the D loss gradients (and shows they differ)', async function () {
    const src = gan('    optimizerD.zero_grad()');
    const found = await findingsOf(src, 'MH010');
    assert.equal(found.length, 1);
    assert.equal(found[0].fix, null);
    if (!hasTorch()) this.skip();
    // Detaching by hand changes the result here: the fix would not be safe.
    assert.notEqual(runPython(src.replace('output = netD(fake)', 'output = netD(fake.detach())')), runPython(src));
  });

  it('detaches the fake sample of networks written as functions, and the trained weights are unchanged', async function () {
    const src = [
      'import torch',
      'torch.manual_seed(0)',
      'g_w = torch.randn(4, 6, requires_grad=True)',
      'd_w = torch.randn(6, 1, requires_grad=True)',
      'G_params = [g_w]',
      'D_solver = torch.optim.SGD([d_w], lr=0.1)',
      'G_solver = torch.optim.SGD(G_params, lr=0.1)',
      '',
      'def G(z):',
      '    return torch.tanh(z @ g_w)',
      '',
      'def D(x):',
      '    return torch.sigmoid(x @ d_w)',
      '',
      'for real in [torch.randn(5, 6) for _ in range(3)]:',
      '    z = torch.randn(5, 4)',
      '    G_sample = G(z)',
      '    D_fake = D(G_sample)',
      '    D_loss = -(torch.log(D(real)) + torch.log(1 - D_fake)).mean()',
      '    D_loss.backward()',
      '    D_solver.step()',
      '    G_solver.zero_grad()',
      '    D_solver.zero_grad()',
      '    G_loss = -torch.log(D(G(z))).mean()',
      '    G_loss.backward()',
      '    G_solver.step()',
      '    G_solver.zero_grad()',
      '    D_solver.zero_grad()',
      'print([round(float(p.sum()), 6) for p in (g_w, d_w)])',
      '',
    ].join('\n');
    const found = await findingsOf(src, 'MH010');
    assert.equal(found.length, 1);
    const fixed = await checkFix(src, found[0]);
    assert.match(fixed, /D_fake = D\(G_sample\.detach\(\)\)/);
    if (!hasTorch()) this.skip();
    assert.equal(runPython(fixed), runPython(src));
  });

  it('does not flag the G step or a detached D input', async () => {
    const src = gan('    optimizerG.zero_grad()').replace('output = netD(fake)', 'output = netD(fake.detach())');
    assert.equal((await findingsOf(src, 'MH010')).length, 0);
  });
});
