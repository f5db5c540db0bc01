// MH013 dataset-getitem-cuda: a Dataset's `__getitem__` (or a method of the dataset it calls) copies each
// sample to the GPU. One tiny host-to-device copy per sample instead of one per batch; CUDA cannot be used
// in forked DataLoader workers, so such a dataset pins the loader to num_workers=0; and pin_memory only
// applies to CPU tensors. The device must be visibly an accelerator in this file (`.cuda()`, 'cuda', a
// name whose values say so, a constructor argument that does); `.to("cpu")`, dtypes and unknown devices
// stay silent.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod, calleeName } from '../analysis/imports';
import { keywordArgument, positionalArguments } from '../analysis/context';
import { constructorArguments, datasetFacts, type DatasetClass } from '../analysis/datasets';
import { valuesOf } from '../analysis/values';
import { isCudaDevice, isNeverCuda, literalDevice } from './mh009-blocking-transfer';
import type { Rule, RuleFinding } from '../types';

const ACCELERATORS = new Set(['cuda', 'xpu', 'mps', 'npu', 'hpu', 'xla']);
const SCOPES = new Set(['function_definition', 'class_definition', 'lambda']);

/** Calls in a method's body (not in nested definitions), in document order. */
function callsIn(method: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const body = childByField(method, 'body');
  if (body === null) return out;
  const stack = [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'call') out.push(n);
    for (let i = n.children.length - 1; i >= 0; i--) if (!SCOPES.has(n.children[i].type)) stack.push(n.children[i]);
  }
  return out.sort((a, b) => a.start - b.start);
}

/** The methods `__getitem__` runs: itself and the dataset's own methods it calls as `self.m(...)` (one level). */
function sampleMethods(file: SourceFile, cls: DatasetClass, getitem: SyntaxNode): SyntaxNode[] {
  const out = [getitem];
  for (const call of callsIn(getitem)) {
    const fn = childByField(call, 'function');
    const obj = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
    if (obj === null || file.textOf(obj) !== 'self') continue;
    const m = cls.methods.get(calleeMethod(file, call) ?? '');
    if (m !== undefined && !out.includes(m) && m !== cls.methods.get('__init__')) out.push(m);
  }
  return out;
}

/** Objects of launch libraries whose `.device` is the process's GPU whenever there is one. */
const LAUNCHER = /(^|\.)(Accelerator|Fabric)$/;

/**
 * `accelerator.device` (accelerate's `Accelerator()`, Lightning's `Fabric()`), directly or through a name
 * bound to it, also from an enclosing function (a dataset class defined inside `train()`): only MH013
 * reads it as a GPU, since an accelerate loop's own `.to(accelerator.device)` copies are MH009's business
 * and its prepared loaders already move batches.
 */
function isLauncherDevice(file: SourceFile, target: SyntaxNode): boolean {
  if (target.type !== 'identifier' && target.type !== 'attribute') return false;
  return [target, ...(valuesOf(file, target) ?? [])].some((v) => {
    if (v.type !== 'attribute' || file.textOf(childByField(v, 'attribute') ?? v) !== 'device') return false;
    const object = childByField(v, 'object');
    if (object === null || (object.type !== 'identifier' && object.type !== 'attribute')) return false;
    return (valuesOf(file, object) ?? []).some((o) => o.type === 'call' && LAUNCHER.test(calleeName(file, o) ?? ''));
  });
}

/** Whether a `.to()` / `device=` target is visibly an accelerator. */
function isAccelerator(file: SourceFile, cls: DatasetClass, target: SyntaxNode): boolean {
  const literal = literalDevice(file, target);
  if (literal !== null) return ACCELERATORS.has(literal);
  if (isNeverCuda(file, target)) return false;
  if (isCudaDevice(file, target)) return true;
  if (isLauncherDevice(file, target)) return true;
  // `self.device = device` in __init__, and the file builds the dataset with `device="cuda"` / a CUDA device.
  if (target.type !== 'attribute' || !file.textOf(target).startsWith('self.')) return false;
  const init = cls.methods.get('__init__');
  for (const v of valuesOf(file, target) ?? []) {
    if (v.type !== 'identifier' || init === undefined || v.start < init.start || v.end > init.end) continue;
    const passed = constructorArguments(file, cls, file.textOf(v));
    if (passed.some((a) => literalDevice(file, a) === null && !isNeverCuda(file, a) && isCudaDevice(file, a))) return true;
    if (passed.some((a) => ACCELERATORS.has(literalDevice(file, a) ?? ''))) return true;
  }
  return false;
}

/** The accelerator copy a call makes of sample data, as text for the message, or null. */
function copyOf(file: SourceFile, cls: DatasetClass, call: SyntaxNode): string | null {
  const method = calleeMethod(file, call);
  const fn = childByField(call, 'function');
  if (fn?.type === 'attribute' && method === 'cuda') {
    const device = positionalArguments(call)[0] ?? keywordArgument(file, call, 'device');
    return device === undefined || device === null || device.type === 'integer' || isAccelerator(file, cls, device) ? '.cuda()' : null;
  }
  if (fn?.type === 'attribute' && method === 'to') {
    const target = positionalArguments(call)[0] ?? keywordArgument(file, call, 'device');
    return target === undefined || target === null || !isAccelerator(file, cls, target) ? null : `.to(${file.textOf(target)})`;
  }
  // `torch.tensor(x, device=self.device)`, `torch.zeros(..., device="cuda")`
  const name = calleeName(file, call);
  if (name === null || !name.startsWith('torch.')) return null;
  const device = keywordArgument(file, call, 'device');
  return device === null || !isAccelerator(file, cls, device) ? null : `${name.slice('torch.'.length)}(..., device=${file.textOf(device)})`;
}

export const datasetGetitemCuda: Rule = {
  code: 'MH013',
  name: 'dataset-getitem-cuda',
  severity: 'warning',
  summary: "A Dataset's `__getitem__` moves each sample to the GPU: per-sample copies, no DataLoader workers, no pinned memory.",
  check(file) {
    const findings: RuleFinding[] = [];
    if (!file.text.includes('__getitem__')) return findings;
    for (const cls of datasetFacts(file).classes.values()) {
      const getitem = cls.methods.get('__getitem__');
      if (getitem === undefined) continue;
      for (const method of sampleMethods(file, cls, getitem)) {
        for (const call of callsIn(method)) {
          const copy = copyOf(file, cls, call);
          if (copy === null) continue;
          const where = method === getitem ? '`__getitem__`' : `\`${file.textOf(childByField(method, 'name') ?? method)}()\` (called by \`__getitem__\`)`;
          findings.push({
            start: call.start,
            end: call.end,
            message:
              `${where} of dataset \`${cls.name}\` copies each sample to the GPU (\`${copy}\`): one small host-to-device copy per ` +
              'sample instead of one per batch; CUDA cannot be initialised in forked DataLoader workers (the default on Linux), so the ' +
              'loader is stuck with `num_workers=0`, and there is nothing left to pin. Return CPU tensors and move the whole batch in the training loop ' +
              '(`DataLoader(..., num_workers=N, pin_memory=True)`, then `batch.to(device, non_blocking=True)`).',
          });
        }
      }
    }
    return findings;
  },
};

export const rule = datasetGetitemCuda;
