// Which functions of a Python file can be profiled as a step, and which look like training steps (for
// the CodeLens). Reads the linter's syntax mirror; no `vscode` here.
import { calleeMethod, childByField, type SourceFile, type SyntaxNode } from '../../lint';
import { trainingLoops, type TrainingLoop } from './loopFinder';

export interface StepCandidate {
  readonly name: string;
  /** The whole definition, decorators included (UTF-16 offsets). */
  readonly start: number;
  readonly end: number;
  /** The `def` keyword line's start, where the CodeLens goes. */
  readonly defStart: number;
  /** Why it looks like a training step; null when it does not. */
  readonly stepReason: 'name' | 'backward' | 'optimizer-step' | null;
}

const STEP_NAME = /train|step/i;
const OPTIMIZER_RECEIVER = /optim|(^|[._])opt$/i;

/**
 * Module-level functions and methods of module-level classes, which the profiler targets as
 * `file.py::name` / `file.py::Class.method`. Step-like: the name says train/step, or the body itself
 * (not a loop in it) calls `.backward()` or `optimizer.step()`. Calls are assigned to functions in one
 * sweep (both lists are in document order).
 */
export function topLevelFunctions(file: SourceFile): StepCandidate[] {
  const defs: { node: SyntaxNode; def: SyntaxNode; owner: string | null }[] = [];
  for (const child of file.root.children) {
    const def = child.type === 'decorated_definition' ? childByField(child, 'definition') : child;
    if (def === null) continue;
    if (def.type === 'function_definition') defs.push({ node: child, def, owner: null });
    else if (def.type === 'class_definition') {
      // Methods as `Class.method`, which the harness resolves through the class.
      const className = childByField(def, 'name');
      const body = childByField(def, 'body');
      if (className === null || body === null) continue;
      for (const member of body.children) {
        const method = member.type === 'decorated_definition' ? childByField(member, 'definition') : member;
        if (method !== null && method.type === 'function_definition') defs.push({ node: member, def: method, owner: file.textOf(className) });
      }
    }
  }
  const reasons: (StepCandidate['stepReason'])[] = defs.map(() => null);
  const calls = file.nodesOfType('call');
  let i = 0;
  for (const call of calls) {
    while (i < defs.length && defs[i].node.end <= call.start) i++;
    if (i >= defs.length) break;
    if (call.start < defs[i].node.start || reasons[i] === 'backward') continue;
    const method = calleeMethod(file, call);
    if (method !== 'backward' && method !== 'step') continue;
    // A backward() inside a loop of the function makes it a training loop (main, fit), called once:
    // as a "step" it would never reach warmup + steps calls.
    if (inLoopWithin(call, defs[i].def)) continue;
    if (method === 'backward') reasons[i] = 'backward';
    else if (reasons[i] === null) {
      const fn = childByField(call, 'function');
      const receiver = fn === null ? null : childByField(fn, 'object');
      if (receiver !== null && OPTIMIZER_RECEIVER.test(file.textOf(receiver))) reasons[i] = 'optimizer-step';
    }
  }
  // A function holding the training loop (`def train(model, loader): for batch in loader: ...`) is called
  // once per run or epoch: its loop is the step (offered as "Profile this loop"), not the function.
  const loopStarts = trainingLoops(file).map((l) => l.start);
  return defs
    .map(({ node, def, owner }, k) => {
      const nameNode = childByField(def, 'name');
      const bare = nameNode === null ? '' : file.textOf(nameNode);
      const holdsLoop = loopStarts.some((at) => def.start <= at && at < def.end);
      const reason = holdsLoop ? null : STEP_NAME.test(bare) ? 'name' : reasons[k];
      const name = bare === '' ? '' : owner === null ? bare : `${owner}.${bare}`;
      return { name, start: node.start, end: node.end, defStart: def.start, stepReason: reason };
    })
    .filter((c) => c.name !== '' && !/\.__\w+__$/.test(c.name)); // dunder methods are never a step
}

function inLoopWithin(node: SyntaxNode, fn: SyntaxNode): boolean {
  for (let p = node.parent; p !== null && p !== fn; p = p.parent) {
    if (p.type === 'for_statement' || p.type === 'while_statement') return true;
    if (p.type === 'function_definition' || p.type === 'lambda') return false; // a nested def runs when called
  }
  return false;
}

export function trainingSteps(file: SourceFile): StepCandidate[] {
  return topLevelFunctions(file).filter((c) => c.stepReason !== null);
}

/** The top-level function or method containing `offset`, or null. */
export function functionAt(file: SourceFile, offset: number): StepCandidate | null {
  return topLevelFunctions(file).find((c) => c.start <= offset && offset <= c.end) ?? null;
}

/**
 * Training loops worth a "Profile this loop" lens: not those whose body calls a step that has its own
 * lens (`for batch in loader: train_step(...)`), where each iteration is one call of that step anyway.
 */
export function loopTargets(file: SourceFile, steps: readonly StepCandidate[] = trainingSteps(file)): TrainingLoop[] {
  const stepNames = new Set(steps.map((s) => s.name.slice(s.name.lastIndexOf('.') + 1)));
  return trainingLoops(file).filter((loop) => !loop.calls.some((c) => stepNames.has(c)));
}
