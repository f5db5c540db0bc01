// Datasets whose samples are already on a device: a DataLoader whose dataset's `__getitem__` (or a method of
// the dataset it calls as `self.m(...)`) moves each sample with `.cuda()` / `.to(device)` (the pytorchforaudio
// course's `signal = signal.to(self.device)`, with the device handed in from train.py). Its batches are device
// tensors: `pin_memory=True` would raise (only dense CPU tensors can be pinned) and the loop's `.to(device)` is
// a no-op, so MH009's "pin this loader" is wrong there; MH013 reports the per-sample copy in the dataset.
// The dataset's class is found in this file or, through the file's imports, in another module of the project.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { resolveImport } from '../project/resolve';
import { calleeMethod } from './imports';
import { classMethods, keywordArgument, positionalArguments } from './context';
import { valuesOf } from './values';

/** Names followed to the construction of the dataset (`usd` of `create_data_loader(usd, ...)`). */
const MAX_HOPS = 3;
/** Dtype targets of `.to(...)`: a cast, not a device move. */
const DTYPE = /^torch\.(float|half|bfloat|double|int|long|short|uint|bool|complex|cfloat|chalf)\w*$/;
const NESTED_SCOPES = new Set(['function_definition', 'class_definition', 'lambda']);

/** Whether the dataset a DataLoader construction is given moves every sample to a device in `__getitem__`. */
export function loaderDatasetOnDevice(file: SourceFile, loader: SyntaxNode): boolean {
  const dataset = keywordArgument(file, loader, 'dataset') ?? positionalArguments(loader)[0] ?? null;
  return dataset !== null && constructions(file, dataset, 0).some(({ file: f, cls }) => getitemMovesToDevice(f, cls));
}

/** The classes (with their files) an expression is built from: `Cls(...)`, or a name bound to one. */
function constructions(file: SourceFile, expr: SyntaxNode, hops: number): { file: SourceFile; cls: SyntaxNode }[] {
  if (hops > MAX_HOPS) return [];
  if (expr.type === 'call') {
    const fn = childByField(expr, 'function');
    if (fn === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) return [];
    const name = file.textOf(fn).replace(/\s+/g, '');
    const local = fn.type === 'identifier' ? topLevelClass(file, name) : null;
    if (local !== null) return [{ file, cls: local }];
    const resolved = resolveImport(file, name);
    return resolved?.kind === 'class' && resolved.node !== null ? [{ file: resolved.module.file, cls: resolved.node }] : [];
  }
  if (expr.type !== 'identifier' && expr.type !== 'attribute') return [];
  return (valuesOf(file, expr) ?? []).flatMap((v) => constructions(file, v, hops + 1));
}

function topLevelClass(file: SourceFile, name: string): SyntaxNode | null {
  for (const unit of file.root.children) {
    if (unit.type === 'class_definition' && file.textOf(childByField(unit, 'name') ?? unit) === name) return unit;
  }
  return null;
}

function getitemMovesToDevice(file: SourceFile, cls: SyntaxNode): boolean {
  const methods = new Map(classMethods(cls).map((m) => [file.textOf(childByField(m, 'name') ?? m), m] as const));
  const getitem = methods.get('__getitem__');
  if (getitem === undefined) return false;
  // `__getitem__` and the dataset's own methods it calls (one level), as MH013 reads them.
  const sampleMethods = [getitem];
  for (const call of callsIn(getitem)) {
    const fn = childByField(call, 'function');
    const obj = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
    const m = obj !== null && file.textOf(obj) === 'self' ? methods.get(calleeMethod(file, call) ?? '') : undefined;
    if (m !== undefined && m !== methods.get('__init__') && !sampleMethods.includes(m)) sampleMethods.push(m);
  }
  return sampleMethods.some((m) => callsIn(m).some((call) => movesToDevice(file, call)));
}

/** `.cuda()`, or `.to(x)` where `x` is not a dtype nor a `"cpu"` device. */
function movesToDevice(file: SourceFile, call: SyntaxNode): boolean {
  if (childByField(call, 'function')?.type !== 'attribute') return false;
  const method = calleeMethod(file, call);
  if (method === 'cuda') return true;
  if (method !== 'to') return false;
  const target = positionalArguments(call)[0] ?? keywordArgument(file, call, 'device');
  if (target === undefined || target === null) return false;
  const text = file.textOf(target);
  return !DTYPE.test(text) && !/^(torch\.device\()?['"]cpu/.test(text);
}

/** Calls in a method's body, not in nested definitions. */
function callsIn(method: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const body = childByField(method, 'body');
  const stack = body === null ? [] : [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'call') out.push(n);
    for (const c of n.children) if (!NESTED_SCOPES.has(c.type)) stack.push(c);
  }
  return out;
}
