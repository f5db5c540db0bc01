// A module class of the file whose `forward` runs other networks (a distillation wrapper: `def forward(self,
// x): return self.student(x), self.teacher(x)`), called as `distiller(x)` in a training step. The forward
// itself trains nothing, but every call of it from a step that backpropagates records its graph: for the
// networks it runs, the wrapper's forward is part of the training step.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeName } from './imports';
import { callsByScope, forwardReceiver, keyOf } from './models';
import { valuesOf } from './values';
import { VersionMemo } from '../session';

export interface WrapperCalls {
  /** Forward calls of the wrapper's instances (`distiller(x)`), in whatever scope they run. */
  readonly sites: readonly SyntaxNode[];
  /** Keys of the instances (`distiller`, `self.model`), to see whether an optimizer takes their parameters. */
  readonly instances: ReadonlySet<string>;
}

/** `Distiller(...)` in `Distiller(s, t).cuda()`, `VGGNet()` in `VGGNet().to(device).eval()`: the innermost call of a chain (the constructor). */
export function innermostCall(value: SyntaxNode): SyntaxNode {
  let call = value;
  while (call.type === 'call') {
    const fn = childByField(call, 'function');
    const object = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
    if (object?.type !== 'call') break;
    call = object;
  }
  return call;
}

/** The forward calls of instances of `cls` (every binding of the receiver constructs that class). */
export function wrapperCalls(file: SourceFile, cls: SyntaxNode): WrapperCalls {
  const name = file.textOf(childByField(cls, 'name') ?? cls);
  return wrapperCallsByClass.get(file, sitesByConstructedClass).get(name) ?? { sites: [], instances: new Set() };
}

/**
 * wrapperCalls of every class at once, per version: each forward call's receiver is resolved (valuesOf)
 * once, not once per module class of the file (a file of many classes asked for each of them, which
 * made a 2 MB file spend half its lint here).
 */
const wrapperCallsByClass = new VersionMemo<ReadonlyMap<string, WrapperCalls>>('moduleForwardSites.wrapperCalls');

/**
 * The forward calls whose receiver's bindings all construct one class (the innermost call of each value
 * has that callee name), grouped by that name, each group in the order of callsByScope and its forwards.
 */
function sitesByConstructedClass(file: SourceFile): ReadonlyMap<string, WrapperCalls> {
  const byName = new Map<string, { sites: SyntaxNode[]; instances: Set<string> }>();
  for (const [, calls] of callsByScope(file)) {
    for (const call of calls.forwards) {
      const receiver = forwardReceiver(file, call);
      const fn = childByField(call, 'function');
      if (receiver === null || receiver === 'self' || fn === null) continue;
      const target = fn.type === 'attribute' && /^forward$/.test(file.textOf(childByField(fn, 'attribute') ?? fn)) ? childByField(fn, 'object') : fn;
      const values = target === null ? null : valuesOf(file, target);
      if (values === null || values.length === 0) continue;
      const name = constructedName(file, values);
      if (name === null) continue;
      let group = byName.get(name);
      if (group === undefined) byName.set(name, (group = { sites: [], instances: new Set() }));
      group.sites.push(call);
      const key = target === null ? null : keyOf(file, target);
      if (key !== null) group.instances.add(key);
    }
  }
  return byName;
}

/** The callee name every value constructs (each a call whose innermost call has that name), or null. */
function constructedName(file: SourceFile, values: readonly SyntaxNode[]): string | null {
  let name: string | null = null;
  for (const v of values) {
    if (v.type !== 'call') return null;
    const callee = calleeName(file, innermostCall(v));
    if (callee === null || (name !== null && callee !== name)) return null;
    name = callee;
  }
  return name;
}
