// MH001 missing-no-grad: a forward pass in evaluation/inference code while autograd records. Every
// intermediate activation is then kept for a backward pass that never comes.
import { childByField, contains, firstNamedChild, firstStartingAtOrAfter, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import type { Fix, Rule, RuleFinding } from '../types';
import { enclosingLoops, positionalArguments, keywordArgument } from '../analysis/context';
import { importBindings, qualifiedName } from '../analysis/imports';
import { backwardTargets, callsByScope, computesGradients, enclosingClass, forwardReceiver, inputGradientSites, isModelKey, keyOf, scopeOf } from '../analysis/models';
import { nodesInScope } from '../analysis/scope-nodes';
import { callsWithin } from '../analysis/calls';
import { gradMaybeOffAt, gradOffAt } from '../analysis/gradstate';
import { factsSignature, flowOf, scopeSignature, Taint } from '../analysis/flow';
import { checkScopes, combine, ScopeFindingsMemo } from '../analysis/unitcache';
import { VersionMemo } from '../session';
import { forwardsFeedingBackward } from '../analysis/backprop';
import { backpropagatesAfter, calledInFile, historyCutInScope, inferenceContext, inferenceSignature, isModelMethod, isReturnedClosure, noGradStatement, reachesGradients, type InferenceKind } from '../analysis/inference';
import { methodForwardCalls, methodForwardsSignature } from '../analysis/method-forwards';
import { importedMethodForwardCalls } from '../analysis/imported-method-forwards';
import { importedFunctionForwardCalls } from '../analysis/imported-function-forwards';
import { sharedPhaseLoop } from '../analysis/phase-branches';
import { iteratesEvalData } from '../analysis/eval-loops';
import { flagPathsSignature, flagSelectedEval, guardingFlag } from '../analysis/flag-paths';
import { anchorAtHelpers } from './mh001-helper-anchor';
import { isFrozenNetwork } from '../analysis/frozen-networks';
import { graphFreeIntent } from '../analysis/volatile-inputs';
import { gradOffCallbacksSignature, handedOnlyGradOff } from '../analysis/grad-off-callbacks';
import { calledOnlyGradOffByImporters, methodCalledOnlyGradOffByImporters } from '../analysis/importer-grad-off';
import { ownInferenceDataPass } from '../analysis/imported-data-passes';
import { callSites, helperForward, helperForwardCalls, helperTextsSignature, resolutionSignature, type HelperForward } from '../analysis/indirect';

const EVAL_TOKENS = new Set(['eval', 'evaluate', 'evaluation', 'evaluating', 'validate', 'validation', 'val', 'valid', 'test', 'testing', 'predict', 'prediction', 'predictions', 'infer', 'inference']);
const TRAINING_TOKENS = new Set(['train', 'training', 'fit', 'optimize', 'update', 'attack', 'adversarial', 'adv', 'backward', 'grad', 'gradient', 'gradients', 'saliency', 'finetune', 'tune']);
const TEST_TOKENS = new Set(['test', 'testing']);
const TRACING_METHODS = new Set(['export', 'trace', 'trace_module', 'dynamo_export', 'symbolic_trace']);
const TRACING = /(^|\.)(onnx\.export|jit\.trace|jit\.trace_module|export\.export|dynamo_export|fx\.symbolic_trace)$/;

function nameTokens(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/_+/)
    .filter(Boolean);
}

interface Marker {
  readonly offset: number;
  readonly receiver: string;
  readonly evaluating: boolean;
}

interface ScopeInfo {
  readonly skip: boolean;
  readonly markers: readonly Marker[];
  readonly evalName: boolean;
  /** Where the scope takes gradients with respect to inputs (an attack, a saliency map, test-time adaptation). */
  readonly inputGradients: readonly SyntaxNode[];
}

const scopeCache = new VersionMemo<ScopeInfo>('MH001.scopeInfo');

function scopeInfo(file: SourceFile, scope: SyntaxNode): ScopeInfo {
  return scopeCache.keyed(file, scope, () => computeScopeInfo(file, scope));
}

function computeScopeInfo(file: SourceFile, scope: SyntaxNode): ScopeInfo {
  const markers: Marker[] = [];
  let tracing = false;
  const calls = file.nodesOfType('call');
  for (let i = firstStartingAtOrAfter(calls, scope.start); i < calls.length && calls[i].start < scope.end; i++) {
    const call = calls[i];
    if (scopeOf(call) !== scope) continue;
    const fn = childByField(call, 'function');
    if (fn === null) continue;
    if (fn.type !== 'attribute') continue;
    const method = file.textOf(childByField(fn, 'attribute') ?? fn);
    if (TRACING_METHODS.has(method)) {
      const name = qualifiedName(file, fn);
      if (name !== null && TRACING.test(name)) tracing = true;
    }
    if (method !== 'eval' && method !== 'train') continue;
    const receiver = keyOf(file, childByField(fn, 'object'));
    if (receiver === null) continue;
    const args = positionalArguments(call);
    if (args.length > 1 || (method === 'eval' && args.length > 0)) continue;
    const mode = args[0] ?? keywordArgument(file, call, 'mode');
    const evaluating = method === 'eval' || (mode !== null && file.textOf(mode) === 'False');
    markers.push({ offset: call.start, receiver, evaluating });
  }
  return {
    skip: tracing || isTestFunction(file, scope),
    markers,
    evalName: scope.type === 'function_definition' && isEvalFunctionName(file, scope),
    inputGradients: computesGradients(file, scope, true) ? inputGradientSites(file, scope) : [],
  };
}

