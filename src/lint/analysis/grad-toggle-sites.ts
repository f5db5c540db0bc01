// What one node switches of a network's `requires_grad`: the forms GAN and distillation code writes
// (`netG.requires_grad_(False)`, StyleGAN's `requires_grad(generator, False)`, CycleGAN's
// `set_requires_grad([netD_A, netD_B], False)`, `freeze(model)`, and the loop
// `for p in netG.parameters(): p.requires_grad = False`). Syntactic, so models.ts's per-statement walk
// collects them once (grad-toggles.ts lists the file's; the model facts' frozen/unfrozen are the literal ones).
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { positionalArguments } from './context';
import { calleeMethod } from './imports';
import { frozenTarget, keyOf } from './keys';

/** One switch of a network's parameters: `off` true (frozen), false (trainable again) or null (a flag whose value the file does not show). */
export interface GradToggle {
  readonly node: SyntaxNode;
  readonly target: string;
  readonly off: boolean | null;
  /**
   * The network's own switch with a bare literal flag (`x.requires_grad_(False)`, `x.requires_grad_()`,
   * `x.requires_grad_(requires_grad=True)`, `p.requires_grad = True`), not a helper's call nor an
   * expression: the switches the model facts count as frozen / unfrozen.
   */
  readonly literal: boolean;
}

const TOGGLE_CALL = /requires_grad|toggle_grad|^freeze|^unfreeze/i;
/** The arguments of a `requires_grad_` call whose flag is a literal (or left at its default, True). */
const LITERAL_ARGUMENTS = /^\(\s*((requires_grad\s*=\s*)?(True|False))?\s*\)$/;

/** `False` -> off, `True` -> on, anything else (a flag, an expression) -> unknown. */
function literalOff(text: string): boolean | null {
  if (/\bFalse\b/.test(text)) return true;
  if (/\bTrue\b/.test(text)) return false;
  return null;
}

/** The networks a toggle call names: its receiver for `x.requires_grad_()`, else its first argument or each element of a list/tuple there. */
function callTargets(file: SourceFile, call: SyntaxNode, method: string): string[] {
  const fn = childByField(call, 'function');
  if (method === 'requires_grad_' && fn?.type === 'attribute') {
    const target = frozenTarget(file, childByField(fn, 'object'));
    return target === null ? [] : [target];
  }
  const first = positionalArguments(call)[0];
  if (first === undefined) return [];
  const items = first.type === 'list' || first.type === 'tuple' ? namedChildren(first) : [first];
  return items.map((n) => keyOf(file, n)).filter((k): k is string => k !== null);
}

function callOff(call: SyntaxNode, method: string, text: string): boolean | null {
  if (/^unfreeze/i.test(method)) return false;
  if (/^freeze/i.test(method)) return true;
  // `x.requires_grad_()` with no argument switches gradients on (its default is True).
  if (method === 'requires_grad_' && positionalArguments(call).length === 0 && !/requires_grad\s*=/.test(text)) return false;
  return literalOff(text);
}

function callToggles(file: SourceFile, call: SyntaxNode): GradToggle[] {
  const method = calleeMethod(file, call) ?? '';
  if (!TOGGLE_CALL.test(method)) return [];
  const args = childByField(call, 'arguments');
  const text = args === null ? '' : file.textOf(args);
  const off = callOff(call, method, text);
  const literal = method === 'requires_grad_' && childByField(call, 'function')?.type === 'attribute' && LITERAL_ARGUMENTS.test(text);
  return callTargets(file, call, method).map((target) => ({ node: call, target, off, literal }));
}

function assignmentToggles(file: SourceFile, assignment: SyntaxNode): GradToggle[] {
  const left = childByField(assignment, 'left');
  const right = childByField(assignment, 'right');
  if (left?.type !== 'attribute' || right === null || file.textOf(childByField(left, 'attribute') ?? left) !== 'requires_grad') return [];
  const target = frozenTarget(file, childByField(left, 'object'));
  const text = file.textOf(right);
  return target === null ? [] : [{ node: assignment, target, off: literalOff(text), literal: text === 'False' || text === 'True' }];
}

/**
 * The toggles a call or an assignment makes (one per network it names), in the order it names them;
 * none for any other node. Reads the node's subtree and the loops around it up to its function.
 */
export function nodeGradToggles(file: SourceFile, node: SyntaxNode): GradToggle[] {
  if (node.type === 'call') return callToggles(file, node);
  if (node.type === 'assignment') return assignmentToggles(file, node);
  return [];
}
