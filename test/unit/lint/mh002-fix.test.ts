// MH002's fixes: `.item()` for a Python-number accumulator, `.detach()` for stored tensors. They must
// parse, remove the finding, and leave the computed numbers unchanged (checked with real torch).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { lint } from './harness';
import { applyFix, hasTorch, lineOf, only, runPython, syntaxErrors } from './autograd-fix-helpers';

const fixtures = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'lint', 'MH002');

async function fixOf(text: string, line: number) {
  const f = only(await lint(text), 'MH002').find((x) => lineOf(text, x.start) === line);
  assert.ok(f, `MH002 on line ${line}`);
  assert.ok(f.fix, `MH002 on line ${line} has a fix`);
  return f.fix;
}

describe('MH002 retained-graph fix', () => {
  for (const name of fs.readdirSync(fixtures).filter((f) => f.endsWith('.py') && !f.startsWith('clean_')).sort()) {
    it(`every fix in ${name} parses and removes its finding`, async () => {
      const text = fs.readFileSync(path.join(fixtures, name), 'utf8');
      const findings = only(await lint(text), 'MH002');
      assert.ok(findings.length > 0);
      for (const f of findings) {
        // A value derived from a learned leaf has no fix on purpose (see the test below).
        if (f.fix === null && /a tensor an optimizer trains/.test(f.message)) continue;
        assert.ok(f.fix, `line ${lineOf(text, f.start)} has a fix`);
        const fixed = applyFix(text, f.fix);
        assert.deepEqual(await syntaxErrors(fixed), [], `fix for line ${lineOf(text, f.start)}`);
        const line = lineOf(text, f.start);
        const remaining = only(await lint(fixed), 'MH002').map((x) => lineOf(fixed, x.start));
        assert.ok(!remaining.includes(line), `line ${line} still reported after its fix`);
        assert.equal(remaining.length, findings.length - 1);
      }
    });
  }

  it('offers no fix for a value derived from a learned leaf: detaching would change what the next losses train', async () => {
    const text = fs.readFileSync(path.join(fixtures, 'positive_learned_temperature.py'), 'utf8');
    const findings = only(await lint(text), 'MH002');
    assert.equal(findings.length, 1);
    assert.equal(findings[0].fix, null);
    assert.match(findings[0].message, /self\.log_alpha/);
  });

  it('accumulates .item() into a numeric accumulator, and only on the tensor operand', async () => {
    const text = [
      'def train(model, loader, opt, criterion):',
      '    running = 0.0',
      '    for x, y in loader:',
      '        loss = criterion(model(x), y)',
      '        loss.backward()',
      '        opt.step()',
      '        running += loss * x.size(0)',
      '    return running',
      '',
    ].join('\n');
    const fixed = applyFix(text, await fixOf(text, 7));
    assert.ok(fixed.includes('running += loss.item() * x.size(0)'), fixed);
  });

  it('detaches when the accumulator is used as a tensor later, and parenthesizes compound values', async () => {
    const text = [
      'def train(model, loader, opt, criterion, log):',
      '    total = 0',
      '    history = []',
      '    for x, y in loader:',
      '        out = model(x)',
      '        loss = criterion(out, y)',
      '        loss.backward()',
      '        opt.step()',
      '        total += loss',
      '        history.append(loss * 2 + out.mean())',
      '    log(total.cpu())',
      '',
    ].join('\n');
    assert.ok(applyFix(text, await fixOf(text, 9)).includes('total += loss.detach()'));
    assert.ok(applyFix(text, await fixOf(text, 10)).includes('history.append((loss * 2 + out.mean()).detach())'));
  });

  it('keeps the numbers and drops the graphs (real torch)', async function () {
    if (!hasTorch()) this.skip();
    const text = [
      'import torch',
      '',
      'def train(steps):',
      '    torch.manual_seed(0)',
      '    model = torch.nn.Linear(4, 1)',
      '    opt = torch.optim.SGD(model.parameters(), lr=0.01)',
      '    total_loss = 0',
      '    losses = []',
      '    for step in range(steps):',
      '        x = torch.randn(8, 4)',
      '        out = model(x)',
      '        loss = out.pow(2).mean()',
      '        opt.zero_grad()',
      '        loss.backward()',
      '        opt.step()',
      '        total_loss += loss',
      '        losses.append(loss)',
      '    graphs = [l.grad_fn is not None for l in losses] + [getattr(total_loss, "grad_fn", None) is not None]',
      '    print(round(float(total_loss), 5), [round(float(l), 5) for l in losses], graphs)',
      '',
      'train(5)',
      '',
    ].join('\n');
    let fixed = applyFix(text, await fixOf(text, 17));
    fixed = applyFix(fixed, await fixOf(fixed, 16));
    assert.ok(fixed.includes('total_loss += loss.item()'));
    assert.ok(fixed.includes('losses.append(loss.detach())'));
    assert.deepEqual(only(await lint(fixed), 'MH002'), []);
    const before = runPython(text).trim();
    const after = runPython(fixed).trim();
    const numbers = (s: string) => s.replace(/\[(True|False)(, (True|False))*\]$/, '');
    assert.equal(numbers(after), numbers(before));
    assert.match(before, /\[True, True, True, True, True, True\]$/);
    assert.match(after, /\[False, False, False, False, False, False\]$/);
  });
});
