// A function shared by training and evaluation, its path chosen by a flag parameter:
// `def iteration(self, epoch, loader, train=True)` whose every backward()/optimizer step sits under
// `if train:`. A call site that passes `train=False` outside no_grad runs the forward passes with autograd on
// for nothing (MH001); inside the function nothing tells the two paths apart but the flag.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { keywordArgument, positionalArguments } from './context';
import { callsNamed, callsWithin } from './calls';
import { backwardTargets, isGradientCall, scopeOf } from './models';
import { gradMaybeOffAt, gradOffAt } from './gradstate';
import { parameterNames, positionalParameters } from './parameters';
import { importSignature } from './imports';
import { NodeMemo } from '../session';

export interface FlagSelectedEval {
  /** The flag parameter (`train`). */
  readonly flag: string;
  /** A call site that selects the evaluation path with autograd on (`self.iteration(..., train=False)`). */
  readonly site: SyntaxNode;
}

/**
 * The evaluation path of `fn` selected by a flag at a call site that records a graph, or null: every
 * gradient call of `fn` (backward, optimizer step, zero_grad) is guarded by `if flag:` on a parameter, and
 * some call of `fn` in this file passes that parameter a literal `False` outside no_grad.
 */
export function flagSelectedEval(file: SourceFile, fn: SyntaxNode): FlagSelectedEval | null {
  if (fn.type !== 'function_definition') return null;
  const flag = evalFlag(file, fn);
  if (flag === null) return null;
  const params = positionalParameters(file, fn);
  const name = file.textOf(childByField(fn, 'name') ?? fn);
  const isMethod = fn.parent?.type === 'block' && fn.parent.parent?.type === 'class_definition';
  for (const site of callsNamed(file, name)) {
    const callee = childByField(site, 'function');
    if (callee === null) continue;
    const offset = isMethod && callee.type === 'attribute' ? 1 : 0;
    const arg = keywordArgument(file, site, flag) ?? positionalArguments(site)[params.indexOf(flag) - offset] ?? null;
    if (arg === null || file.textOf(arg) !== 'False') continue;
    if (gradOffAt(file, site) || gradMaybeOffAt(file, site)) continue;
    return { flag, site };
  }
  return null;
}

/**
 * The flag parameter guarding every gradient call of `fn`, or null. It reads `fn`'s subtree and the
 * imports only (gradient calls are known by their names resolved through imports), so it is kept on the
 * function node: flagPathsSignature asks for every function of the file on every version.
 */
function evalFlag(file: SourceFile, fn: SyntaxNode): string | null {
  return flagMemo.get(file, fn, importSignature(file), () => {
    const gradientCalls = callsWithin(file, fn).filter((c) => scopeOf(c) === fn && (backwardTargets(file, c) !== null || isGradientCall(file, c)));
    if (gradientCalls.length === 0) return null;
    const flags = new Set(gradientCalls.map((c) => guardingFlag(file, fn, c)));
    if (flags.size !== 1) return null;
    const [flag] = flags;
    return flag !== null && parameterNames(file, fn).includes(flag) ? flag : null;
  });
}

const flagMemo = new NodeMemo<string | null>('flag-paths.flag');

/** The parameter name of the innermost `if NAME:` whose body holds `call` (within `fn`), or null. */
export function guardingFlag(file: SourceFile, fn: SyntaxNode, call: SyntaxNode): string | null {
  for (let n: SyntaxNode | null = call.parent; n !== null && n !== fn; n = n.parent) {
    if (n.type !== 'block' || n.parent?.type !== 'if_statement' || childByField(n.parent, 'consequence') !== n) continue;
    const condition = childByField(n.parent, 'condition');
    return condition?.type === 'identifier' ? file.textOf(condition) : null;
  }
  return null;
}

/**
 * Which functions of the file have a flag-selected evaluation path, and through which flag: MH001's cached
 * scope findings must change when a call site elsewhere starts or stops passing `flag=False`.
 */
export function flagPathsSignature(file: SourceFile): string {
  const out: string[] = [];
  for (const fn of file.nodesOfType('function_definition')) {
    const found = flagSelectedEval(file, fn);
    if (found !== null) out.push(`${file.textOf(childByField(fn, 'name') ?? fn)}:${found.flag}:${file.textOf(found.site)}`);
  }
  return out.join(',');
}
