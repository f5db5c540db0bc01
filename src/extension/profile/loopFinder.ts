// Which inline loops of a file are training loops, for "Profile this loop" (`profile train.py:LINE`).
// The same rule as the harness (python/memhint_harness/loops.py): the innermost `for`/`while` whose body
// reaches both `backward()` and a `.step()` call, directly or through functions of the same file (matched
// by name); with none, the innermost reaching `backward()`. An epoch loop around the batch loop is not the
// training loop, and neither is a gradient-accumulation loop (backward only) inside the step loop.
// Reads the linter's syntax mirror; no `vscode` here.
import { childByField, type SourceFile, type SyntaxNode } from '../../lint';

export interface TrainingLoop {
  /** 1-based line of the `for`/`while` keyword: the `train.py:LINE` target. */
  readonly line: number;
  /** UTF-16 offset of the loop statement, where the CodeLens goes. */
  readonly start: number;
  readonly keyword: 'for' | 'while';
  /** The enclosing module-level function or method, or null at module level. */
  readonly function: string | null;
  /** Names the loop's body calls itself (`train_step`, `backward`, ...). */
  readonly calls: readonly string[];
}

interface Reach {
  backward: boolean;
  step: boolean;
  readonly calls: Set<string>;
}

const SCOPE = new Set(['function_definition', 'lambda', 'class_definition']);
const LOOP = new Set(['for_statement', 'while_statement']);

/**
 * Nodes executed by a body: nested function, lambda and class bodies run only when called, and are not
 * entered, except a def that is itself one of the body's statements (as in the harness: a closure defined
 * in the loop, such as LBFGS's `def closure(): ... loss.backward()` passed to `optimizer.step(closure)`).
 */
function ownNodes(root: SyntaxNode, visit: (n: SyntaxNode) => void): void {
  const stack: { node: SyntaxNode; statement: boolean }[] = root.children.map((node) => ({ node, statement: true }));
  while (stack.length > 0) {
    const { node: n, statement } = stack.pop()!;
    visit(n);
    if (SCOPE.has(n.type) && !statement) continue;
    // A decorated statement's definition is still the statement.
    for (const c of n.children) stack.push({ node: c, statement: statement && n.type === 'decorated_definition' });
  }
}

function isBackward(name: string): boolean {
  return name === 'backward' || name.endsWith('_backward');
}

function reachOf(file: SourceFile, body: SyntaxNode): Reach {
  const reach: Reach = { backward: false, step: false, calls: new Set() };
  ownNodes(body, (n) => {
    if (n.type !== 'call') return;
    const fn = childByField(n, 'function');
    let name: string | null = null;
    if (fn?.type === 'attribute') {
      const attr = childByField(fn, 'attribute');
      name = attr === null ? null : file.textOf(attr);
      if (name === 'step') reach.step = true;
    } else if (fn?.type === 'identifier') name = file.textOf(fn);
    if (name === null) return;
    if (isBackward(name)) reach.backward = true;
    reach.calls.add(name);
  });
  return reach;
}

export function trainingLoops(file: SourceFile): TrainingLoop[] {
  // Functions (and methods, by bare name) anywhere in the file: what their bodies reach, to a fixed point.
  const functions = new Map<string, SyntaxNode[]>();
  const loops: SyntaxNode[] = [];
  const stack = [file.root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition') {
      const name = childByField(n, 'name');
      if (name !== null) functions.set(file.textOf(name), [...(functions.get(file.textOf(name)) ?? []), n]);
    } else if (LOOP.has(n.type) && childByField(n, 'body') !== null) loops.push(n);
    for (const c of n.children) stack.push(c);
  }
  const functionReach = new Map<string, Reach>();
  for (const [name, defs] of functions) {
    const merged: Reach = { backward: false, step: false, calls: new Set() };
    for (const def of defs) {
      const body = childByField(def, 'body');
      if (body === null) continue;
      const own = reachOf(file, body);
      merged.backward ||= own.backward;
      merged.step ||= own.step;
      for (const c of own.calls) merged.calls.add(c);
    }
    functionReach.set(name, merged);
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const own of functionReach.values()) {
      for (const name of own.calls) {
        const callee = functionReach.get(name);
        if (callee === undefined) continue;
        if (callee.backward && !own.backward) own.backward = changed = true;
        if (callee.step && !own.step) own.step = changed = true;
      }
    }
  }
  const reachOfLoop = (loop: SyntaxNode): Reach => {
    const own = reachOf(file, childByField(loop, 'body')!);
    for (const name of own.calls) {
      const callee = functionReach.get(name);
      if (callee === undefined) continue;
      own.backward ||= callee.backward;
      own.step ||= callee.step;
    }
    return own;
  };
  /** Whether `body` runs a loop of `chosen`, nested or in a function it calls. */
  const contains = (body: SyntaxNode, chosen: ReadonlySet<SyntaxNode>, seen: Set<string>): boolean => {
    let found = false;
    const calls: string[] = [];
    ownNodes(body, (n) => {
      if (chosen.has(n)) found = true;
      if (n.type === 'call') {
        const fn = childByField(n, 'function');
        const id = fn?.type === 'identifier' ? fn : fn?.type === 'attribute' ? childByField(fn, 'attribute') : null;
        if (id) calls.push(file.textOf(id));
      }
    });
    if (found) return true;
    for (const name of calls) {
      if (seen.has(name) || !functions.has(name)) continue;
      seen.add(name);
      for (const def of functions.get(name)!) {
        const defBody = childByField(def, 'body');
        if (defBody !== null && contains(defBody, chosen, seen)) return true;
      }
    }
    return false;
  };
  const reaches = loops.map((loop) => ({ loop, reach: reachOfLoop(loop) }));
  const callsOf = new Map(reaches.map((x) => [x.loop, [...x.reach.calls]]));
  for (const wanted of [(r: Reach) => r.backward && r.step, (r: Reach) => r.backward]) {
    const tier = reaches.filter((x) => wanted(x.reach)).map((x) => x.loop);
    if (tier.length === 0) continue;
    const chosen = new Set(tier);
    return tier
      .filter((loop) => {
        const others = new Set(chosen);
        others.delete(loop);
        return !contains(childByField(loop, 'body')!, others, new Set());
      })
      .map((loop) => ({ line: file.lineOf(loop.start) + 1, start: loop.start, keyword: loop.type === 'while_statement' ? ('while' as const) : ('for' as const), function: enclosingFunction(file, loop), calls: callsOf.get(loop) ?? [] }))
      .sort((a, b) => a.line - b.line);
  }
  return [];
}

function enclosingFunction(file: SourceFile, node: SyntaxNode): string | null {
  let name: string | null = null;
  for (let p = node.parent; p !== null; p = p.parent) {
    if (p.type === 'function_definition') {
      const id = childByField(p, 'name');
      if (id !== null) name = file.textOf(id); // the outermost wins: the module-level function
    }
  }
  return name;
}