/**
 * Gradients with respect to inputs taken at the forward's loop level or around it (`x.requires_grad_()`
 * before or in the loop of an FGSM attack): its graph may be what they need. One taken only in another
 * loop of the scope (a GAN's generator iterations) says nothing of a separate validation loop.
 */
function underInputGradients(scope: SyntaxNode, info: ScopeInfo, call: SyntaxNode): boolean {
  return info.inputGradients.some((site) => {
    // A site in a nested function runs whenever that function is called: take it as scope-wide.
    const region = scopeOf(site) === scope ? (enclosingLoops(site)[0] ?? scope) : scope;
    return contains(region, call);
  });
}

/**
 * The forward runs once the scope's optimisation of its inputs is over: it sits in no loop of the scope, a
 * loop before it backpropagates (a GAN projector's `latent.requires_grad = True` and its Adam loop over the
 * latent), and nothing after it in the scope takes gradients (the final `img = g_ema([latent])`, only saved).
 * The input gradients served that loop; this forward's graph serves nothing. A single attack step
 * (`x.requires_grad_()`, `loss.backward()` outside a loop) is left alone: its forward may be the attack's.
 */
function afterInputOptimization(file: SourceFile, scope: SyntaxNode, call: SyntaxNode): boolean {
  if (enclosingLoops(call).some((l) => contains(scope, l))) return false;
  const gradients = callsWithin(file, scope).filter((c) => backwardTargets(file, c) !== null);
  if (gradients.some((c) => c.start >= call.end)) return false;
  return gradients.some((c) => enclosingLoops(c).some((l) => contains(scope, l) && l.end <= call.start));
}

function isEvalFunctionName(file: SourceFile, fn: SyntaxNode): boolean {
  const tokens = nameTokens(file.textOf(childByField(fn, 'name') ?? fn));
  if (!tokens.some((t) => EVAL_TOKENS.has(t)) || tokens.some((t) => TRAINING_TOKENS.has(t))) return false;
  // pytest/unittest functions named test_* check behaviour (shapes, gradients), not evaluation loops.
  if (tokens.some((t) => TEST_TOKENS.has(t)) && !tokens.some((t) => EVAL_TOKENS.has(t) && !TEST_TOKENS.has(t))) {
    if (isTestSuite(file) || hasAssert(fn)) return false;
  }
  return true;
}

/** `evaluate`, `test`, `run_validation`: named as an evaluation function (asserts in it or not), not as training. */
function namedLikeEvaluation(file: SourceFile, fn: SyntaxNode): boolean {
  const tokens = nameTokens(file.textOf(childByField(fn, 'name') ?? fn));
  return tokens.some((t) => EVAL_TOKENS.has(t)) && !tokens.some((t) => TRAINING_TOKENS.has(t));
}

/** A unit test (pytest/unittest): it checks behaviour, memory during a test is not the point. */
export function isTestFunction(file: SourceFile, scope: SyntaxNode): boolean {
  if (scope.type !== 'function_definition') return false;
  const tokens = nameTokens(file.textOf(childByField(scope, 'name') ?? scope));
  // Outside a test suite, an `assert` is the only sign of a test, and a test returns nothing (pytest warns
  // on a returned value): `def test(model, users)` that returns its metrics is an evaluation routine,
  // whatever sanity `assert`s it makes on the way. In a pytest/unittest file, `test*` functions are collected.
  return tokens[0] === 'test' && (isTestSuite(file) || (hasAssert(scope) && !returnsValue(scope)));
}

/** A `return <value>` of the function itself (nested definitions are their own functions). */
function returnsValue(fn: SyntaxNode): boolean {
  const body = childByField(fn, 'body');
  const stack = body === null ? [] : [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') continue;
    if (n.type === 'return_statement' && namedChildren(n).some((c) => c.type !== 'comment')) return true;
    for (const c of n.children) stack.push(c);
  }
  return false;
}

function isTestSuite(file: SourceFile): boolean {
  const imports = importBindings(file);
  for (const b of imports.values()) if (/^(pytest|unittest|hypothesis)(\.|$)/.test(b.qualified)) return true;
  return file.nodesOfType('class_definition').some((c) => /TestCase/.test(file.textOf(childByField(c, 'superclasses') ?? c)));
}

