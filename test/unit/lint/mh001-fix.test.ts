// MH001's fix adds @torch.no_grad() above the function: valid Python, the finding goes away, and the
// function really stops recording a graph (checked with the test interpreter's torch).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { lint } from './harness';
import { applyFix, hasTorch, lineOf, only, runPython, syntaxErrors } from './autograd-fix-helpers';

const fixtures = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'lint', 'MH001');

describe('MH001 missing-no-grad fix', () => {
  for (const name of fs.readdirSync(fixtures).filter((f) => f.endsWith('.py') && !f.startsWith('clean_')).sort()) {
    it(`every fix in ${name} parses and removes its finding`, async () => {
      const text = fs.readFileSync(path.join(fixtures, name), 'utf8');
      const findings = only(await lint(text), 'MH001');
      assert.ok(findings.length > 0, 'fixture has MH001 findings');
      for (const f of findings) {
        if (f.fix === null) continue;
        const fixed = applyFix(text, f.fix);
        assert.deepEqual(await syntaxErrors(fixed), [], `fix for line ${lineOf(text, f.start)} breaks the syntax`);
        const after = only(await lint(fixed), 'MH001');
        assert.equal(after.length, findings.length - 1, `fix for line ${lineOf(text, f.start)} leaves ${after.length} findings`);
      }
    });
  }

  it('decorates a method at its own indentation, below existing decorators', async () => {
    const text = [
      'import torch',
      '',
      'class Runner:',
      '    @staticmethod',
      '    def evaluate(model, loader):',
      '        model.eval()',
      '        return [model(x).argmax(1) for x in loader]',
      '',
    ].join('\n');
    const [f] = only(await lint(text), 'MH001');
    assert.ok(f?.fix);
    const fixed = applyFix(text, f.fix);
    assert.match(fixed, / {4}@staticmethod\n {4}@torch\.no_grad\(\)\n {4}def evaluate/);
    assert.deepEqual(only(await lint(fixed), 'MH001'), []);
  });

  it('uses the local name of torch and keeps CRLF line endings', async () => {
    const text = 'import torch as th\r\n\r\ndef test(net, test_loader):\r\n    net.eval()\r\n    for x, y in test_loader:\r\n        print(net(x).argmax(1).eq(y).sum().item())\r\n';
    const [f] = only(await lint(text), 'MH001');
    assert.ok(f?.fix);
    const fixed = applyFix(text, f.fix);
    assert.ok(fixed.includes('@th.no_grad()\r\ndef test('), fixed);
    assert.deepEqual(only(await lint(fixed), 'MH001'), []);
  });

  it('offers no fix without an `import torch` and for async functions', async () => {
    const noTorch = 'from torch import nn\n\ndef validate(model, val_loader):\n    model.eval()\n    for x in val_loader:\n        print(model(x).sum().item())\n';
    const asyncFn = 'import torch\n\nasync def predict(model, x):\n    model.eval()\n    return model(x).argmax(1)\n';
    for (const text of [noTorch, asyncFn]) {
      const found = only(await lint(text), 'MH001');
      assert.equal(found.length, 1, text);
      assert.equal(found[0].fix, null, text);
    }
  });

  it('stops graph recording without changing the results (real torch)', async function () {
    if (!hasTorch()) this.skip();
    const text = [
      'import torch',
      '',
      'def evaluate(model, batches):',
      '    model.eval()',
      '    outs = []',
      '    for x in batches:',
      '        out = model(x)',
      '        outs.append((out.requires_grad, round(out.sum().item(), 4)))',
      '    return outs',
      '',
      'torch.manual_seed(0)',
      'net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))',
      'print(evaluate(net, [torch.ones(3, 4), torch.zeros(3, 4)]))',
      '',
    ].join('\n');
    const [f] = only(await lint(text), 'MH001');
    assert.ok(f?.fix, 'MH001 with a fix');
    const before = runPython(text).trim();
    const after = runPython(applyFix(text, f.fix)).trim();
    assert.match(before, /\(True, /);
    assert.equal(after, before.replace(/True/g, 'False'));
  });

  it('wraps module-level evaluation in `with torch.no_grad():` (no function to decorate)', async () => {
    const script = 'import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()\nprint(model(torch.ones(1, 2)).argmax(1))\n';
    const [f] = only(await lint(script), 'MH001');
    assert.ok(f?.fix);
    const fixed = applyFix(script, f.fix);
    assert.equal(fixed, 'import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()\nwith torch.no_grad():\n    print(model(torch.ones(1, 2)).argmax(1))\n');
    assert.deepEqual(only(await lint(fixed), 'MH001'), []);
  });

  const trainsThenTests = [
    'import torch',
    '',
    'def main(model, opt, x, y, test_x):',
    '    for step in range(3):',
    '        loss = torch.nn.functional.mse_loss(model(x), y)',
    '        opt.zero_grad()',
    '        loss.backward()',
    '        opt.step()',
    '    model.eval()',
    '    for i in range(2):',
    '        out = model(test_x)',
    '        print(out.requires_grad, round(out.sum().item(), 4))',
    '    return [round(p.sum().item(), 4) for p in model.parameters()]',
    '',
    'torch.manual_seed(0)',
    'net = torch.nn.Linear(4, 2)',
    'print(main(net, torch.optim.SGD(net.parameters(), lr=0.1), torch.ones(3, 4), torch.zeros(3, 2), torch.ones(2, 4)))',
    '',
  ].join('\n');

  it('never decorates a function that also trains: wraps only the evaluation loop', async () => {
    const [f] = only(await lint(trainsThenTests), 'MH001');
    assert.ok(f?.fix, 'MH001 with a fix');
    assert.match(f.fix.title, /^Wrap/);
    const fixed = applyFix(trainsThenTests, f.fix);
    assert.ok(!fixed.includes('@torch.no_grad()'), fixed);
    assert.match(fixed, /\n {4}with torch\.no_grad\(\):\n {8}for i in range\(2\):\n {12}out = model\(test_x\)\n {12}print/);
    assert.deepEqual(await syntaxErrors(fixed), []);
    assert.deepEqual(only(await lint(fixed), 'MH001'), []);
  });

  it('never decorates a function that trains only through helpers: wraps the evaluation loop that reaches a forward through a helper', async () => {
    const text = [
      'import torch',
      '',
      'class Trainer:',
      '    def _run_batch(self, x):',
      '        return self.model(x).sum()',
      '',
      '    def _update(self, loss):',
      '        loss.backward()',
      '        self.optimizer.step()',
      '',
      '    def main(self):',
      '        self._update(self._run_batch(self.train_x))',
      '        self.model.eval()',
      '        for x in self.val_batches:',
      '            print(self._run_batch(x).item())',
      '',
    ].join('\n');
    const [f] = only(await lint(text), 'MH001');
    assert.ok(f?.fix, 'MH001 with a fix');
    assert.equal(lineOf(text, f.start), 15);
    assert.match(f.message, /through `self\._run_batch`/);
    assert.match(f.fix.title, /^Wrap/);
    const fixed = applyFix(text, f.fix);
    assert.ok(!fixed.includes('@torch.no_grad()'), fixed);
    assert.match(fixed, /\n {8}self\._update\(self\._run_batch\(self\.train_x\)\)\n {8}self\.model\.eval\(\)\n {8}with torch\.no_grad\(\):\n {12}for x in self\.val_batches:\n {16}print/);
    assert.deepEqual(await syntaxErrors(fixed), []);
    assert.deepEqual(only(await lint(fixed), 'MH001'), []);
  });

  it('wraps the query forward after a functional (MAML) update, and the scores are unchanged (real torch)', async function () {
    const text = [
      'import torch',
      'import torch.nn.functional as F',
      '',
      'def finetune_scores(net, tasks, inner_lr=0.4, steps=3):',
      '    accs = []',
      '    for x_s, y_s, x_q, y_q in tasks:',
      '        weights = [p for p in net.parameters()]',
      '        for _ in range(steps):',
      '            loss = F.cross_entropy(F.linear(x_s, *weights), y_s)',
      '            grads = torch.autograd.grad(loss, weights)',
      '            weights = [w - inner_lr * g for w, g in zip(weights, grads)]',
      '            logits = net(x_q, weights)',
      '            accs.append((logits.requires_grad, round(F.cross_entropy(logits, y_q).item(), 5)))',
      '    return accs',
      '',
      'class Net(torch.nn.Linear):',
      '    def forward(self, x, weights=None):',
      '        return F.linear(x, *(weights or (self.weight, self.bias)))',
      '',
      'torch.manual_seed(0)',
      'tasks = [(torch.randn(6, 4), torch.randint(0, 3, (6,)), torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(2)]',
      'print(finetune_scores(Net(4, 3), tasks))',
      '',
    ].join('\n');
    const [f] = only(await lint(text), 'MH001');
    assert.ok(f?.fix, 'MH001 with a fix');
    assert.equal(lineOf(text, f.start), 12);
    const fixed = applyFix(text, f.fix);
    assert.match(fixed, /\n {12}with torch\.no_grad\(\):\n {16}logits = net\(x_q, weights\)\n/);
    assert.deepEqual(await syntaxErrors(fixed), []);
    assert.deepEqual(only(await lint(fixed), 'MH001'), []);
    if (!hasTorch()) this.skip();
    this.timeout(120000);
    const before = runPython(text).trim();
    assert.match(before, /\(True, /);
    assert.equal(runPython(fixed).trim(), before.replace(/True/g, 'False'));
  });

  it('the wrap keeps training intact and only stops the evaluation graph (real torch)', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(120000);
    const [f] = only(await lint(trainsThenTests), 'MH001');
    assert.ok(f?.fix);
    const before = runPython(trainsThenTests).trim();
    const after = runPython(applyFix(trainsThenTests, f.fix)).trim();
    assert.match(before, /^True /m);
    assert.equal(after, before.replace(/True/g, 'False'));
  });

  // A pix2pix-style wrapper whose `forward(split)` trains on one branch and tests on a `volatile=True` input:
  // the whole `if` reaches no backward by itself, but wrapping it would switch off the training branch too.
  const splitForward = [
    'import torch',
    'from torch.autograd import Variable',
    '',
    'class Wrapper:',
    '    def __init__(self, net):',
    '        self.net = net',
    '',
    '    def forward(self, split, x):',
    "        if split == 'train':",
    '            self.prediction = self.net(Variable(x))',
    "        elif split == 'test':",
    '            self.prediction = self.net(Variable(x, volatile=True))',
    '            self.pred = self.prediction.data.argmax(1)',
    '',
    '    def optimize(self, x, y):',
    "        self.forward('train', x)",
    '        torch.nn.functional.cross_entropy(self.prediction, y).backward()',
    '',
    'torch.manual_seed(0)',
    'w = Wrapper(torch.nn.Linear(4, 3))',
    'w.optimize(torch.ones(2, 4), torch.tensor([0, 1]))',
    "w.forward('test', torch.ones(2, 4))",
    "print(w.net.weight.grad is not None, w.prediction.requires_grad, w.pred.tolist())",
    '',
  ].join('\n');

  it('wraps only the statement of a volatile forward, never the training branch beside it (real torch)', async function () {
    const [f] = only(await lint(splitForward), 'MH001');
    assert.ok(f?.fix, 'MH001 with a fix');
    assert.equal(lineOf(splitForward, f.start), 12);
    const fixed = applyFix(splitForward, f.fix);
    assert.match(fixed, /\n {8}if split == 'train':\n {12}self\.prediction = self\.net\(Variable\(x\)\)\n {8}elif split == 'test':\n {12}with torch\.no_grad\(\):\n {16}self\.prediction = self\.net\(Variable\(x, volatile=True\)\)\n {12}self\.pred = /);
    assert.deepEqual(await syntaxErrors(fixed), []);
    assert.deepEqual(only(await lint(fixed), 'MH001'), []);
    if (!hasTorch()) return;
    this.timeout(120000);
    const before = runPython(splitForward).trim();
    assert.match(before, /^True True /);
    assert.equal(runPython(fixed).trim(), before.replace(/^True True /, 'True False '));
  });
});
