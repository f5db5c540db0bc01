// MH005 empty-cache-in-loop: `torch.cuda.empty_cache()` inside the per-step loop.
import { calleeName } from '../analysis/imports';
import { callsNamed } from '../analysis/calls';
import { enclosingStepLoop, isOccasionalInLoop } from '../analysis/steps';
import { removeStatement, statementOfCall } from '../analysis/call-edits';
import type { Rule, RuleFinding } from '../types';

const EMPTY_CACHE = new Set(['torch.cuda.empty_cache', 'torch.cuda.memory.empty_cache']);

export const emptyCacheInLoop: Rule = {
  code: 'MH005',
  name: 'empty-cache-in-loop',
  severity: 'warning',
  summary: '`torch.cuda.empty_cache()` inside the per-step loop slows every step and frees nothing that live tensors hold.',
  check(file) {
    const findings: RuleFinding[] = [];
    if (!file.text.includes('empty_cache')) return findings; // one memchr-speed scan saves walking every call
    for (const call of callsNamed(file, 'empty_cache')) {
      const name = calleeName(file, call);
      if (name === null || !EMPTY_CACHE.has(name)) continue;
      const loop = enclosingStepLoop(file, call);
      if (loop === null || isOccasionalInLoop(file, call, loop)) continue;
      const stmt = statementOfCall(call);
      const edit = stmt === null ? null : removeStatement(file, stmt);
      findings.push({
        start: call.start,
        end: call.end,
        message:
          '`torch.cuda.empty_cache()` runs every step: it returns cached blocks to the driver, so the next step pays cudaMalloc ' +
          'again (slower, more fragmentation) while memory held by live tensors is not freed at all. Remove it, or call it ' +
          'once per epoch / every N steps if another process needs the memory.',
        fix: edit === null ? null : { title: 'Remove `torch.cuda.empty_cache()` from the step loop', edits: [edit] },
      });
    }
    return findings;
  },
};

export const rule = emptyCacheInLoop;
