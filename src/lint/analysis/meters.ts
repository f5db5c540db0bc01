// Helper classes that keep what they are given: `meter.update(loss)` where the file's own meter does
// `self.total += value * n`. The method is analysed once with each parameter assumed to carry history;
// call sites on instances of the class then count as stores of that argument.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { factsSignature, ScopeFlow, scopeSignature, Taint } from './flow';
import { combine, unitsOf, walkSplittingFunctions, type FunctionSplitWalk } from './unitcache';
import { NodeMemo, VersionMemo } from '../session';
import { enclosingClass, keyOf } from './models';
import { importBindings } from './imports';
import { positionalParameters } from './parameters';

export interface RetainingParameter {
  readonly index: number;
  readonly name: string;
  /** The method reads attributes of it (`value.sum()`): keep it a tensor, suggest `.detach()`. */
  readonly usedAsTensor: boolean;
}

interface MeterFacts {
  /** class name -> method name -> parameters whose value the method stores on self. */
  readonly retaining: Map<string, Map<string, RetainingParameter[]>>;
  /** key (`loss_meter`, `self.losses`) -> classes it is assigned an instance of, anywhere in the file. */
  readonly instances: Map<string, Set<string>>;
}

const cache = new VersionMemo<MeterFacts>('meters.facts');

/** Meter classes known by name whose `update(val, n)` sums `val` (pytorch/examples' AverageMeter and its copies). */
const IMPORTED_METERS = /^(AverageMeter|AvgMeter|AverageValueMeter)$/;

/** Stores on self inside a method: `self.x += v`, `self.x = self.x + v`, `self.xs.append(v)`. */
function selfStoreValues(file: SourceFile, fn: SyntaxNode): SyntaxNode[] {
  const body = childByField(fn, 'body');
  const out: SyntaxNode[] = [];
  const stack = body === null ? [] : [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') continue;
    if (n.type === 'augmented_assignment') {
      const key = keyOf(file, childByField(n, 'left'));
      const value = childByField(n, 'right');
      if (key?.startsWith('self.') && value !== null) out.push(value);
    } else if (n.type === 'assignment') {
      const left = childByField(n, 'left');
      const right = childByField(n, 'right');
      const key = keyOf(file, left);
      if (key?.startsWith('self.') && right?.type === 'binary_operator') {
        const l = childByField(right, 'left');
        const r = childByField(right, 'right');
        if (l !== null && r !== null && keyOf(file, l) === key) out.push(r);
      }
    } else if (n.type === 'call') {
      const f = childByField(n, 'function');
      const method = f?.type === 'attribute' ? file.textOf(childByField(f, 'attribute') ?? f) : '';
      const key = f?.type === 'attribute' ? keyOf(file, childByField(f, 'object')) : null;
      const arg = childByField(n, 'arguments')?.children.find((c) => c.named && c.type !== 'comment');
      if ((method === 'append' || method === 'extend') && key?.startsWith('self.') && arg !== undefined) out.push(arg);
    }
    for (const c of n.children) stack.push(c);
  }
  return out;
}

interface UnitMeterData {
  /** Methods (not __init__) that store something on self. */
  readonly methods: readonly { readonly cls: string; readonly name: string; readonly fn: SyntaxNode }[];
  /** `key = Callee(...)` pairs, tuple assignments element-wise. */
  readonly instances: readonly (readonly [string, string])[];
  /** Names of the classes the statement defines. */
  readonly classes: readonly string[];
}

const unitCache = new NodeMemo<UnitMeterData>('meters.unit');
const retainingCache = new NodeMemo<RetainingParameter[]>('meters.retaining');

/** A statement's meter data as gathered in walk order (see walkSplittingFunctions). */
interface MeterParts {
  readonly methods: { cls: string; name: string; fn: SyntaxNode }[];
  readonly instances: [string, string][];
  readonly classes: string[];
}

/** The data of each function's body, so an edit in one method of a giant class re-walks that method only. */
const functionMeterParts = new NodeMemo<MeterParts>('meters.functionParts');
/** The data of each statement of a long function's body (see SPLIT_FUNCTION_LINES). */
const statementMeterParts = new NodeMemo<MeterParts>('meters.statementParts');
/** Whether a method stores on self, kept on its node (it is asked for every method of a class on every walk of it). */
const storesOnSelfCache = new NodeMemo<boolean>('meters.storesOnSelf');

function unitMeterData(file: SourceFile, unit: SyntaxNode): UnitMeterData {
  return unitCache.get(file, unit, '', () => walkSplittingFunctions(file, functionMeterParts, '', unit, meterWalk(file)));
}

