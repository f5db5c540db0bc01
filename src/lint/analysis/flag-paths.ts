// A function shared by training and evaluation, its path chosen by one of its parameters:
// `def iteration(self, epoch, loader, train=True)` whose every backward()/optimizer step sits under
// `if train:`, `def run_epoch(model, loader, optimizer=None)` under `if optimizer:`, or
// `def _model_loop(args, loop_type, ...)` under `if is_train:` with `is_train = (loop_type == 'train')`.
// A call site that selects the evaluation path (`train=False`, the optimizer left out, `'val'`) outside
// no_grad runs the forward passes with autograd on for nothing (MH001); inside the function nothing tells
// the two paths apart but the parameter.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { keywordArgument, positionalArguments } from './context';
import { callsNamed, callsWithin } from './calls';
import { backwardTargets, isGradientCall, scopeOf } from './models';
import { gradMaybeOffAt, gradOffAt } from './gradstate';
import { parameterDefaultText, parameterNames, positionalParameters } from './parameters';
import { importSignature } from './imports';
import { NodeMemo } from '../session';

/**
 * How a function tests one of its parameters to take the training path: `if train:` / `if optimizer:`
 * (truthy), `if optimizer is not None:` (not-none), `if mode == 'train':` (equals), directly or through a
 * local name bound once to such a test (`is_train = (loop_type == 'train')`).
 */
export interface TrainingTest {
  /** The parameter that decides (`train`, `optimizer`, `loop_type`). */
  readonly param: string;
  readonly kind: 'truthy' | 'not-none' | 'equals';
  /** For `equals`: the string that selects training (`train`). */
  readonly value: string | null;
  /** The condition as the function writes it (`is_train`, `optimizer is not None`): what set_grad_enabled can take. */
  readonly condition: string;
}

export interface FlagSelectedEval {
  /** The parameter that decides (`train`). */
  readonly flag: string;
  /** A call site that selects the evaluation path with autograd on (`self.iteration(..., train=False)`). */
  readonly site: SyntaxNode;
  /** What the site gives the parameter (`False`, `None` when left out with that default, `'val'`). */
  readonly value: string;
  /** The training test, written as the function's own condition. */
  readonly condition: string;
}

/**
 * The evaluation path of `fn` selected at a call site that records a graph, or null: every gradient call of
 * `fn` (backward, optimizer step, zero_grad) sits under one training test of a parameter, and some call of
 * `fn` in this file gives that parameter a literal the test rejects (a falsy literal, `None`, another
 * string; its default when the argument is left out) outside no_grad.
 */
export function flagSelectedEval(file: SourceFile, fn: SyntaxNode): FlagSelectedEval | null {
  if (fn.type !== 'function_definition') return null;
  const test = evalFlag(file, fn);
  if (test === null) return null;
  const params = positionalParameters(file, fn);
  const name = file.textOf(childByField(fn, 'name') ?? fn);
  const isMethod = fn.parent?.type === 'block' && fn.parent.parent?.type === 'class_definition';
  for (const site of callsNamed(file, name)) {
    const callee = childByField(site, 'function');
    const args = childByField(site, 'arguments');
    if (callee === null || args === null) continue;
    // `f(*args)` / `f(**kw)`: which value the parameter gets is not visible.
    if (args.children.some((c) => c.type === 'list_splat' || c.type === 'dictionary_splat')) continue;
    const offset = isMethod && callee.type === 'attribute' ? 1 : 0;
    const index = params.indexOf(test.param);
    const arg = keywordArgument(file, site, test.param) ?? (index < 0 ? undefined : positionalArguments(site)[index - offset]) ?? null;
    const value = arg !== null ? file.textOf(arg) : parameterDefaultText(file, fn, test.param);
    if (value === null || !rejects(file, test, arg, value)) continue;
    if (gradOffAt(file, site) || gradMaybeOffAt(file, site)) continue;
    return { flag: test.param, site, value, condition: test.kind === 'truthy' && value === 'None' ? `${test.param} is not None` : test.condition };
  }
  return null;
}

const FALSY = new Set(['False', 'None', '0']);

/** The value given (`arg`, or the default's text when the call leaves it out) fails the training test. */
function rejects(file: SourceFile, test: TrainingTest, arg: SyntaxNode | null, value: string): boolean {
  if (test.kind === 'truthy') return FALSY.has(value);
  if (test.kind === 'not-none') return value === 'None';
  // A string literal other than the training one; a default's text is read the same way.
  const literal = arg !== null ? stringValue(file, arg) : stringText(value);
  return literal !== null && literal !== test.value;
}

/**
 * The training test guarding every gradient call of `fn`, or null. It reads `fn`'s subtree and the
 * imports only (gradient calls are known by their names resolved through imports), so it is kept on the
 * function node: flagPathsSignature asks for every function of the file on every version.
 */
function evalFlag(file: SourceFile, fn: SyntaxNode): TrainingTest | null {
  return flagMemo.get(file, fn, importSignature(file), () => {
    const gradientCalls = callsWithin(file, fn).filter((c) => scopeOf(c) === fn && (backwardTargets(file, c) !== null || isGradientCall(file, c)));
    if (gradientCalls.length === 0) return null;
    const params = parameterNames(file, fn);
    const aliases = testAliases(file, fn, params);
    const tests = gradientCalls.map((c) => trainingTestAt(file, fn, c, params, aliases));
    const first = tests[0];
    if (first === null) return null;
    return tests.every((t) => t !== null && t.param === first.param && t.kind === first.kind && t.value === first.value) ? first : null;
  });
}