function hasAssert(fn: SyntaxNode): boolean {
  const body = childByField(fn, 'body');
  if (body === null) return false;
  const stack = [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'assert_statement') return true;
    for (const c of n.children) stack.push(c);
  }
  return false;
}

type EvalContext = { readonly kind: 'eval-mode'; readonly marker: Marker } | { readonly kind: 'name' | 'loader' | 'volatile' | 'no-grad-binding' };

function evalContext(file: SourceFile, info: ScopeInfo, call: SyntaxNode, receiver: string): EvalContext | null {
  // The latest .eval()/.train() on this module (or on a module containing it) before the call.
  let latest: Marker | null = null;
  for (const m of info.markers) {
    if (m.offset >= call.start) break;
    if (m.receiver === receiver || receiver.startsWith(`${m.receiver}.`)) latest = m;
  }
  if (latest !== null) return latest.evaluating ? { kind: 'eval-mode', marker: latest } : null;
  for (const loop of enclosingLoops(call)) if (iteratesEvalData(file, loop)) return { kind: 'loader' };
  return info.evalName ? { kind: 'name' } : null;
}

/**
 * A method named like evaluation code without a loop of its own (`def evaluate(self, batch)`) is
 * usually a per-batch hook that a framework or a caller elsewhere runs, often under no_grad.
 */
function frameworkMethod(scope: SyntaxNode): boolean {
  if (scope.type !== 'function_definition' || enclosingClass(scope) === null) return false;
  const body = childByField(scope, 'body');
  const stack = body === null ? [] : [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'for_statement' || n.type === 'while_statement') return false;
    if (n.type === 'function_definition' || n.type === 'class_definition') continue;
    for (const c of n.children) stack.push(c);
  }
  return true;
}

/** The function returns a value with autograd history: its caller may well backpropagate it. */
function returnsGraph(file: SourceFile, scope: SyntaxNode): boolean {
  const flow = flowOf(file, scope);
  const body = childByField(scope, 'body');
  if (body === null) return false;
  const stack = [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') continue;
    if (n.type === 'return_statement' || n.type === 'yield') {
      const value = firstNamedChild(n);
      if (value !== null && flow.taintOf(value) === Taint.Tainted) return true;
    }
    for (const c of n.children) stack.push(c);
  }
  return false;
}

function torchName(file: SourceFile): string | null {
  for (const b of importBindings(file).values()) if (b.qualified === 'torch' && b.statement.type === 'import_statement') return b.local;
  return null;
}

const eols = new VersionMemo<string>('MH001.eol');

/** The file's line break for inserted lines (scanned once per version, not once per fix). */
function eolOf(file: SourceFile): string {
  return eols.get(file, (f) => (f.text.includes('\r\n') ? '\r\n' : '\n'));
}

function decoratorFix(file: SourceFile, scope: SyntaxNode): Fix | null {
  if (scope.type !== 'function_definition' || scope.children[0]?.type === 'async') return null;
  const torch = torchName(file);
  if (torch === null) return null;
  const line = file.lineOf(scope.start);
  const lineStart = file.lineStarts[line];
  const indent = /^[ \t]*/.exec(file.lineText(line))?.[0] ?? '';
  if (lineStart + indent.length !== scope.start) return null; // `def` not at the start of its line
  const eol = eolOf(file);
  const name = file.textOf(childByField(scope, 'name') ?? scope);
  return { title: `Decorate \`${name}\` with @${torch}.no_grad()`, edits: [{ start: lineStart, end: lineStart, newText: `${indent}@${torch}.no_grad()${eol}` }] };
}

/**
 * Decorating a function that also trains would switch its training off: then wrap only the statement
 * around the forward pass (the evaluation loop) in `with torch.no_grad():`.
 */
function noGradFix(file: SourceFile, scope: SyntaxNode, call: SyntaxNode): Fix | null {
  if (scope.type === 'function_definition' && !reachesGradients(file, scope)) return decoratorFix(file, scope);
  return wrapFix(file, scope, call);
}

function wrapFix(file: SourceFile, scope: SyntaxNode, call: SyntaxNode): Fix | null {
  const stmt = noGradStatement(file, scope, call);
  return stmt === null ? null : wrapStatementFix(file, stmt);
}

const SIMPLE_STATEMENTS = new Set(['expression_statement', 'return_statement']);

/** The forward's own simple statement (`pred = net(Variable(x, volatile=True))`), wrapped alone. */
function ownStatementFix(file: SourceFile, call: SyntaxNode): Fix | null {
  for (let n: SyntaxNode | null = call; n !== null; n = n.parent) {
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') return null;
    if (n.parent !== null && (n.parent.type === 'block' || n.parent.type === 'module')) return SIMPLE_STATEMENTS.has(n.type) ? wrapStatementFix(file, n) : null;
  }
  return null;
}

