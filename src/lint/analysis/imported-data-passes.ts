// A routine of another module that makes a whole pass over a data set of its own and trains nothing:
// swa's `utils.bn_update(loader, model)` (a forward per batch to re-estimate BatchNorm statistics),
// `utils.extract_features(loader, model)`. MH001 reports that loop in the routine's own file, where one
// `@torch.no_grad()` fixes every caller; the caller's call is the same path, reported once (as within one
// file a call of a helper the file flags itself is not reported again). Routines that run the model without
// walking data (`beam_search(src, model)`, a decoding loop over time steps) stay reported at their callers:
// their file's verdict depends on who calls them.
import type { SourceFile, SyntaxNode } from '../syntax';
import { contains } from '../syntax';
import { enclosingLoops } from './context';
import { walksData } from './data-loops';
import { gradMaybeOffAt, gradOffAt } from './gradstate';
import { inferenceContext } from './inference';
import { callsByScope } from './models';
import { iteratesBatches } from './steps';

/**
 * `fn` (in `file`, its own module) runs a forward pass of its own inside a loop over data, with autograd on,
 * in a place MH001's structural inference test takes as inference there (no backward/step reaches it).
 */
export function ownInferenceDataPass(file: SourceFile, fn: SyntaxNode): boolean {
  for (const call of callsByScope(file).get(fn)?.forwards ?? []) {
    if (gradOffAt(file, call) || gradMaybeOffAt(file, call)) continue;
    const overData = enclosingLoops(call).some((l) => contains(fn, l) && l.type === 'for_statement' && (iteratesBatches(file, l) || walksData(file, l)));
    if (overData && inferenceContext(file, fn, call) !== null) return true;
  }
  return false;
}
