// MH006 gc-collect-in-loop: `gc.collect()` inside the per-step loop.
import { calleeName } from '../analysis/imports';
import { callsNamed } from '../analysis/calls';
import { enclosingStepLoop, isOccasionalInLoop } from '../analysis/steps';
import type { Rule, RuleFinding } from '../types';

export const gcCollectInLoop: Rule = {
  code: 'MH006',
  name: 'gc-collect-in-loop',
  severity: 'warning',
  summary: '`gc.collect()` inside the per-step loop costs a full garbage-collection pass every step.',
  check(file) {
    const findings: RuleFinding[] = [];
    if (!file.text.includes('collect')) return findings;
    for (const call of callsNamed(file, 'collect')) {
      if (calleeName(file, call) !== 'gc.collect') continue;
      const loop = enclosingStepLoop(file, call);
      if (loop === null || isOccasionalInLoop(file, call, loop)) continue;
      findings.push({
        start: call.start,
        end: call.end,
        message:
          '`gc.collect()` runs a full collection every step (tens of milliseconds with a large heap) and only frees tensors kept ' +
          'alive by reference cycles; tensors still referenced stay allocated. Drop the references (`del loss, out`) instead, ' +
          'or collect once per epoch / every N steps.',
      });
    }
    return findings;
  },
};

export const rule = gcCollectInLoop;