function meterWalk(file: SourceFile): FunctionSplitWalk<MeterParts> {
  const record = (acc: MeterParts, target: SyntaxNode, value: SyntaxNode): void => {
    const key = keyOf(file, target);
    const fn = value.type === 'call' ? childByField(value, 'function') : null;
    if (key !== null && fn?.type === 'identifier') acc.instances.push([key, file.textOf(fn)]);
  };
  return {
    order: 'reverse',
    // enclosingClass reads a definition's parent block only: a def in a function body has none.
    statements: statementMeterParts,
    fresh: () => ({ methods: [], instances: [], classes: [] }),
    merge: (acc, part) => {
      for (const m of part.methods) acc.methods.push(m);
      for (const i of part.instances) acc.instances.push(i);
      for (const c of part.classes) acc.classes.push(c);
    },
    visit: (n, acc) => {
      if (n.type === 'class_definition') {
        const name = childByField(n, 'name');
        if (name !== null) acc.classes.push(file.textOf(name));
      }
      if (n.type === 'function_definition') {
        const cls = enclosingClass(n);
        const clsName = cls === null ? null : childByField(cls, 'name');
        const name = childByField(n, 'name');
        if (clsName !== null && name !== null && file.textOf(name) !== '__init__' && storesOnSelfCache.get(file, n, '', () => selfStoreValues(file, n).length > 0)) {
          acc.methods.push({ cls: file.textOf(clsName), name: file.textOf(name), fn: n });
        }
      } else if (n.type === 'assignment') {
        const left = childByField(n, 'left');
        const right = childByField(n, 'right');
        if (left === null || right === null) return;
        const targets = left.children.filter((c) => c.named);
        const values = right.children.filter((c) => c.named && c.type !== 'comment');
        if ((left.type === 'pattern_list' || left.type === 'tuple_pattern') && (right.type === 'expression_list' || right.type === 'tuple') && targets.length === values.length) {
          targets.forEach((t, i) => record(acc, t, values[i]));
        } else {
          record(acc, left, right);
        }
      }
    },
  };
}

/** Parameters of a method whose value, if it carried history, the method would store on self. */
function retainingParameters(file: SourceFile, fn: SyntaxNode): RetainingParameter[] {
  return retainingCache.get(file, fn, scopeSignature(file, fn, factsSignature(file)), () => {
    const values = selfStoreValues(file, fn);
    const found: RetainingParameter[] = [];
    positionalParameters(file, fn)
      .slice(1) // without self
      .forEach((param, index) => {
        const flow = new ScopeFlow(file, fn, new Set([param]));
        if (values.some((v) => flow.taintOf(v) === Taint.Tainted)) {
          const usedAsTensor = new RegExp(`\\b${param}\\s*\\.\\s*[A-Za-z_]`).test(file.textOf(childByField(fn, 'body') ?? fn));
          found.push({ index, name: param, usedAsTensor });
        }
      });
    return found;
  });
}

function meterFacts(file: SourceFile): MeterFacts {
  return cache.get(file, computeMeterFacts);
}

function computeMeterFacts(file: SourceFile): MeterFacts {
  const retaining = new Map<string, Map<string, RetainingParameter[]>>();
  const units = unitsOf(file).map((u) => unitMeterData(file, u));
  for (const u of units) {
    for (const m of u.methods) {
      const found = retainingParameters(file, m.fn);
      if (found.length === 0) continue;
      if (!retaining.has(m.cls)) retaining.set(m.cls, new Map());
      retaining.get(m.cls)!.set(m.name, found);
    }
  }
  // `from utils import AverageMeter`: the meter of pytorch/examples' ImageNet script, copied into countless
  // repositories, whose `update(val, n=1)` does `self.sum += val * n`. Only when the file does not
  // define a class of that name (then its own code, analysed above, decides).
  const defined = new Set(units.flatMap((u) => u.classes));
  for (const b of importBindings(file).values()) {
    if (!IMPORTED_METERS.test(b.qualified.split('.').pop() ?? '') || defined.has(b.local)) continue;
    retaining.set(b.local, new Map([['update', [{ index: 0, name: 'val', usedAsTensor: false }]]]));
  }
  const instances = new Map<string, Set<string>>();
  if (retaining.size > 0) {
    for (const u of units) {
      for (const [key, cls] of u.instances) {
        if (!retaining.has(cls)) continue;
        if (!instances.has(key)) instances.set(key, new Set());
        instances.get(key)!.add(cls);
      }
    }
  }
  return { retaining, instances };
}

/** Changes whenever which helper objects keep their arguments changes. */
export function meterSignature(file: SourceFile): string {
  return combine(file, 'meters', () => {
    const f = meterFacts(file);
    const parts: string[] = [];
    for (const [cls, methods] of f.retaining) for (const [m, params] of methods) parts.push(`${cls}.${m}(${params.map((p) => `${p.index}${p.name}${p.usedAsTensor}`).join(',')})`);
    for (const [key, classes] of f.instances) parts.push(`${key}=${[...classes].sort().join('/')}`);
    return parts.sort();
  });
}

/**
 * For `obj.method(...)` on an instance of a class of this file whose method stores an argument on
 * self: the argument nodes it would keep, with what the method does with them.
 */
export function retainedArguments(file: SourceFile, call: SyntaxNode): { arg: SyntaxNode; param: RetainingParameter; receiver: string }[] {
  const fn = childByField(call, 'function');
  if (fn?.type !== 'attribute') return [];
  const facts = meterFacts(file);
  if (facts.retaining.size === 0) return [];
  const receiver = keyOf(file, childByField(fn, 'object'));
  const method = file.textOf(childByField(fn, 'attribute') ?? fn);
  if (receiver === null) return [];
  const out: { arg: SyntaxNode; param: RetainingParameter; receiver: string }[] = [];
  for (const cls of facts.instances.get(receiver) ?? []) {
    for (const param of facts.retaining.get(cls)?.get(method) ?? []) {
      const args = childByField(call, 'arguments')?.children.filter((c) => c.named && c.type !== 'comment') ?? [];
      const keyword = args.find((a) => a.type === 'keyword_argument' && file.textOf(childByField(a, 'name') ?? a) === param.name);
      const positional = args.filter((a) => a.type !== 'keyword_argument')[param.index];
      const arg = keyword !== undefined ? childByField(keyword, 'value') : (positional ?? null);
      if (arg !== null && arg.type !== 'list_splat' && arg.type !== 'dictionary_splat') out.push({ arg, param, receiver });
    }
  }
  return out;
}
