// Where a file switches a network's parameters' `requires_grad` on or off by hand: the forms GAN and
// distillation code writes (`netG.requires_grad_(False)`, StyleGAN's `requires_grad(generator, False)`,
// CycleGAN's `set_requires_grad([netD_A, netD_B], False)`, `freeze(model)`, and the loop
// `for p in netG.parameters(): p.requires_grad = False`). A network whose parameters are off produces
// outputs without autograd history, so rules that need that history ask here first.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { positionalArguments } from './context';
import { calleeMethod } from './imports';
import { frozenTarget, keyOf, scopeOf } from './models';
import { VersionMemo } from '../session';

/** One switch of a network's parameters: `off` true (frozen), false (trainable again) or null (a flag whose value the file does not show). */
export interface GradToggle {
  readonly node: SyntaxNode;
  readonly target: string;
  readonly off: boolean | null;
}

const memo = new VersionMemo<readonly GradToggle[]>('grad-toggles');

const TOGGLE_CALL = /requires_grad|toggle_grad|^freeze|^unfreeze/i;

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

function callOff(file: SourceFile, call: SyntaxNode, method: string): boolean | null {
  if (/^unfreeze/i.test(method)) return false;
  if (/^freeze/i.test(method)) return true;
  const args = childByField(call, 'arguments');
  const text = args === null ? '' : file.textOf(args);
  // `x.requires_grad_()` with no argument switches gradients on (its default is True).
  if (method === 'requires_grad_' && positionalArguments(call).length === 0 && !/requires_grad\s*=/.test(text)) return false;
  return literalOff(text);
}

/** Every toggle of the file, in source order. */
export function gradToggles(file: SourceFile): readonly GradToggle[] {
  return memo.get(file, compute);
}

/**
 * What a rule reading toggles of other scopes depends on: each toggle's network, value and scope kind
 * (positions within a scope are covered by that scope's own memo).
 */
export function gradTogglesSignature(file: SourceFile): string {
  return gradToggles(file)
    .map((t) => {
      const scope = scopeOf(t.node);
      const name = scope === null ? '-' : scope.type === 'module' ? '<module>' : file.textOf(childByField(scope, 'name') ?? scope);
      return `${t.target}:${t.off}:${name}`;
    })
    .join(',');
}

function compute(file: SourceFile): GradToggle[] {
  const toggles: GradToggle[] = [];
  for (const call of file.nodesOfType('call')) {
    const method = calleeMethod(file, call) ?? '';
    if (!TOGGLE_CALL.test(method)) continue;
    const off = callOff(file, call, method);
    for (const target of callTargets(file, call, method)) toggles.push({ node: call, target, off });
  }
  for (const assignment of file.nodesOfType('assignment')) {
    const left = childByField(assignment, 'left');
    const right = childByField(assignment, 'right');
    if (left?.type !== 'attribute' || right === null || file.textOf(childByField(left, 'attribute') ?? left) !== 'requires_grad') continue;
    const target = frozenTarget(file, childByField(left, 'object'));
    if (target !== null) toggles.push({ node: assignment, target, off: literalOff(file.textOf(right)) });
  }
  return toggles.sort((a, b) => a.node.start - b.node.start);
}