function wrapStatementFix(file: SourceFile, stmt: SyntaxNode): Fix | null {
  const torch = torchName(file);
  if (torch === null) return null;
  const first = file.lineOf(stmt.start);
  const last = file.lineOf(stmt.end);
  const lineStart = file.lineStarts[first];
  const indent = /^[ \t]*/.exec(file.lineText(first))?.[0] ?? '';
  if (lineStart + indent.length !== stmt.start) return null; // shares its line with other code
  const rest = file.text.slice(stmt.end, file.lineStarts[last + 1] ?? file.text.length);
  if (!/^[ \t]*(#[^\n]*)?\r?\n?$/.test(rest)) return null;
  // Re-indenting would change the text of a string spanning lines.
  // Only the statement's strings (by start, in document order): a scan of the file's strings per fix was quadratic in a long file.
  const strings = file.nodesOfType('string');
  for (let i = firstStartingAtOrAfter(strings, stmt.start); i < strings.length && strings[i].start < stmt.end; i++) {
    const s = strings[i];
    if (s.end <= stmt.end && file.lineOf(s.start) !== file.lineOf(s.end)) return null;
  }
  const unit = indent.includes('\t') ? '\t' : '    ';
  const eol = eolOf(file);
  const edits = [{ start: lineStart, end: lineStart, newText: `${indent}with ${torch}.no_grad():${eol}${unit}` }];
  for (let line = first + 1; line <= last; line++) {
    if (file.lineText(line).trim() === '') continue;
    edits.push({ start: file.lineStarts[line], end: file.lineStarts[line], newText: unit });
  }
  return { title: `Wrap this statement in \`with ${torch}.no_grad():\``, edits };
}

const findingsCache = new ScopeFindingsMemo('MH001');

function check(file: SourceFile): RuleFinding[] {
  const calls = callsByScope(file);
  // No forward pass in the file. An inference routine of another file handed a module (`beam_search(src, model)`,
  // `self.policy.sample(s)`) is no evidence: whether it already runs under no_grad is in that file, and on the
  // accuracy corpus such calls were fine more often than not (2 of 6 were real). A module method whose output
  // this file backpropagates elsewhere records a graph, though (method-forwards.ts): those are candidates.
  // With the project, a module method defined in another file can be read (imported-method-forwards.ts), and
  // so can a routine of another file handed the model (imported-function-forwards.ts).
  const project = file.session.project;
  if (calls.size === 0 && project === null) return [];
  // The helpers' texts are per scope (helperTextsSignature): an edit in one method of a giant class
  // re-checks the scopes that can reach it, not every scope of the file.
  // The fixes spell no_grad with the file's first `import torch [as x]` (torchName): which one comes first can
  // change while the set of imports (in factsSignature) stays the same.
  const signature = combine(file, 'MH001', () => [factsSignature(file), String(isTestSuite(file)), eolOf(file) === '\r\n' ? 'crlf' : 'lf', torchName(file) ?? '', inferenceSignature(file), resolutionSignature(file), flagPathsSignature(file), methodForwardsSignature(file), gradOffCalleesSignature(file), gradOffCallbacksSignature(file), project?.lookup.stamp ?? '']);
  const findings = checkScopes(
    file,
    findingsCache,
    signature,
    (scope) => scopeFindings(file, scope),
    // With the grad state around a nested function (enclosingGradToken), which its checks read.
    (scope) => `${helperTextsSignature(file, scope)}|${scopeSignature(file, scope, '')}`,
  );
  return anchorAtHelpers(
    file,
    findings,
    (fn) => decoratorFix(file, fn),
    (scope, call) => evaluationCall(file, scope, call),
  );
}

/**
 * A call of `scope` that runs evaluation or inference with nothing backpropagating its output: the test
 * checkScope applies to a candidate, for calls after the scope's first finding (anchorAtHelpers asks).
 */
function evaluationCall(file: SourceFile, scope: SyntaxNode, call: SyntaxNode): boolean {
  if (forwardsFeedingBackward(file, scope).has(call)) return false;
  const helper = helperForward(file, call);
  if (helper === null) return false;
  const context = evalContext(file, scopeInfo(file, scope), call, helper.receiver);
  if (context !== null) return context.kind !== 'name' && !backpropagatesAfter(file, scope, call);
  return inferenceContext(file, scope, call) !== null;
}

const gradOffCalleesMemo = new VersionMemo<ReadonlySet<SyntaxNode>>('MH001.gradOffCallees');

/**
 * Functions of the file that every call of the file runs with autograd off: under no_grad at the call,
 * or from a function that is itself only called so (followed to a fixed point).
 */
function calledOnlyGradOff(file: SourceFile): ReadonlySet<SyntaxNode> {
  return gradOffCalleesMemo.get(file, () => {
    const out = new Set<SyntaxNode>();
    const sites = callSites(file);
    for (let changed = true; changed; ) {
      changed = false;
      for (const [fn, calls] of sites) {
        if (out.has(fn) || calls.length === 0) continue;
        if (!calls.every((c) => gradOffAt(file, c) || out.has(scopeOf(c) ?? c))) continue;
        out.add(fn);
        changed = true;
      }
    }
    return out;
  });
}

/** calledOnlyGradOff's functions by name: a scope's findings read it, so it is part of the cache key. */
function gradOffCalleesSignature(file: SourceFile): string {
  return [...calledOnlyGradOff(file)].map((fn) => `${file.textOf(childByField(fn, 'name') ?? fn)}@${file.lineOf(fn.start)}`).join(',');
}

const scopeFindingsMemo = new VersionMemo<RuleFinding[]>('MH001.scopeFindings');

/** A scope's findings in this version (also asked for the helpers a caller reaches, to report each path once). */
function scopeFindings(file: SourceFile, scope: SyntaxNode): RuleFinding[] {
  return scopeFindingsMemo.keyed(file, scope, () => checkScope(file, scope), []); // []: recursion guard
}

/**
 * A forward pass of the scope itself, a call that reaches one through helpers of this file, or a module
 * method this file backpropagates elsewhere (`self.policy.sample(s)`, method-forwards.ts).
 */
interface Candidate {
  readonly call: SyntaxNode;
  readonly receiver: string;
  readonly helper: HelperForward | null;
  readonly method: boolean;
  /** `\`SentenceVAE.inference\` in model.py:42`: the forward pass is in another module's method. */
  readonly definedIn?: string;
  /** The call's result carries no history (an imported method that returns only detached values). */
  readonly outputCut?: boolean;
}

function candidates(file: SourceFile, scope: SyntaxNode): Candidate[] {
  const out: Candidate[] = [];
  for (const call of callsByScope(file).get(scope)?.forwards ?? []) {
    const receiver = forwardReceiver(file, call);
    if (receiver !== null) out.push({ call, receiver, helper: null, method: false });
  }
  for (const call of helperForwardCalls(file, scope)) {
    const helper = helperForward(file, call);
    if (helper !== null) out.push({ call, receiver: helper.receiver, helper, method: false });
  }
  for (const { call, receiver } of methodForwardCalls(file, scope)) out.push({ call, receiver, helper: null, method: true });
  for (const { call, receiver } of namedForwardCalls(file, scope)) {
    if (!out.some((c) => c.call === call)) out.push({ call, receiver, helper: null, method: true });
  }
  for (const { call, receiver, definedIn, outputCut } of importedMethodForwardCalls(file, scope)) {
    if (!out.some((c) => c.call === call)) out.push({ call, receiver, helper: null, method: false, definedIn, outputCut });
  }
  // A routine of another module handed the model (`beam_search(src, model, ...)`) is part of the caller's
  // evaluation. One named like evaluation (`evaluate(model, loader)`) is an evaluation function of its own:
  // its file reports it, not every call; so is one that walks a data set of its own and trains nothing
  // (swa's `utils.bn_update(loader, model)`).
  for (const { call, receiver, definedIn, callee } of importedFunctionForwardCalls(file, scope)) {
    if (out.some((c) => c.call === call) || namedLikeEvaluation(callee.file, callee.node) || ownInferenceDataPass(callee.file, callee.node)) continue;
    out.push({ call, receiver, helper: null, method: false, definedIn });
  }
  return out.sort((a, b) => a.call.start - b.call.start);
}

/** `<what>_forward`: a method named for running the module; hook registration runs nothing. */
const NAMED_FORWARD = /^\w+_forward$/;
const NOT_NAMED_FORWARD = /hook|^(register|enable|disable|remove)_/;

/**
 * `net.net_forward(x, weights)` (MAML's functional fast weights), `model.set_forward(x)` (few-shot
 * learners): the `<what>_forward` methods research code adds beside `forward`, called on a model of the
 * scope. Judged like a module method (its output is not followed by the flow analysis): reported only where
 * every use of it is cut from the history, so a call whose output a loss may still take is left alone.
 * Not `set_forward_loss`-style routines (a loss built on the forward) nor `register_forward_hook`.
 */
function namedForwardCalls(file: SourceFile, scope: SyntaxNode): { readonly call: SyntaxNode; readonly receiver: string }[] {
  const out: { call: SyntaxNode; receiver: string }[] = [];
  for (const call of nodesInScope(file, scope, CALL_NODES)) {
    const fn = childByField(call, 'function');
    if (fn?.type !== 'attribute' || scopeOf(call) !== scope) continue;
    const name = file.textOf(childByField(fn, 'attribute') ?? fn);
    if (!NAMED_FORWARD.test(name) || NOT_NAMED_FORWARD.test(name)) continue;
    const key = keyOf(file, childByField(fn, 'object'));
    if (key !== null && key !== 'self' && isModelKey(file, key)) out.push({ call, receiver: key });
  }
  return out;
}

const CALL_NODES = new Set(['call']);

const STORING_METHODS = new Set(['append', 'extend', 'insert', 'add', 'appendleft', 'update', 'put', 'push']);

/** A function on the helper path stores something: a container method call or an attribute/subscript assignment. */
function helperStores(file: SourceFile, helper: HelperForward): boolean {
  for (const node of helper.path.slice(1)) {
    const fn = scopeOf(node);
    if (fn === null || fn.type !== 'function_definition') continue;
    const stack = [fn];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n !== fn && (n.type === 'function_definition' || n.type === 'class_definition')) continue;
      for (const c of n.children) stack.push(c);
      if (n.type === 'call') {
        const callee = childByField(n, 'function');
        if (callee?.type === 'attribute' && STORING_METHODS.has(file.textOf(childByField(callee, 'attribute') ?? callee))) return true;
      } else if (n.type === 'assignment' || n.type === 'augmented_assignment') {
        const left = childByField(n, 'left');
        if (left?.type === 'attribute' || left?.type === 'subscript') return true;
      }
    }
  }
  return false;
}

