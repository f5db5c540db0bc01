// MH001 on PPO-style rollouts (analysis/rollout-lists.ts): the acting loop's lists are detached after the
// rollout, so its graph is never used; lists read with history after the loop keep the rollout clean.
import * as assert from 'node:assert/strict';
import { lint } from './harness';
import { applyFix, hasTorch, lineOf, only, runPython, syntaxErrors } from './autograd-fix-helpers';

/** A PPO-style update: rollout with lists detached afterwards, then one update on the stored observations. */
const ppo = (afterRollout: string): string =>
  [
    'import torch',
    'from torch.distributions import Categorical',
    '',
    'def learn(net, opt, storage, updates=2, horizon=4):',
    '    obs = torch.ones(3, 4)',
    '    for u in range(updates):',
    '        obs_buf, act_buf, logp_buf = [], [], []',
    '        for t in range(horizon):',
    '            logits = net(obs)',
    '            dist = Categorical(logits=logits)',
    '            a = dist.sample()',
    '            obs_buf.append(obs)',
    '            act_buf.append(a)',
    '            logp_buf.append(dist.log_prob(a))',
    '            obs = obs * 0.5 + a.float().unsqueeze(1) * 0.1',
    `        ${afterRollout}`,
    '        new_logp = Categorical(logits=net(torch.cat(obs_buf))).log_prob(torch.cat(act_buf))',
    '        loss = -(torch.exp(new_logp - logp_old)).mean()',
    '        opt.zero_grad()',
    '        loss.backward()',
    '        opt.step()',
    '    return [round(p.sum().item(), 5) for p in net.parameters()]',
    '',
  ].join('\n');

describe('MH001 rollouts whose lists are detached afterwards', () => {
  it('reports the acting forward when every list read after the rollout is detached', async () => {
    const text = ppo('logp_old = torch.cat(logp_buf).detach()');
    const found = only(await lint(text), 'MH001');
    assert.deepEqual(found.map((f) => lineOf(text, f.start)), [9]);
    assert.match(found[0].message, /rollout loop/);
  });

  it('stays silent when a list is read with its history (handed on, or gathered without detach)', async () => {
    for (const afterRollout of ['storage.insert(torch.cat(logp_buf)); logp_old = storage.old()', 'logp_old = torch.cat(logp_buf)', 'logp_old = logp_buf[-1].detach()']) {
      const text = ppo(afterRollout);
      assert.deepEqual(only(await lint(text), 'MH001'), [], afterRollout);
    }
  });

  it('stays silent when a value bound in the rollout is read after it (a bootstrap value)', async () => {
    const text = ppo('logp_old = torch.cat(logp_buf).detach(); storage.bootstrap(logits)');
    assert.deepEqual(only(await lint(text), 'MH001'), []);
  });

  it('the wrap stops the rollout graph and leaves the update unchanged (real torch)', async function () {
    if (!hasTorch()) this.skip();
    this.timeout(120000);
    const text = `${ppo('logp_old = torch.cat(logp_buf).detach()')}\ntorch.manual_seed(0)\nnet = torch.nn.Linear(4, 2)\nprint(learn(net, torch.optim.SGD(net.parameters(), lr=0.1), None))\n`;
    const [f] = only(await lint(text), 'MH001');
    assert.ok(f?.fix, 'MH001 with a fix');
    assert.match(f.fix.title, /^Wrap/);
    const fixed = applyFix(text, f.fix);
    assert.deepEqual(await syntaxErrors(fixed), []);
    assert.match(fixed, /\n {8}with torch\.no_grad\(\):\n {12}for t in range\(horizon\):/);
    assert.deepEqual(only(await lint(fixed), 'MH001'), []);
    assert.equal(runPython(fixed).trim(), runPython(text).trim());
  });
});
