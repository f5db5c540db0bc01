// MH005 empty-cache-in-loop: `torch.cuda.empty_cache()` inside the per-step loop.
import { calleeName } from '../analysis/imports';
import { callsNamed } from '../analysis/calls';
import { containsStepLoop, enclosingStepLoop, isOccasionalInLoop } from '../analysis/steps';
import { enclosingLoops } from '../analysis/context';
import { forwardReceiver } from '../analysis/models';
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
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
      const loop = enclosingStepLoop(file, call) ?? inferenceLoop(file, call);
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

const LOOPS = new Set(['for_statement', 'while_statement']);
const SCOPES = new Set(['function_definition', 'class_definition', 'lambda']);
/** A model loaded or built per iteration: the loop walks models or checkpoints, not inputs. */
const LOADS_MODEL = /\b(load_state_dict|from_pretrained|load_checkpoint|torch\.load)\s*\(/;

/**
 * The innermost loop around `call` when it is an inference loop over inputs: its own body (not a nested
 * loop's) runs a forward pass of a model the loop neither binds nor loads (Restormer's `for file_ in
 * files: ... restored = model_restoration(input_)`), and it drives no per-step loop of its own (an
 * epoch loop). Each iteration is then one step of the same model on the next input, and the cache
 * `empty_cache()` hands back is what the next input's activations would reuse. A loop over models or
 * checkpoints (the model bound by the loop or loaded in it) frees one model's blocks for the next: not
 * a step.
 */
function inferenceLoop(file: SourceFile, call: SyntaxNode): SyntaxNode | null {
  const loop = enclosingLoops(call)[0];
  const body = loop === undefined ? null : childByField(loop, 'body');
  if (loop === undefined || body === null || containsStepLoop(file, loop)) return null;
  const receivers: string[] = [];
  const bound = new Set<string>();
  const target = childByField(loop, 'left');
  if (target !== null) for (const name of file.textOf(target).split(/[^\w.]+/)) if (name !== '') bound.add(name);
  const stack = [...body.children];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (SCOPES.has(n.type) || LOOPS.has(n.type)) continue;
    if (n.type === 'call') {
      const receiver = forwardReceiver(file, n);
      if (receiver !== null) receivers.push(receiver);
    } else if (n.type === 'assignment') {
      const left = childByField(n, 'left');
      if (left !== null) for (const name of file.textOf(left).split(/[^\w.]+/)) if (name !== '') bound.add(name);
    }
    for (const c of n.children) stack.push(c);
  }
  if (receivers.length === 0 || LOADS_MODEL.test(file.textOf(body))) return null;
  return receivers.some((r) => !bound.has(r) && !bound.has(r.split('.')[0])) ? loop : null;
}

export const rule = emptyCacheInLoop;