/** A function on the helper path reports this forward itself (its own evaluation context): one finding per path. */
function reportedInHelper(file: SourceFile, helper: HelperForward): boolean {
  return helper.path.slice(1).some((node) => {
    const scope = scopeOf(node);
    if (scope === null) return false;
    // A helper with a forward its author meant to be graph-free (`forward(split)`'s volatile test branch)
    // is judged there, reported or already under no_grad: the helper path names the helper's first
    // forward (the training branch's), not the one this call's arguments select.
    if (nodesInScope(file, scope, CALL_NODES).some((c) => graphFreeIntent(file, scope, c) !== null)) return true;
    return scopeFindings(file, scope).some((f) => f.start === node.start);
  });
}

const INFERENCE_WHY: Record<InferenceKind, string> = {
  'inference-name': 'in inference code (nothing here backpropagates it)',
  'no-backward-loop': 'in a loop that never reaches backward() or an optimizer step (inference)',
  'after-training': 'after the training steps, for prediction only (nothing backpropagates it)',
  'after-step': "inside the training loop after this iteration's backward/step, for testing or sampling only",
  rollout: 'in a rollout loop that keeps none of its history for the update that follows (acting only)',
  'history-cut': 'in a function that trains nothing and keeps none of its history (only `.data`, `.item()`, `.detach()` or numpy of it leaves)',
};