const flagMemo = new NodeMemo<TrainingTest | null>('flag-paths.flag');

/**
 * The training test of the nearest enclosing `if` (within `fn`) whose consequence holds `node` and whose
 * condition tests a parameter, or null. Other `if`s on the way (`if args.mixed_precision:` around one of
 * two backward calls) only narrow the path further.
 */
function trainingTestAt(file: SourceFile, fn: SyntaxNode, node: SyntaxNode, params: readonly string[], aliases: ReadonlyMap<string, TrainingTest>): TrainingTest | null {
  for (let n: SyntaxNode | null = node.parent; n !== null && n !== fn; n = n.parent) {
    const holder = n.parent;
    if (n.type !== 'block' || holder === null || (holder.type !== 'if_statement' && holder.type !== 'elif_clause') || childByField(holder, 'consequence') !== n) continue;
    const condition = childByField(holder, 'condition');
    const test = condition === null ? null : testOf(file, condition, params, aliases);
    if (test !== null) return test;
  }
  return null;
}

/** The parameter of the innermost training test whose body holds `call` (within `fn`), or null. */
export function guardingFlag(file: SourceFile, fn: SyntaxNode, call: SyntaxNode): string | null {
  const params = parameterNames(file, fn);
  return trainingTestAt(file, fn, call, params, testAliases(file, fn, params))?.param ?? null;
}

/** A condition that tests a parameter for the training path, read as a TrainingTest. */
function testOf(file: SourceFile, cond: SyntaxNode, params: readonly string[], aliases: ReadonlyMap<string, TrainingTest>): TrainingTest | null {
  if (cond.type === 'parenthesized_expression') {
    const inner = namedChildren(cond)[0];
    return inner === undefined ? null : testOf(file, inner, params, aliases);
  }
  const text = file.textOf(cond).replace(/\s+/g, ' ');
  if (cond.type === 'identifier') {
    if (params.includes(text)) return { param: text, kind: 'truthy', value: null, condition: text };
    const alias = aliases.get(text);
    return alias === undefined ? null : { ...alias, condition: text };
  }
  if (cond.type !== 'comparison_operator') return null;
  const operands = namedChildren(cond);
  const operator = cond.children.filter((c) => !c.named).map((c) => file.textOf(c)).join(' ');
  if (operands.length !== 2) return null;
  const [a, b] = operands;
  if (operator === 'is not' && b.type === 'none' && a.type === 'identifier' && params.includes(file.textOf(a))) {
    return { param: file.textOf(a), kind: 'not-none', value: null, condition: text };
  }
  if (operator !== '==') return null;
  const subject = stringValue(file, b) !== null ? a : b;
  const word = stringValue(file, b) ?? stringValue(file, a);
  if (word === null || subject.type !== 'identifier' || !params.includes(file.textOf(subject))) return null;
  return { param: file.textOf(subject), kind: 'equals', value: word, condition: text };
}

/**
 * Local names bound once in `fn` (outside nested functions) to a training test of a parameter:
 * `is_train = (loop_type == 'train')`. A name bound twice, or a parameter rebound, is not a test.
 */
function testAliases(file: SourceFile, fn: SyntaxNode, params: readonly string[]): ReadonlyMap<string, TrainingTest> {
  const bound = new Map<string, TrainingTest | null>();
  for (const assign of file.nodesOfType('assignment')) {
    if (assign.start < fn.start || assign.end > fn.end || scopeOf(assign) !== fn) continue;
    const left = childByField(assign, 'left');
    const right = childByField(assign, 'right');
    if (left?.type !== 'identifier') continue;
    const name = file.textOf(left);
    const test = right === null || bound.has(name) || params.includes(name) ? null : testOf(file, right, params, new Map());
    bound.set(name, test);
  }
  const out = new Map<string, TrainingTest>();
  for (const [name, test] of bound) if (test !== null && test.kind !== 'truthy') out.set(name, test);
  return out;
}

function stringValue(file: SourceFile, n: SyntaxNode): string | null {
  return n.type === 'string' ? stringText(file.textOf(n)) : null;
}

/** The contents of a plain string literal's text (`'val'` -> val), or null for anything else. */
function stringText(text: string): string | null {
  const m = /^[rRuU]?(['"])([^'"\\{}]*)\1$/.exec(text);
  return m === null ? null : m[2];
}

/**
 * Which functions of the file have a flag-selected evaluation path, and through which flag: MH001's cached
 * scope findings must change when a call site elsewhere starts or stops passing `flag=False`.
 */
export function flagPathsSignature(file: SourceFile): string {
  const out: string[] = [];
  for (const fn of file.nodesOfType('function_definition')) {
    const found = flagSelectedEval(file, fn);
    if (found !== null) out.push(`${file.textOf(childByField(fn, 'name') ?? fn)}:${found.flag}:${found.value}:${file.textOf(found.site)}`);
  }
  return out.join(',');
}
