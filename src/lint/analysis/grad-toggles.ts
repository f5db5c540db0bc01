// Where a file switches a network's parameters' `requires_grad` on or off by hand (the forms are in
// grad-toggle-sites.ts). A network whose parameters are off produces outputs without autograd history, so
// rules that need that history ask here first. The toggles are collected per top-level statement by the
// model facts' walk (models.ts), so a new version re-walks only the statements an edit rebuilt.
import { childByField, type SourceFile } from '../syntax';
import { scopeOf, unitGradToggles } from './models';
import { unitsOf } from './unitcache';
import { VersionMemo } from '../session';
import type { GradToggle } from './grad-toggle-sites';

export type { GradToggle } from './grad-toggle-sites';

const memo = new VersionMemo<readonly GradToggle[]>('grad-toggles');

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

/** Calls before assignments at one start, an enclosing call before the call it holds: the order of a scan of the file's calls, then its assignments. */
function sourceOrder(a: GradToggle, b: GradToggle): number {
  if (a.node.start !== b.node.start) return a.node.start - b.node.start;
  if (a.node.type !== b.node.type) return a.node.type === 'call' ? -1 : 1;
  return b.node.end - a.node.end;
}

function compute(file: SourceFile): GradToggle[] {
  // Each statement's toggles come in its walk's (reverse) order; a stable sort keeps a call's networks in the order it names them.
  return unitsOf(file)
    .flatMap((unit) => unitGradToggles(file, unit))
    .sort(sourceOrder);
}
