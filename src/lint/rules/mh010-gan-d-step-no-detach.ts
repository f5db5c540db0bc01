// MH010 gan-d-step-no-detach: in a GAN's discriminator step, the discriminator runs on the generator's
// output without `.detach()`. The D loss's backward then runs through the whole generator graph too
// (its activations stay allocated until then and G's weight gradients are computed, only to be zeroed
// or, worse, accumulated into the next G step), while only D's optimizer steps.
import { childByField, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import type { Fix, Rule, RuleFinding } from '../types';
import { positionalArguments } from '../analysis/context';
import { backwardTargets, callsByScope, forwardReceiver, keyOf, nameWords, scopeOf, type ScopeCalls } from '../analysis/models';
import { gradToggles, gradTogglesSignature } from '../analysis/grad-toggles';
import { traceForwards } from '../analysis/backprop';
import { flowOf, flowSignature, type ScopeFlow } from '../analysis/flow';
import { gradOffAt } from '../analysis/gradstate';
import { optimizedModels, optimizedSignature } from '../analysis/optimized';
import { callsNamed } from '../analysis/calls';
import { functionsNamed } from '../analysis/values';
import { checkScopes, combine, ScopeFindingsMemo } from '../analysis/unitcache';
import { functionNetworkCalled, functionNetworks, functionNetworksSignature } from '../analysis/function-networks';

type Role = 'D' | 'G';

const D_TOKENS = new Set(['d', 'dis', 'disc', 'discrim', 'discriminator', 'discriminators', 'critic', 'netd', 'optd', 'optimizerd', 'dnet']);
const G_TOKENS = new Set(['g', 'gen', 'generator', 'generators', 'netg', 'optg', 'optimizerg', 'gnet']);
/** A discriminator input that mixes real and fake samples for a gradient penalty (WGAN-GP, R1...). */
const PENALTY_INPUT = /interp|hat|alpha|mix|penalty|\bgp\b/i;

/** The GAN role a name gives (`netD`, `self.D_optimizer`, `critic`, `gen_opt`), from its last segment. */
function roleOf(key: string): Role | null {
  const tokens = nameWords(key);
  const d = tokens.some((t) => D_TOKENS.has(t));
  const g = tokens.some((t) => G_TOKENS.has(t));
  return d === g ? null : d ? 'D' : 'G';
}

/** The optimizer step that follows a backward in its scope (`d_optimizer.step()`), or null. */
function nextStep(file: SourceFile, scope: SyntaxNode, backward: SyntaxNode): SyntaxNode | null {
  const steps = callsNamed(file, 'step');
  for (let i = firstStartingAtOrAfter(steps, backward.end); i < steps.length && steps[i].start < scope.end; i++) {
    const fn = childByField(steps[i], 'function');
    if (fn?.type === 'attribute') return steps[i];
  }
  return null;
}

/** Whose parameters the step after `backward` updates: from the optimizer's construction, else its name, else the loss's name. */
function steppedRole(file: SourceFile, scope: SyntaxNode, backward: SyntaxNode, targets: readonly SyntaxNode[]): Role | null {
  const step = nextStep(file, scope, backward);
  const fn = step === null ? null : childByField(step, 'function');
  const optimizer = fn === null ? null : keyOf(file, childByField(fn, 'object'));
  if (optimizer !== null) {
    const models = optimizedModels(file).byOptimizer.get(optimizer);
    if (models !== undefined) {
      const roles = new Set([...models].map(roleOf));
      if (roles.size === 1) return [...roles][0];
      return null;
    }
    const role = roleOf(optimizer);
    if (role !== null) return role;
  }
  for (const t of targets) {
    const key = keyOf(file, t);
    const role = key === null ? null : lossRole(key);
    if (role !== null) return role;
  }
  return null;
}

/** `d_loss`, `loss_D`, `errD`, `D_cost`: the loss names a step by its network. */
function lossRole(key: string): Role | null {
  const last = key.slice(key.lastIndexOf('.') + 1);
  const stripped = last.replace(/^(loss|err|cost)_?|_?(loss|err|cost|total)$/gi, '');
  return stripped === last || stripped === '' ? null : roleOf(stripped);
}

/** The network a call runs: a module's forward pass (`netD(x)`), or a network written as a function (`D(x)`, function-networks.ts). */
function networkOf(file: SourceFile, call: SyntaxNode): string | null {
  return forwardReceiver(file, call) ?? functionNetworkCalled(file, call);
}

/** The network calls whose outputs flow into `roots` with history: module forward passes and function networks. */
function networkCallsFeeding(file: SourceFile, flow: ScopeFlow, roots: readonly SyntaxNode[]): Set<SyntaxNode> {
  const found = new Set<SyntaxNode>();
  traceForwards(file, flow, roots, found);
  // A function network is an ordinary call to the trace: it is seen among the calls on the paths.
  if (functionNetworks(file).size > 0) {
    traceForwards(file, flow, roots, new Set(), {
      reached: (call) => {
        if (functionNetworkCalled(file, call) !== null) found.add(call);
      },
    });
  }
  return found;
}

/** The generator forward passes whose output reaches `input` with history. */
function generatorOutputsIn(file: SourceFile, calls: ReadonlyMap<SyntaxNode, ScopeCalls>, flow: ScopeFlow, input: SyntaxNode): SyntaxNode[] {
  const found = networkCallsFeeding(file, flow, [input]);
  return [...found].filter((g) => roleOf(networkOf(file, g) ?? '') === 'G' && !gradOffAt(file, g) && !generatorFrozen(file, calls, scopeOf(g) ?? g, g));
}

/**
 * The generator's parameters may be switched off when its forward runs, so its output may have no
 * history and the D step cannot backpropagate into it. Positive evidence is required before flagging:
 * - a toggle of that generator earlier in the same scope decides (the last one wins; a flag whose value
 *   the file does not show is not evidence of history), as StyleGAN's `requires_grad(generator, False)`;
 * - without one, a freeze of that generator anywhere else in a training step of the file (later in the
 *   same loop, i.e. the previous iteration's, or in the G-step method that runs before this D step)
 *   may be what is in effect here: the file manages G's gradients by hand, so no finding.
 */
function generatorFrozen(file: SourceFile, calls: ReadonlyMap<SyntaxNode, ScopeCalls>, scope: SyntaxNode, forward: SyntaxNode): boolean {
  const receiver = networkOf(file, forward);
  const toggles = gradToggles(file).filter((t) => t.target === receiver);
  const before = toggles.filter((t) => t.node.end <= forward.start && scopeOf(t.node) === scope);
  if (before.length > 0) return before[before.length - 1].off !== false;
  return toggles.some((t) => {
    if (t.off === false) return false;
    const where = scopeOf(t.node);
    return where === scope || (where !== null && (calls.get(where)?.backwards.length ?? 0) > 0);
  });
}

function checkScope(file: SourceFile, calls: ReadonlyMap<SyntaxNode, ScopeCalls>, scope: SyntaxNode, backwards: readonly SyntaxNode[]): RuleFinding[] {
  const findings: RuleFinding[] = [];
  const reported = new Set<SyntaxNode>();
  const flow = flowOf(file, scope);
  for (const backward of backwards) {
    const targets = backwardTargets(file, backward) ?? [];
    if (targets.length === 0 || steppedRole(file, scope, backward, targets) !== 'D') continue;
    const feeding = networkCallsFeeding(file, flow, targets);
    for (const d of [...feeding].sort((a, b) => a.start - b.start)) {
      const receiver = networkOf(file, d);
      if (receiver === null || roleOf(receiver) !== 'D' || reported.has(d) || gradOffAt(file, d)) continue;
      const input = positionalArguments(d)[0];
      if (input === undefined || PENALTY_INPUT.test(file.textOf(input))) continue;
      const generators = generatorOutputsIn(file, calls, flow, input);
      if (generators.length === 0) continue;
      reported.add(d);
      const g = networkOf(file, generators[0]) ?? 'the generator';
      findings.push({
        start: d.start,
        end: d.end,
        message:
          `The discriminator step runs \`${receiver}(…)\` on \`${g}\`'s output without \`.detach()\`: its backward runs through the whole ` +
          `generator graph (keeping G's activations alive until then and computing G's weight gradients) although only the discriminator is ` +
          `updated here. Pass \`${file.textOf(input)}.detach()\`.`,
        fix: generatorGradsZeroedAfter(file, scope, backward, backwards) ? detachFix(file, input) : null,
      });
    }
  }
  return findings.sort((a, b) => a.start - b.start);
}

/**
 * The generator's gradients are zeroed after this D backward and before the next G step's backward
 * (`G.zero_grad()`, `opt_G.zero_grad()`, a `reset_grad()` helper): then what this backward adds to them
 * is discarded, and detaching changes nothing the program computes. Otherwise the G step's update may
 * include those gradients (a bug, but the fix would change the training): no autofix.
 */
function generatorGradsZeroedAfter(file: SourceFile, scope: SyntaxNode, backward: SyntaxNode, backwards: readonly SyntaxNode[]): boolean {
  const nextG = backwards.find((b) => b.start > backward.end && steppedRole(file, scope, b, backwardTargets(file, b) ?? []) === 'G');
  if (nextG === undefined) return false;
  for (const method of ['zero_grad', 'reset_grad']) {
    const calls = callsNamed(file, method);
    for (let i = firstStartingAtOrAfter(calls, backward.end); i < calls.length && calls[i].start < nextG.start; i++) {
      const fn = childByField(calls[i], 'function');
      if (fn?.type === 'identifier') {
        // A helper of the script's own (`reset_grad()`): it counts when its body zeroes the generator.
        if (functionsNamed(file, file.textOf(fn)).some((def) => zeroesGeneratorIn(file, def))) return true;
      } else if (zeroesGenerator(file, calls[i])) return true;
    }
  }
  return false;
}

function zeroesGeneratorIn(file: SourceFile, def: SyntaxNode): boolean {
  const calls = callsNamed(file, 'zero_grad');
  for (let i = firstStartingAtOrAfter(calls, def.start); i < calls.length && calls[i].start < def.end; i++) if (zeroesGenerator(file, calls[i])) return true;
  return false;
}

/** `netG.zero_grad()`, `optimizerG.zero_grad()` (an optimizer built from the generator's parameters only). */
function zeroesGenerator(file: SourceFile, call: SyntaxNode): boolean {
  const fn = childByField(call, 'function');
  const receiver = fn?.type === 'attribute' ? keyOf(file, childByField(fn, 'object')) : null;
  if (receiver === null) return false;
  const models = optimizedModels(file).byOptimizer.get(receiver);
  return models !== undefined ? [...models].every((m) => roleOf(m) === 'G') : roleOf(receiver) === 'G';
}

/**
 * `D(fake)` -> `D(fake.detach())`: the discriminator's loss and its gradients are unchanged (they never
 * depended on G's graph); only the generator's gradients from this backward, which the D step should
 * not produce, disappear. Offered for a plain name or attribute only.
 */
function detachFix(file: SourceFile, input: SyntaxNode): Fix | null {
  if (input.type !== 'identifier' && input.type !== 'attribute') return null;
  return { title: `Detach \`${file.textOf(input)}\` for the discriminator step`, edits: [{ start: input.end, end: input.end, newText: '.detach()' }] };
}

// Tracked: a scope's findings read callsNamed / functionsNamed lists, checked per key (not by index stamps).
const findingsCache = new ScopeFindingsMemo('MH010', true);

export const ganDStepNoDetach: Rule = {
  code: 'MH010',
  name: 'gan-d-step-no-detach',
  severity: 'warning',
  summary: "GAN discriminator step on the generator's output without `.detach()`: the D loss backpropagates through G for nothing.",
  check(file) {
    const calls = callsByScope(file);
    if (calls.size === 0) return [];
    // Beyond the scope: flows and model facts, optimizer bindings, `zero_grad` calls and helper functions defined elsewhere.
    // Only scopes with a backward and two networks can hold a finding: the others skip the memo, and a
    // file without any skips the file-wide signature too. Networks written as functions are not among the
    // scope's forward passes: any of them counts as two.
    const applies = (scope: SyntaxNode): boolean => {
      const c = calls.get(scope);
      return c !== undefined && c.backwards.length > 0 && (c.forwards.length >= 2 || functionNetworks(file).size > 0);
    };
    if (![...calls.keys()].some(applies)) return [];
    // generatorFrozen also asks whether each toggle's scope backpropagates: a scope's entry is kept
    // across edits of other scopes (and of other statements of a giant `def main():` around it).
    const togglesBackprop = (): string => gradToggles(file).map((t) => ((calls.get(scopeOf(t.node) ?? t.node)?.backwards.length ?? 0) > 0 ? '1' : '0')).join('');
    const signature = combine(file, 'MH010', () => [flowSignature(file), optimizedSignature(file), functionNetworksSignature(file), gradTogglesSignature(file), togglesBackprop()]);
    return checkScopes(file, findingsCache, signature, (scope) => checkScope(file, calls, scope, calls.get(scope)!.backwards), undefined, applies);
  },
};

export const rule = ganDStepNoDetach;
