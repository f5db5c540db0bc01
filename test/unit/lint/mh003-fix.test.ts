import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { checkFix, findingsOf, fixOnly } from './steps-fix-helpers';

const python = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';
const old = { major: 1, minor: 13 };

function hasTorch(): boolean {
  if (!fs.existsSync(python)) return false;
  try {
    execFileSync(python, ['-c', 'import torch'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

describe('MH003 zero-grad-not-none fixes', () => {
  it('turns set_to_none=False into True', async () => {
    const out = await fixOnly('for x in loader:\n    optimizer.zero_grad(set_to_none=False)\n    loss = model(x)\n    loss.backward()\n', 'MH003');
    assert.match(out, /optimizer\.zero_grad\(set_to_none=True\)/);
  });

  it('turns a positional False into True', async () => {
    assert.match(await fixOnly('model.zero_grad(False)\n', 'MH003'), /model\.zero_grad\(True\)/);
  });

  it('adds set_to_none=True to a bare zero_grad() on torch < 2.0 only', async () => {
    const src = 'def step(opt, loss):\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n';
    assert.match(await fixOnly(src, 'MH003', old), /opt\.zero_grad\(set_to_none=True\)/);
    assert.equal((await findingsOf(src, 'MH003')).length, 0);
    assert.equal((await findingsOf(src, 'MH003', { major: 2, minor: 0 })).length, 0);
  });

  it('keeps a multi-line zero_grad call valid', async () => {
    const src = 'opt.zero_grad(\n    # keep the buffers\n)\n';
    const out = await fixOnly(src, 'MH003', old);
    assert.match(out, /set_to_none=True/);
  });

  it('replaces manual zeroing statements with `.grad = None`', async () => {
    const src = [
      'with torch.no_grad():',
      '    for p in model.parameters():',
      '        if p.grad is not None:',
      '            p.grad.data.zero_()',
      '',
    ].join('\n');
    assert.match(await fixOnly(src, 'MH003'), /^ {12}p\.grad = None$/m);
    assert.match(await fixOnly('w.grad.fill_(0.0)\n', 'MH003'), /^w\.grad = None$/m);
    assert.match(await fixOnly('self.weight.grad = torch.zeros_like(self.weight)\n', 'MH003'), /^self\.weight\.grad = None$/m);
  });

  it('reports but does not fix zeroing used as an expression or on a complex owner', async () => {
    const expr = await findingsOf('g = p.grad.zero_()\n', 'MH003');
    assert.equal(expr.length, 1);
    assert.equal(expr[0].fix, null);
    const indexed = await findingsOf('params[i].grad.zero_()\n', 'MH003');
    assert.equal(indexed.length, 1);
    assert.equal(indexed[0].fix, null);
    const data = await findingsOf('p.grad.data = torch.zeros_like(p)\n', 'MH003');
    assert.equal(data.length, 1);
    assert.ok(data[0].fix === null || !/\.data = None/.test(data[0].fix.edits.map((e) => e.newText).join('')));
  });

  it('leaves non-gradient in-place zeroing alone', async () => {
    const src = 'buf.zero_()\nx.fill_(0)\np.grad.fill_(1)\nstate.grad_acc.zero_()\np.grad.zero_(1)\n';
    const f = await findingsOf(src, 'MH003');
    assert.deepEqual(f.map((x) => src.slice(x.start, x.end)), []);
  });

  it('fixed manual SGD trains to the same weights (torch)', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(60000);
    const src = [
      'import torch',
      'torch.manual_seed(0)',
      'x = torch.linspace(-1, 1, 64)',
      'y = 3 * x + 1',
      'a = torch.zeros((), requires_grad=True)',
      'b = torch.zeros((), requires_grad=True)',
      'for t in range(50):',
      '    loss = ((a * x + b - y) ** 2).mean()',
      '    loss.backward()',
      '    with torch.no_grad():',
      '        a -= 0.1 * a.grad',
      '        b -= 0.1 * b.grad',
      '        a.grad.zero_()',
      '        b.grad.zero_()',
      'print(f"{a.item():.6f} {b.item():.6f}")',
      '',
    ].join('\n');
    let fixed = src;
    for (let i = 0; i < 2; i++) {
      const f = await findingsOf(fixed, 'MH003');
      fixed = await checkFix(fixed, f[0]);
    }
    assert.equal((await findingsOf(fixed, 'MH003')).length, 0);
    const run = (code: string): string => execFileSync(python, ['-c', code], { encoding: 'utf8' }).trim();
    assert.equal(run(fixed), run(src));
  });
});
