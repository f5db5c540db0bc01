// Networks built by a class of another module of the project and run here through the object that holds
// them: `agent.target_critic(next_obs)` in an algorithm file, with `self.target_critic = MLPNetwork(...)` in the
// `DDPGAgent` of utils/agents.py (MADDPG and most multi-agent / agent-class RL code), or `self.target_net(x)` in
// a subclass of a project base class that builds it. The file using the network cannot see its construction,
// so MH011 asks the class that builds it whether it freezes it or hands its parameters to an optimizer.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { keyOf, modelFacts } from './models';
import { optimizedModels } from './optimized';
import { frozenThroughHelpers } from './indirect';
import { resolveImport } from '../project/resolve';

export interface ProjectHeldNetwork {
  /** The module file of the class that builds it. */
  readonly file: SourceFile;
  /** The value it is built from (`MLPNetwork(...)`), in that file. */
  readonly value: SyntaxNode;
  /** Where it is built, as messages name it: `utils/agents.py:28`. */
  readonly where: string;
}

/** The `self.<attribute> = <call>` assignments in the methods of `cls`. */
function selfConstructions(file: SourceFile, cls: SyntaxNode, attribute: string): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const stack: SyntaxNode[] = [cls];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'assignment') {
      const left = childByField(n, 'left');
      const right = childByField(n, 'right');
      if (left !== null && right?.type === 'call' && keyOf(file, left) === `self.${attribute}`) out.push(n);
    }
    for (const c of n.children) stack.push(c);
  }
  return out;
}

/** The names `from m import A, B as C` statements bind (relative imports too: `from .base import BaseAgent`). */
function fromImportedNames(file: SourceFile): string[] {
  const out: string[] = [];
  for (const stmt of file.nodesOfType('import_from_statement')) {
    const module = childByField(stmt, 'module_name');
    for (const item of stmt.children) {
      if (item === module || (item.type !== 'dotted_name' && item.type !== 'aliased_import')) continue;
      const bound = item.type === 'aliased_import' ? childByField(item, 'alias') : item;
      if (bound !== null) out.push(file.textOf(bound));
    }
  }
  return out;
}

/** `self.<attribute>` is in `keys`. */
function covers(keys: ReadonlySet<string>, attribute: string): boolean {
  return keys.has(`self.${attribute}`);
}

/**
 * The construction of `attribute` by the project classes this file imports by name (`from utils.agents import
 * DDPGAgent`), when exactly one builds it (`self.<attribute> = Net(...)` in one of its methods) and neither
 * freezes it (`requires_grad_(False)`, `p.requires_grad = False` over its parameters, a freezing helper) nor hands its
 * parameters to an optimizer there. Null otherwise: no such class, several (which one holds it is not read),
 * or one that trains or freezes it.
 */
export function projectHeldNetwork(file: SourceFile, attribute: string): ProjectHeldNetwork | null {
  if (file.session.project === null) return null;
  let found: ProjectHeldNetwork | null = null;
  for (const local of fromImportedNames(file)) {
    const resolved = resolveImport(file, local);
    if (resolved === null || resolved.kind !== 'class' || resolved.node === null) continue;
    const foreign = resolved.module.file;
    const built = selfConstructions(foreign, resolved.node, attribute);
    if (built.length === 0) continue;
    if (found !== null && found.file !== foreign) return null;
    const facts = modelFacts(foreign);
    if (covers(facts.frozen, attribute) || covers(frozenThroughHelpers(foreign), attribute) || covers(optimizedModels(foreign).optimized, attribute)) return null;
    const value = childByField(built[0], 'right')!;
    found = { file: foreign, value, where: `${resolved.module.display}:${foreign.lineOf(built[0].start) + 1}` };
  }
  return found;
}
