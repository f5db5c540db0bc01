// Per-scope results of functions nested in a giant `def main():` (issue #12): method forwards (MH001's
// differentiable module methods) and MH010's per-scope findings are kept on the nested function, anchored
// on the statement of main's body that holds it and main's header (unitcache's enclosingPiece), not on
// main itself, whose node is new after every edit. So an edit elsewhere in main reuses them, and an edit
// of what they read there (grad state entered indirectly by main, a helper nested in main) recomputes
// them; either way the findings are a fresh linter's.
import * as assert from 'node:assert/strict';
import { defaultSettings } from '../../../src/lint';
import { getLinter } from './harness';
import { editingWithCounts } from './memo-counting';

// `update`, nested in main, backpropagates `policy.sample(...)`'s output: the method records a graph, so
// `act` (a function of the file) runs a forward pass under autograd (MH001).
const POLICY = `import torch
from model import GaussianPolicy


def main(lr=3e-4):
    policy = GaussianPolicy(8, 2, 64)
    policy_optim = torch.optim.Adam(policy.parameters(), lr=lr)
    steps = 10

    def update(state_batch):
        pi, log_pi, _ = policy.sample(state_batch)
        policy_loss = (0.2 * log_pi).mean()
        policy_optim.zero_grad()
        policy_loss.backward()
        policy_optim.step()

    print('ready', 1)
    for _ in range(steps):
        update(torch.randn(4, 8))
        act(policy, torch.randn(1, 8))


def act(policy, state):
    action, _, _ = policy.sample(state)
    return action.detach().cpu().numpy()
`;

// A GAN step nested in main: the discriminator runs on the generator's output without .detach() (MH010);
// the fix is offered because reset_grad(), another statement of main, zeroes the generator's gradients.
const GAN = `import torch
import torch.nn as nn
import torch.optim as optim
from models import Generator, Discriminator


def main(loader, nz=100):
    netG = Generator().cuda()
    netD = Discriminator().cuda()
    criterion = nn.BCELoss()
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4)
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4)

    def reset_grad():
        optimizerG.zero_grad()
        optimizerD.zero_grad()

    def step(real):
        b = real.size(0)
        noise = torch.randn(b, nz, device=real.device)
        fake = netG(noise)
        output = netD(fake)
        errD = criterion(output, torch.zeros(b, 1, device=real.device))
        errD.backward()
        optimizerD.step()
        reset_grad()
        output = netD(fake)
        errG = criterion(output, torch.ones(b, 1, device=real.device))
        errG.backward()
        optimizerG.step()

    print('ready', 1)
    for real in loader:
        step(real.cuda())
`;

describe('scopes nested in a giant def main(): kept per statement of main', () => {
  it('method forwards: a nested scope is reused after an edit elsewhere in main, re-traced after grad state around it changes', async () => {
    const linter = await getLinter();
    assert.ok(linter.lintText(POLICY, defaultSettings).some((f) => f.code === 'MH001'), 'act runs the differentiable method');
    await editingWithCounts(POLICY, 'method-forwards.scope', (edit) => {
      // `update` is looked up in the memo (main's own scope has no backward) and reused.
      const unrelated = edit("print('ready', 1)", "print('ready', 2)");
      assert.ok(unrelated.lookups > 0, 'the nested scope is kept in the memo');
      assert.equal(unrelated.computes, 0, 'an edit of another statement of main re-traces no nested scope');
      // main enters grad mode indirectly: autograd may be off in update, so its calls prove nothing and
      // act's finding goes (a stale entry would keep it).
      const indirect = edit('    steps = 10\n', '    steps = 10\n    torch.set_grad_enabled(training)\n');
      assert.equal(indirect.computes, 1, 'the grad state of main is read by the nested scope');
    });
  });

  it('MH010: a nested scope is reused after an edit elsewhere in main, rechecked after an edit of a helper it read', async () => {
    const linter = await getLinter();
    const findings = linter.lintText(GAN, defaultSettings).filter((f) => f.code === 'MH010');
    assert.equal(findings.length, 1);
    assert.ok(findings[0].fix !== null, 'the fix is offered: reset_grad zeroes the generator');
    await editingWithCounts(GAN, 'MH010.functions', (edit) => {
      const unrelated = edit("print('ready', 1)", "print('ready', 2)");
      assert.ok(unrelated.lookups > 0, 'the nested scope is kept in the memo');
      assert.equal(unrelated.computes, 0, 'an edit of another statement of main rechecks no nested scope');
      // reset_grad no longer zeroes the generator: the finding stays, without its fix.
      const helper = edit('        optimizerG.zero_grad()\n', '        optimizerD.zero_grad()\n');
      assert.equal(helper.computes, 1, 'the helper nested in main is read by the check');
    });
  });
});
