// A loop shared by training and evaluation whose path is chosen per pass by a phase value:
// `for split in ["train", "valid"]: ... if split == "train": loss.backward(); optimizer.step()` and, in the
// same loop, `if split == "valid": tracker["z"] = torch.cat(...)`. The loop trains, but the branch that only
// runs when the phase says evaluation is evaluation code: no gradient step happens on that pass.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { callsWithin } from './calls';
import { backwardTargets, isGradientCall } from './models';

const EVAL_WORDS = /^(val|valid|validation|test|testing|eval|evaluation|dev|inference|predict)$/i;
const TRAIN_WORDS = /^(train|training)$/i;
/** Boolean flags that select the training path (`if train:`, `if is_training:`). */
const TRAIN_FLAG = /^(train|training|is_train|is_training|train_mode|do_train)$/;

type Phase = { readonly subject: string; readonly phase: 'train' | 'eval' };

function stringValue(file: SourceFile, n: SyntaxNode): string | null {
  if (n.type !== 'string') return null;
  return file.textOf(n).replace(/^[rbuf]*['"]+|['"]+$/gi, '');
}

/** Which phase a condition selects and on what (`split == "valid"` -> eval on `split`), or null. */
function phaseOfCondition(file: SourceFile, cond: SyntaxNode): Phase | null {
  if (cond.type === 'parenthesized_expression') {
    const inner = cond.children.find((c) => c.named);
    return inner === undefined ? null : phaseOfCondition(file, inner);
  }
  if (cond.type === 'identifier' && TRAIN_FLAG.test(file.textOf(cond))) return { subject: file.textOf(cond), phase: 'train' };
  if (cond.type === 'not_operator') {
    const arg = childByField(cond, 'argument');
    const inner = arg === null ? null : phaseOfCondition(file, arg);
    return inner === null ? null : { subject: inner.subject, phase: inner.phase === 'train' ? 'eval' : 'train' };
  }
  if (cond.type !== 'comparison_operator') return null;
  const operands = cond.children.filter((c) => c.named);
  const operators = cond.children.filter((c) => !c.named).map((c) => file.textOf(c));
  if (operands.length !== 2 || operators.length !== 1 || (operators[0] !== '==' && operators[0] !== '!=')) return null;
  const [a, b] = operands;
  const word = stringValue(file, b) ?? stringValue(file, a);
  const subject = stringValue(file, b) !== null ? a : b;
  if (word === null || (subject.type !== 'identifier' && subject.type !== 'attribute')) return null;
  const selected = TRAIN_WORDS.test(word) ? 'train' : EVAL_WORDS.test(word) ? 'eval' : null;
  if (selected === null) return null;
  const phase = operators[0] === '==' ? selected : selected === 'train' ? 'eval' : null; // `!= "val"` may be "test" too
  return phase === null ? null : { subject: file.textOf(subject), phase };
}

/**
 * The phase the innermost phase test between `node` and `scope` selects for it: the consequence of
 * `if split == "valid":`, or the `else:` of `if split == "train":`.
 */
function phaseAt(file: SourceFile, node: SyntaxNode, scope: SyntaxNode): Phase | null {
  let child = node;
  for (let p = node.parent; p !== null && p !== scope; child = p, p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      if (child.field !== 'consequence') continue;
      const cond = childByField(p, 'condition');
      const phase = cond === null ? null : phaseOfCondition(file, cond);
      if (phase !== null) return phase;
    } else if (p.type === 'else_clause' && p.parent?.type === 'if_statement') {
      const cond = childByField(p.parent, 'condition');
      const phase = cond === null ? null : phaseOfCondition(file, cond);
      if (phase !== null && phase.phase === 'train' && !p.parent.children.some((c) => c.type === 'elif_clause')) return { subject: phase.subject, phase: 'eval' };
    }
  }
  return null;
}

/**
 * True when `node` runs only on the evaluation pass of a shared train/eval `loop`: it sits under a phase
 * test that selects evaluation, and every gradient call of the loop (backward, optimizer step, zero_grad)
 * sits under a test of the same subject that selects training.
 */
export function onEvaluationPass(file: SourceFile, node: SyntaxNode, loop: SyntaxNode): boolean {
  const own = phaseAt(file, node, loop);
  return own !== null && own.phase === 'eval' && trainsOnlyWhen(file, loop, own.subject);
}

/**
 * The loop has gradient calls (backward, optimizer step, zero_grad), and every one of them sits under a
 * test of `subject` that selects training.
 */
function trainsOnlyWhen(file: SourceFile, loop: SyntaxNode, subject: string): boolean {
  let gradientCalls = 0;
  for (const c of callsWithin(file, loop)) {
    if (backwardTargets(file, c) === null && !isGradientCall(file, c)) continue;
    gradientCalls++;
    const phase = phaseAt(file, c, loop);
    if (phase === null || phase.phase !== 'train' || phase.subject !== subject) return false;
  }
  return gradientCalls > 0;
}

/**
 * The loop over phases (`for split in splits:`) whose every gradient call sits under a test of its own
 * variable that selects training (`if split == 'train': loss.backward()`), around a forward pass that no
 * phase test restricts to training: on the other passes that forward records a graph nobody uses. The
 * innermost such loop within `scope`, or null.
 */
export function sharedPhaseLoop(file: SourceFile, node: SyntaxNode, scope: SyntaxNode): { readonly loop: SyntaxNode; readonly subject: string } | null {
  for (let p = node.parent; p !== null && p !== scope; p = p.parent) {
    if (p.type !== 'for_statement') continue;
    const left = childByField(p, 'left');
    if (left?.type !== 'identifier') continue;
    const subject = file.textOf(left);
    if (phaseAt(file, node, p)?.phase === 'train') return null;
    if (trainsOnlyWhen(file, p, subject)) return { loop: p, subject };
  }
  return null;
}
