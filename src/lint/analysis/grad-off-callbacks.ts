// A function of this file that nothing here calls, but that the file hands as a callback to another call,
// every time with autograd off: MOSS-RLHF's `synchronize_forward_on_stage3(done, self._run_fake_forward)`,
// only inside the `@torch.no_grad()` `evaluate()`. Whatever calls the callback runs it inside that call,
// so under the caller's no_grad: its forward passes record nothing.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { gradOffAt } from './gradstate';
import { identifiersNamed } from './identifiers';
import { calledInFile } from './inference';
import { enclosingClass } from './models';
import { VersionMemo } from '../session';

const memo = new VersionMemo<ReadonlySet<SyntaxNode>>('gradOffCallbacks');

/** The uncalled functions of the file whose every reference is a call argument under no_grad (at least one). */
export function handedOnlyGradOff(file: SourceFile): ReadonlySet<SyntaxNode> {
  return memo.get(file, () => {
    const byName = new Map<string, SyntaxNode[]>();
    for (const fn of file.nodesOfType('function_definition')) {
      const name = childByField(fn, 'name');
      if (name === null || calledInFile(file, fn)) continue;
      const text = file.textOf(name);
      byName.set(text, [...(byName.get(text) ?? []), fn]);
    }
    const out = new Set<SyntaxNode>();
    if (byName.size === 0) return out;
    // Per name: every reference (outside the definitions' own names) is a grad-off argument, and there is one.
    for (const [name, defs] of byName) {
      const refs = identifiersNamed(file, name).filter((id) => id.parent?.type !== 'function_definition');
      if (refs.length > 0 && refs.every((id) => isGradOffArgument(file, id, defs))) for (const fn of defs) out.add(fn);
    }
    return out;
  });
}

/** The names of handedOnlyGradOff's functions: a scope's findings read it, so it is part of their cache key. */
export function gradOffCallbacksSignature(file: SourceFile): string {
  return [...handedOnlyGradOff(file)].map((fn) => `${file.textOf(childByField(fn, 'name') ?? fn)}@${file.lineOf(fn.start)}`).join(',');
}

/**
 * `id` is the callback itself (`f` for a module function, `self.f` for a method of the class that holds
 * it) passed as an argument of a call that runs with autograd off. Any other use (assigned, stored,
 * returned, called through an alias) may run it with autograd on.
 */
function isGradOffArgument(file: SourceFile, id: SyntaxNode, defs: readonly SyntaxNode[]): boolean {
  let value: SyntaxNode = id;
  if (id.parent?.type === 'attribute' && id.field === 'attribute') {
    const object = childByField(id.parent, 'object');
    if (object === null || file.textOf(object) !== 'self' || !defs.some((d) => enclosingClass(d) !== null)) return false;
    value = id.parent;
  } else if (defs.some((d) => enclosingClass(d) !== null)) {
    return false; // a bare name cannot reach a method
  }
  let arg: SyntaxNode = value;
  if (arg.parent?.type === 'keyword_argument' && arg.field === 'value') arg = arg.parent;
  const list = arg.parent;
  if (list?.type !== 'argument_list' || list.parent?.type !== 'call') return false;
  return gradOffAt(file, list.parent);
}
