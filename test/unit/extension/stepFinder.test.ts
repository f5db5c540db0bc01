import * as assert from 'node:assert/strict';
import { functionAt, topLevelFunctions, trainingSteps } from '../../../src/extension/profile/stepFinder';
import { getLinter } from '../lint/harness';

const SOURCE = `import torch

def make_model():
    return torch.nn.Linear(4, 2)

def run_batch(model, opt, x, y):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss

@torch.no_grad()
def evaluate(model, x):
    return model(x)

def update(optimizer):
    optimizer.step()

def train(model):
    pass

def scheduler_only(scheduler):
    scheduler.step()

def main(model, opt, loader):
    for x, y in loader:
        loss = model(x)
        loss.backward()
        opt.step()

class Trainer:
    def __init__(self):
        self.model = None

    def training_step(self, batch):
        return batch

    @staticmethod
    def helper(x):
        return x
`;

describe('extension/stepFinder', () => {
  it('finds top-level functions and the ones that look like training steps', async () => {
    const file = (await getLinter()).open(SOURCE).source;
    assert.deepEqual(
      topLevelFunctions(file).map((f) => [f.name, f.stepReason]),
      [
        ['make_model', null],
        ['run_batch', 'backward'],
        ['evaluate', null],
        ['update', 'optimizer-step'],
        ['train', 'name'],
        ['scheduler_only', null],
        ['main', null],
        ['Trainer.training_step', 'name'],
        ['Trainer.helper', null],
      ],
    );
    assert.deepEqual(trainingSteps(file).map((f) => f.name), ['run_batch', 'update', 'train', 'Trainer.training_step']);
  });

  it('puts the CodeLens on the def line, below decorators', async () => {
    const file = (await getLinter()).open(SOURCE).source;
    const evaluate = topLevelFunctions(file).find((f) => f.name === 'evaluate')!;
    assert.equal(file.lineText(file.lineOf(evaluate.defStart)), 'def evaluate(model, x):');
    assert.equal(file.lineText(file.lineOf(evaluate.start)), '@torch.no_grad()');
  });

  it('finds the function at the cursor', async () => {
    const file = (await getLinter()).open(SOURCE).source;
    assert.equal(functionAt(file, SOURCE.indexOf('loss.backward'))?.name, 'run_batch');
    assert.equal(functionAt(file, SOURCE.indexOf('import torch')), null);
    assert.equal(functionAt(file, SOURCE.indexOf('return batch'))?.name, 'Trainer.training_step', 'methods as Class.method');
    assert.equal(functionAt(file, SOURCE.indexOf('self.model = None')), null, 'no __init__ target');
  });
});