/**
 * At most one finding per scope for evaluation code (its first forward pass without no_grad); for
 * inference found structurally, one per gradient-free region (a script's separate test loops).
 */
function checkScope(file: SourceFile, scope: SyntaxNode): RuleFinding[] {
  const forwards = candidates(file, scope);
  if (forwards.length === 0) return [];
  const info = scopeInfo(file, scope);
  if (info.skip) return [];
  // A module's `forward` runs under whatever its caller does; only a forward pass it makes on a `volatile=True`
  // input is its own evaluation (the author asked for no graph there, and the flag no longer gives it).
  const moduleForward = scope.type === 'function_definition' && enclosingClass(scope) !== null && /^(forward|__call__)$/.test(file.textOf(childByField(scope, 'name') ?? scope));
  // A step function returned by a factory (`def make_val_step(): def step(x): ...; return step`): who calls it, and under what grad mode, is not visible here.
  if (isReturnedClosure(file, scope)) return [];
  // Run only by other modules of the project, every time under no_grad: nothing here records a graph.
  if (scope.type === 'function_definition' && !calledInFile(file, scope) && (calledOnlyGradOffByImporters(file, scope) || methodCalledOnlyGradOffByImporters(file, scope))) return [];
  // Never called here, only handed as a callback to calls that run under no_grad: it runs inside them.
  if (scope.type === 'function_definition' && handedOnlyGradOff(file).has(scope)) return [];
  const findings: RuleFinding[] = [];
  const regions = new Set<SyntaxNode>();
  let evalFound = false;
  /** The forwards already reported. */
  const reported: SyntaxNode[] = [];
  const where = scope.type === 'function_definition' ? `\`${file.textOf(childByField(scope, 'name') ?? scope)}\`` : 'this code';
  const crossFile =
    scope.type === 'function_definition' && !calledInFile(file, scope) ? ' (Nothing in this file calls it: if its caller in another file runs it under no_grad, this is already fine.)' : '';
  for (const { call, receiver, helper, method, definedIn, outputCut } of forwards) {
    // One finding per function, unless the earlier ones sit on early-exit paths this forward never shares.
    if (scope.type === 'function_definition' && findings.length > 0 && !reported.every((r) => onEarlyExitBranch(r, call))) break;
    const intent = graphFreeIntent(file, scope, call);
    if (moduleForward && intent === null) continue;
    if (gradOffAt(file, call) || gradMaybeOffAt(file, call) || isFrozenNetwork(file, receiver, scope)) continue;
    if (underInputGradients(scope, info, call) && !afterInputOptimization(file, scope, call)) continue;
    if (helper !== null && reportedInHelper(file, helper)) continue;
    // The flow analysis does not follow a method's output: report it only where every use is visibly cut
    // from its history (`return action.detach().cpu().numpy()[0]`), never where it may be returned for a loss.
    if (method && !historyCutInScope(file, scope, call)) continue;
    // Shared by training and evaluation (`if train: loss.backward()`), and called with `train=False` with
    // autograd on: the forward of the evaluation path records a graph nobody backpropagates.
    const flagPath = findings.length === 0 ? flagSelectedEval(file, scope) : null;
    if (flagPath !== null && guardingFlag(file, scope, call) !== flagPath.flag) {
      const site = shorten(file.textOf(flagPath.site));
      // No fix: decorating or wrapping here would switch off the training path too.
      findings.push({
        start: call.start,
        end: call.end,
        message:
          `\`${receiver}(…)\` runs with autograd recording when \`${site}\` selects the evaluation path (\`${flagPath.flag}\` is ${shorten(flagPath.value)}: no backward follows), ` +
          `so every intermediate activation stays allocated for a backward pass that never comes. Make that call under \`with torch.no_grad():\`, ` +
          `or run this function's loop under \`with torch.set_grad_enabled(${flagPath.condition}):\`. Do not decorate ${where} with \`@torch.no_grad()\`: it also trains.`,
        fix: null,
      });
      break;
    }
    // A loop over phases that trains only when its variable says so (`for split in splits:` ...
    // `if split == 'train': loss.backward()`): the forward it runs on the other passes feeds a loss that
    // nothing backpropagates. Checked before the backward test below, which sees the training pass only.
    const phaseLoop = findings.length === 0 ? sharedPhaseLoop(file, call, scope) : null;
    if (phaseLoop !== null) {
      reported.push(call);
      // No fix: decorating or wrapping here would switch off the training pass too.
      findings.push({
        start: call.start,
        end: call.end,
        message:
          `\`${receiver}(…)\` runs with autograd recording on every pass of \`for ${phaseLoop.subject} in …\`, but only the training pass backpropagates ` +
          `(every gradient call is under a test of \`${phaseLoop.subject}\`), so on the evaluation passes every intermediate activation stays allocated for a backward pass that never comes. ` +
          `Run the pass under \`with torch.set_grad_enabled(…):\` given the loop's own training test of \`${phaseLoop.subject}\`. Do not decorate ${where} with \`@torch.no_grad()\`: it also trains.`,
        fix: null,
      });
      break;
    }
    // Its output is backpropagated here: the graph is needed (an attack, test-time adaptation...).
    if (forwardsFeedingBackward(file, scope).has(call)) continue;
    const context: EvalContext | null = intent !== null ? { kind: intent } : evalContext(file, info, call, receiver);
    if (context !== null) {
      if (evalFound && !reported.every((r) => onEarlyExitBranch(r, call) || separateModuleLoop(file, scope, r, call))) continue;
      // A module's own `infer()`/`predict()` runs under whatever its caller does (WaveGlow's `infer`, called
      // under no_grad by its inference script): its name alone is no evidence; a caller of this file that
      // runs it with autograd on is reported at the call.
      if (context.kind === 'name' && (returnsGraph(file, scope) || frameworkMethod(scope) || isModelMethod(file, scope))) continue;
      if (backpropagatesAfter(file, scope, call)) continue;
      const why =
        context.kind === 'eval-mode'
          ? `after \`${context.marker.receiver}.eval()\``
          : context.kind === 'loader'
            ? 'over an evaluation loader'
            : context.kind === 'volatile'
              ? 'on a `volatile=True` input (ignored since PyTorch 0.4: it no longer turns autograd off)'
              : context.kind === 'no-grad-binding'
                ? 'on an input bound inside a `with torch.no_grad():` block that ends before this call (a tensor does not carry no_grad out of the block)'
                : 'in evaluation code';
      evalFound = true;
      reported.push(call);
      const found = finding(file, scope, call, receiver, why, where, crossFile + inMethod(definedIn), helper);
      // Wrap only the forward's own statement: `volatile` (or the binding block) covered that forward alone, and the function
      // (a `forward(split)` with a training branch) may record graphs for training elsewhere.
      findings.push(intent !== null ? { ...found, fix: ownStatementFix(file, call) } : found);
      continue;
    }
    const inference = inferenceContext(file, scope, call, outputCut === true);
    if (inference === null) continue;
    // A rollout's history can also leave through the helper's own side effects (REINFORCE's
    // `policy.saved_log_probs.append(m.log_prob(a))` inside `select_action`).
    if (inference.kind === 'rollout' && helper !== null && helperStores(file, helper)) continue;
    // Found by what leaves the function alone: a helper of the file that every caller runs under no_grad
    // (a DQN's `compute_q_values_for_next_states` called inside `with torch.no_grad():`) records nothing.
    if (inference.kind === 'history-cut' && calledOnlyGradOff(file).has(scope)) continue;
    if (regions.has(inference.region) || findings.some((f) => f.start >= inference.region.start && f.end <= inference.region.end)) continue;
    regions.add(inference.region);
    reported.push(call);
    findings.push(finding(file, scope, call, receiver, INFERENCE_WHY[inference.kind], where, crossFile + inMethod(definedIn), helper));
  }
  // Separate paths of one function: a decorator would fix them all at once, so each fix wraps its own statement.
  if (scope.type === 'function_definition' && findings.length > 1) return findings.map((f, i) => ({ ...f, fix: graphFreeIntent(file, scope, reported[i]) !== null ? f.fix : wrapFix(file, scope, reported[i]) }));
  return findings;
}

