// State derived from a hand-made leaf tensor and stored on the object during an update: SAC's temperature
// `self.log_alpha = torch.zeros(1, requires_grad=True)` (optimised by its own optimizer) and, after each
// alpha step, `self.alpha = self.log_alpha.exp()`. The stored tensor keeps its autograd graph into the next
// update, where the actor/critic losses that use `self.alpha` backpropagate into `log_alpha` through it
// (MH002). Stored in `__init__` it is the initial value; in an update method it is rebuilt every step.
import { childByField, firstStartingAtOrAfter, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod, calleeName } from './imports';
import { enclosingFunction, keywordArgument } from './context';
import { enclosingClass } from './models';
import { gradOffAt } from './gradstate';

export interface LeafDerivedStore {
  /** The assignment `self.alpha = self.log_alpha.exp()`. */
  readonly node: SyntaxNode;
  /** Its right-hand side. */
  readonly value: SyntaxNode;
  /** `self.alpha`. */
  readonly key: string;
  /** The leaf it is computed from, `self.log_alpha`. */
  readonly leaf: string;
}

/** Methods and attributes after which a value carries no history. */
const NO_HISTORY = new Set(['detach', 'item', 'tolist', 'numpy', 'data', 'detach_']);
const PYTHON_NUMBERS = /^(float|int|bool|math\.\w+|np\.\w+|numpy\.\w+)$/;

function selfAttribute(file: SourceFile, node: SyntaxNode | null): string | null {
  if (node?.type !== 'attribute') return null;
  const object = childByField(node, 'object');
  return object?.type === 'identifier' && file.textOf(object) === 'self' ? file.textOf(node).replace(/\s+/g, '') : null;
}

function assignmentsIn(file: SourceFile, node: SyntaxNode): SyntaxNode[] {
  const all = file.nodesOfType('assignment');
  const out: SyntaxNode[] = [];
  for (let i = firstStartingAtOrAfter(all, node.start); i < all.length && all[i].start < node.end; i++) out.push(all[i]);
  return out;
}

/**
 * `self.X` attributes of the class created as leaves that require grad: a torch factory call with
 * `requires_grad=True` (`torch.zeros(1, requires_grad=True)`), or `.requires_grad_()` on one. Parameters of
 * modules (`nn.Parameter`) are left out: a module uses them in its own forward, where results stored on
 * `self` are another matter.
 */
function gradLeaves(file: SourceFile, cls: SyntaxNode): Set<string> {
  const out = new Set<string>();
  for (const asg of assignmentsIn(file, cls)) {
    const key = selfAttribute(file, childByField(asg, 'left'));
    const right = childByField(asg, 'right');
    if (key === null || right?.type !== 'call') continue;
    const flag = keywordArgument(file, right, 'requires_grad');
    const torchFactory = (calleeName(file, right) ?? '').startsWith('torch.') && flag !== null && file.textOf(flag) === 'True';
    if (torchFactory || calleeMethod(file, right) === 'requires_grad_') out.add(key);
  }
  return out;
}

/** The leaf an expression computes a tensor from with autograd (not the bare leaf itself), or null. */
function derivedLeaf(file: SourceFile, expr: SyntaxNode, leaves: ReadonlySet<string>): string | null {
  const stack: SyntaxNode[] = [expr];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'attribute') {
      const key = selfAttribute(file, n);
      if (key !== null && leaves.has(key)) {
        if (n !== expr) return key;
        continue;
      }
      if (NO_HISTORY.has(file.textOf(childByField(n, 'attribute') ?? n))) continue;
      const object = childByField(n, 'object');
      if (object !== null) stack.push(object);
    } else if (n.type === 'call') {
      const fn = childByField(n, 'function');
      if (fn?.type === 'attribute' && NO_HISTORY.has(calleeMethod(file, n) ?? '')) continue;
      if (fn?.type === 'identifier' && PYTHON_NUMBERS.test(file.textOf(fn))) continue;
      if (fn?.type === 'attribute') stack.push(childByField(fn, 'object') ?? fn);
      for (const a of childByField(n, 'arguments')?.children ?? []) if (a.named && a.type !== 'keyword_argument') stack.push(a);
    } else if (['binary_operator', 'unary_operator', 'parenthesized_expression'].includes(n.type)) {
      for (const c of n.children) if (c.named) stack.push(c);
    }
  }
  return null;
}

/** Every `self.X = f(self.leaf)` in a method other than `__init__`, with autograd on, in the file's classes. */
export function leafDerivedStores(file: SourceFile): LeafDerivedStore[] {
  if (!file.text.includes('requires_grad')) return [];
  const out: LeafDerivedStore[] = [];
  for (const cls of file.nodesOfType('class_definition')) {
    const leaves = gradLeaves(file, cls);
    if (leaves.size === 0) continue;
    for (const asg of assignmentsIn(file, cls)) {
      const fn = enclosingFunction(asg);
      if (fn === null || enclosingClass(fn) !== cls || file.textOf(childByField(fn, 'name') ?? fn) === '__init__') continue;
      const key = selfAttribute(file, childByField(asg, 'left'));
      const value = childByField(asg, 'right');
      if (key === null || value === null || leaves.has(key) || gradOffAt(file, asg)) continue;
      const leaf = derivedLeaf(file, value, leaves);
      if (leaf !== null) out.push({ node: asg, value, key, leaf });
    }
  }
  return out;
}
