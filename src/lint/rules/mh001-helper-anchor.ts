// MH001: where a finding reached through a helper of the file sits. A caller's scope reports the forward
// pass it runs through a helper at its own call (`self.do_prediction(cluster)`). When no call of that
// helper in the file needs its graph (each is under no_grad or is itself reported as evaluation or
// inference through it), the helper is the fix point: decorating it fixes every path at once and breaks
// none, so the finding moves to the helper's forward pass with a decorator fix on the helper. When some
// call may need the graph (the helper also serves a training step), the unwrapped call stays the fix point.
//
// This runs after the per-scope findings are assembled (they are cached relative to their own scope; the
// helper lies in another scope), on the findings of this version, so nothing of it is cached across edits.
import { childByField, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import type { Fix, RuleFinding } from '../types';
import { callsByScope, scopeOf } from '../analysis/models';
import { forwardsFeedingBackward } from '../analysis/backprop';
import { gradMaybeOffAt, gradOffAt } from '../analysis/gradstate';
import { isModelMethod, reachesGradients } from '../analysis/inference';
import { callSites, helperForward, helperForwardCalls } from '../analysis/indirect';

interface Routed {
  readonly finding: RuleFinding;
  readonly call: SyntaxNode;
  readonly caller: SyntaxNode;
  readonly helper: SyntaxNode;
  readonly forward: SyntaxNode;
}

/** The call node a finding spans, or null. */
function callAt(file: SourceFile, finding: RuleFinding): SyntaxNode | null {
  const calls = file.nodesOfType('call');
  for (let i = firstStartingAtOrAfter(calls, finding.start); i < calls.length && calls[i].start === finding.start; i++) {
    if (calls[i].end === finding.end) return calls[i];
  }
  return null;
}

/**
 * A finding at a call that runs one helper of the file which itself holds the forward pass (one level:
 * deeper chains stay at the call, where the message names the whole route).
 */
function routed(file: SourceFile, finding: RuleFinding): Routed | null {
  const call = callAt(file, finding);
  if (call === null) return null;
  const route = helperForward(file, call);
  if (route === null || route.path.length !== 2 || route.external !== null) return null;
  const forward = route.path[1];
  const helper = scopeOf(forward);
  const caller = scopeOf(call);
  if (helper === null || caller === null || helper === caller || helper.type !== 'function_definition') return null;
  // A model's own method may be called by other files for training (`policy.act` in an update): leave it.
  if (isModelMethod(file, helper) || reachesGradients(file, helper)) return null;
  return { finding, call, caller, helper, forward };
}

/** `scope` runs a forward pass with autograd on, other than through `helper`, whose output trains nothing. */
function otherRecordingForward(file: SourceFile, scope: SyntaxNode, helper: SyntaxNode): boolean {
  const feeding = forwardsFeedingBackward(file, scope);
  const recording = (c: SyntaxNode): boolean => !gradOffAt(file, c) && !gradMaybeOffAt(file, c) && !feeding.has(c);
  if ((callsByScope(file).get(scope)?.forwards ?? []).some(recording)) return true;
  return helperForwardCalls(file, scope).some((c) => {
    const route = helperForward(file, c);
    return route !== null && scopeOf(route.path[route.path.length - 1]) !== helper && recording(c);
  });
}

function nameOf(file: SourceFile, fn: SyntaxNode): string {
  return file.textOf(childByField(fn, 'name') ?? fn);
}

/**
 * `findings` (sorted by start) with those reached through a helper that no call of the file needs with
 * grad replaced by one finding at the helper's forward pass. `decorate` builds the decorator fix.
 */
export function anchorAtHelpers(
  file: SourceFile,
  findings: RuleFinding[],
  decorate: (fn: SyntaxNode) => Fix | null,
  evaluationCall: (scope: SyntaxNode, call: SyntaxNode) => boolean,
): RuleFinding[] {
  const byHelper = new Map<SyntaxNode, Routed[]>();
  for (const f of findings) {
    if (f.fix === null || !f.message.includes('(through ')) continue; // no fix: a path shared with training
    const r = routed(file, f);
    if (r === null) continue;
    const list = byHelper.get(r.helper);
    if (list === undefined) byHelper.set(r.helper, [r]);
    else list.push(r);
  }
  if (byHelper.size === 0) return findings;
  const moved = new Set<RuleFinding>();
  const added: RuleFinding[] = [];
  for (const [helper, routes] of byHelper) {
    const reportingScopes = new Set(routes.map((r) => r.caller));
    const reported = new Set(routes.map((r) => r.call));
    const calls = callSites(file).get(helper) ?? [];
    // Every call of the helper records nothing, is reported as evaluation, or is another evaluation call of
    // a reporting scope (one finding per scope: `train()`'s second `model_eval(dev_loader, ...)`). A call
    // of a reporting scope that feeds a training step (`self._update(self._run_batch(x))`) is none of these.
    const needsNoGraph = (c: SyntaxNode): boolean => {
      if (gradOffAt(file, c) || reported.has(c)) return true;
      const scope = scopeOf(c);
      return scope !== null && reportingScopes.has(scope) && evaluationCall(scope, c);
    };
    if (!calls.every(needsNoGraph)) continue;
    // The caller's one finding stands for all its evaluation forwards: with another of its own (greedy
    // decoding's loop after `encode_source(...)`), decorating the helper alone would leave that one recording.
    if ([...reportingScopes].some((scope) => otherRecordingForward(file, scope, helper))) continue;
    // Already reported in the helper itself (its own evaluation context): the callers' findings are the same path.
    if (findings.some((f) => f.start === routes[0].forward.start)) continue;
    const fix = decorate(helper);
    if (fix === null) continue;
    const first = routes[0];
    const name = nameOf(file, helper);
    const callers = [...reportingScopes].map((s) => (s.type === 'function_definition' ? `\`${nameOf(file, s)}\`` : 'module code'));
    const message = first.finding.message
      .replace(/ \(through `[^`]*`\)/, ` (in \`${name}\`, as ${callers.join(' and ')} call${callers.length === 1 ? 's' : ''} it; no call of it in this file needs its graph)`)
      .replace(/\(or decorate (`[^`]*`|this code) with/, `(or decorate \`${name}\` with`)
      // The note on who calls the caller now reads as if about the helper: name the caller.
      .replace('(Nothing in this file calls it:', first.caller.type === 'function_definition' ? `(Nothing in this file calls \`${nameOf(file, first.caller)}\`:` : '(Nothing in this file calls it:');
    for (const r of routes) moved.add(r.finding);
    added.push({ start: first.forward.start, end: first.forward.end, message, fix });
  }
  return [...findings.filter((f) => !moved.has(f)), ...added].sort((a, b) => a.start - b.start);
}