/**
 * The earlier forward runs in an `if` branch that ends by leaving the function (`if name: ...; return`)
 * and `call` comes after that `if`: two separate paths through the function (a single prediction, then
 * the evaluation loop), each its own evaluation code.
 */
function onEarlyExitBranch(earlier: SyntaxNode, call: SyntaxNode): boolean {
  for (let n: SyntaxNode | null = earlier.parent; n !== null && n.type !== 'function_definition'; n = n.parent) {
    if (n.type !== 'block' || n.parent?.type !== 'if_statement' || childByField(n.parent, 'consequence') !== n) continue;
    if (call.start < n.parent.end || !contains(n.parent.parent ?? n.parent, call)) continue;
    const statements = namedChildren(n).filter((c) => c.type !== 'comment');
    const last = statements[statements.length - 1];
    if (last?.type === 'return_statement' || last?.type === 'raise_statement') return true;
  }
  return false;
}

/**
 * In module-level code, `call` sits in a top-level loop of its own over evaluation data, apart from the
 * top-level statement of the earlier finding (a script's final test loop after the training loop that evaluated periodically):
 * another evaluation loop, reported on its own.
 */
function separateModuleLoop(file: SourceFile, scope: SyntaxNode, earlier: SyntaxNode, call: SyntaxNode): boolean {
  if (scope.type !== 'module') return false;
  const top = (n: SyntaxNode): SyntaxNode => {
    let t = n;
    while (t.parent !== null && t.parent.type !== 'module') t = t.parent;
    return t;
  };
  const own = top(call);
  if (own === top(earlier) || (own.type !== 'for_statement' && own.type !== 'while_statement')) return false;
  // A loop over the test set (`for data in tqdm(enumerate(testdataloader))`), not any later loop of the script.
  return enclosingLoops(call).some((l) => contains(own, l) && iteratesEvalData(file, l));
}

