// Networks a file freezes by hand (`requires_grad_(False)`, `p.requires_grad = False` over its parameters,
// or a helper of the file that does either to what it is given). A frozen network run on inputs without
// history builds no graph: MH001 leaves its forwards alone, MH002 the values computed from them.
import type { SourceFile, SyntaxNode } from '../syntax';
import { modelFacts } from './models';
import { frozenOnlyInOtherFunctions, frozenThroughHelpers } from './indirect';

/** Frozen in the file: `requires_grad_(False)` on it, or a call of a helper of the file that freezes what it is given. */
export function isFrozenNetwork(file: SourceFile, receiver: string, scope: SyntaxNode): boolean {
  const covers = (f: string): boolean => receiver === f || receiver.startsWith(`${f}.`);
  // A helper's parameter frozen inside the helper freezes what the helper is called with, not this name elsewhere.
  const facts = modelFacts(file);
  // Frozen and switched back on elsewhere (WGAN's critic, frozen only for the generator's step): whether it
  // records at this forward depends on the order, so its freeze is no evidence of a graph-free forward.
  const thawed = (f: string): boolean => [...facts.unfrozen].some((u) => f === u || f.startsWith(`${u}.`));
  for (const f of facts.frozen) if (covers(f) && !thawed(f) && !frozenOnlyInOtherFunctions(file, f, scope)) return true;
  for (const f of frozenThroughHelpers(file)) if (covers(f)) return true;
  return false;
}