function shorten(text: string): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
}

function finding(
  file: SourceFile,
  scope: SyntaxNode,
  call: SyntaxNode,
  receiver: string,
  why: string,
  where: string,
  crossFile: string,
  helper: HelperForward | null,
): RuleFinding {
  const subject = `\`${receiver}(…)\` runs`;
  const route = helper === null ? '' : ` (${throughHelpers(file, helper)})`;
  return {
    start: call.start,
    end: call.end,
    message:
      `${subject} ${why}${route} while autograd is recording, so every intermediate activation stays allocated for a backward pass that never comes. ` +
      `Run it under \`with torch.no_grad():\` (or decorate ${where} with \`@torch.no_grad()\`).${crossFile}${otherFile(helper)}`,
    fix: noGradFix(file, scope, call),
  };
}

/**
 * `through \`self._run_batch\``. No line numbers: the finding is cached with its scope, and the helper's
 * line moves with edits elsewhere.
 */
function throughHelpers(file: SourceFile, helper: HelperForward): string {
  const names = helper.path.slice(0, -1).map((c) => `\`${file.textOf(childByField(c, 'function') ?? c)}\``);
  return `through ${names.join(' → ')}`;
}

/** The verdict rests on a method of another module: say which (the fix stays here, around the call). */
function inMethod(definedIn: string | undefined): string {
  return definedIn === undefined ? '' : ` (${definedIn} runs the module's forward passes, without no_grad.)`;
}

/** The verdict rests on a function this file cannot show. */
function otherFile(helper: HelperForward | null): string {
  if (helper?.external == null) return '';
  return ` (The helper hands the module or its output to \`${helper.external}\` from another file: if that backpropagates it, this is part of a training step.)`;
}


export const missingNoGrad: Rule = {
  code: 'MH001',
  name: 'missing-no-grad',
  severity: 'warning',
  summary: 'Forward pass in evaluation/inference code without torch.no_grad()/inference_mode(): activations are kept for a backward that never runs.',
  check,
};

export const rule = missingNoGrad;
