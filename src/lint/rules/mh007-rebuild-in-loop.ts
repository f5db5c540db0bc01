// MH007 rebuild-in-loop: an optimizer, model or GradScaler constructed inside the per-step loop.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod, calleeName, importBindings } from '../analysis/imports';
import { enclosingLoops } from '../analysis/context';
import { unitCallGroups } from '../analysis/calls';
import { importSignature, intern, unitNodesOfType, unitsOf } from '../analysis/unitcache';
import { KeyMemo, NodeMemo, VersionMemo } from '../session';
import { enclosingStepLoop, nestedStepLoops } from '../analysis/steps';
import type { Rule, RuleFinding } from '../types';

type Kind = 'optimizer' | 'model' | 'scaler';

const SCALERS = new Set(['torch.cuda.amp.GradScaler', 'torch.amp.GradScaler', 'torch.GradScaler', 'torch.cpu.amp.GradScaler', 'torch.amp.grad_scaler.GradScaler', 'torch.cuda.amp.grad_scaler.GradScaler']);
const OPTIMIZER_PATTERNS = [
  /^torch\.optim\.[A-Z]\w*$/,
  /^torch\.optim\.\w+\.[A-Z]\w*$/,
  /^transformers\.(optimization\.)?(AdamW|Adafactor)$/,
  /^bitsandbytes\.optim\.[A-Z]\w*$/,
  /^apex\.optimizers\.[A-Z]\w*$/,
  /^timm\.optim\.(create_optimizer|create_optimizer_v2|[A-Z]\w*)$/,
  /^deepspeed\.ops\.\w+\.[A-Z]\w*$/,
  /^torch_optimizer\.[A-Z]\w*$/,
];
const MODEL_PATTERNS = [
  /^torchvision\.models\.([a-z]\w*\.)?[a-z]\w*$/,
  /^timm\.(models\.)?create_model$/,
  /^transformers\.(\w+\.)*(AutoModel\w*|\w*Model|\w+For[A-Z]\w*)\.(from_pretrained|from_config)$/,
];
const MODULE_BASES = /^(torch\.nn\.Module|torch\.nn\.modules\.module\.Module|(lightning|pytorch_lightning|lightning\.pytorch)\.LightningModule|transformers\.(\w+\.)*PreTrainedModel)$/;
const LR_SCHEDULER = /lr_scheduler/;

/** One top-level statement's class definitions: name and the text of each base, in document order. */
type UnitClasses = readonly (readonly [string, readonly string[]])[];

const unitClassCache = new NodeMemo<UnitClasses>('MH007.unitClasses');

function unitClasses(file: SourceFile, unit: SyntaxNode): UnitClasses {
  return unitClassCache.get(file, unit, '', () => {
    const out: [string, string[]][] = [];
    for (const cls of unitNodesOfType(file, unit, 'class_definition')) {
      const name = childByField(cls, 'name');
      const supers = childByField(cls, 'superclasses');
      if (name === null || supers === null) continue;
      out.push([file.textOf(name), supers.children.filter((c) => c.type === 'identifier' || c.type === 'attribute').map((c) => file.textOf(c))]);
    }
    return out;
  });
}

/**
 * What the local module classes are computed from: the imports and every class's name and bases.
 * Equal tokens mean equal results, so MH007's per-statement findings are kept under it.
 */
function classesToken(file: SourceFile): string {
  return classTokenCache.get(file, () => {
    const parts: string[] = [importSignature(file)];
    for (const unit of unitsOf(file)) {
      const classes = unitClasses(file, unit);
      if (classes.length > 0) parts.push(JSON.stringify(classes));
    }
    return intern(file, parts.join('|'));
  });
}
const classTokenCache = new VersionMemo<string>('MH007.classesToken');

/** Names of classes in this file that subclass nn.Module (directly or through other local classes). */
function localModuleClasses(file: SourceFile): Set<string> {
  // computeModuleClasses reads only what the token summarises (imports, class names and bases).
  return moduleClassCache.get(file, () => moduleClassesByToken.get(file, [classesToken(file)], () => computeModuleClasses(file)));
}

function computeModuleClasses(file: SourceFile): Set<string> {
  const bases = new Map<string, readonly string[]>();
  for (const unit of unitsOf(file)) for (const [name, supers] of unitClasses(file, unit)) bases.set(name, supers);
  const result = new Set<string>();
  const state = new Map<string, boolean | 'pending'>();
  const isModule = (cls: string): boolean => {
    const s = state.get(cls);
    if (s === 'pending') return false;
    if (s !== undefined) return s;
    state.set(cls, 'pending');
    let yes = false;
    for (const text of bases.get(cls) ?? []) {
      const qualified = qualifiedOfText(file, text);
      if ((qualified !== null && MODULE_BASES.test(qualified)) || text === 'nn.Module' || (bases.has(text) && isModule(text))) {
        yes = true;
        break;
      }
    }
    state.set(cls, yes);
    return yes;
  };
  for (const cls of bases.keys()) if (isModule(cls)) result.add(cls);
  return result;
}
const moduleClassCache = new VersionMemo<Set<string>>('MH007.moduleClasses');
/** The classes hold strings only: any version with the same imports and class headers shares them. */
const moduleClassesByToken = new KeyMemo<Set<string>>('MH007.moduleClassesByToken', 8);

function qualifiedOfText(file: SourceFile, text: string): string | null {
  const parts = text.replace(/\s+/g, '').split('.');
  const binding = importBindings(file).get(parts[0]);
  if (binding !== undefined) parts[0] = binding.qualified;
  return parts.join('.');
}


/** Last segments worth resolving: classes, factories, and names imported from torchvision. */
const LIBRARIES = /^(torch\.optim|transformers|bitsandbytes|apex|timm|deepspeed|torch_optimizer|torchvision)/;
/** torchvision.models builder names (`resnet50`, `vit_b_16`, `fasterrcnn_resnet50_fpn`, `get_model`). */
const TORCHVISION_BUILDER =
  /^(resnet|resnext|wide_resnet|vgg|densenet|mobilenet|efficientnet|regnet|convnext|vit_|swin|maxvit|inception|googlenet|alexnet|squeezenet|shufflenet|mnasnet|fasterrcnn|maskrcnn|keypointrcnn|retinanet|fcos|ssd|ssdlite|deeplabv3|fcn_|lraspp|r3d|r2plus1d|mc3|s3d|mvit|swin3d|raft|get_model$)/;
const FACTORIES = new Set(['create_model', 'create_optimizer', 'create_optimizer_v2', 'from_pretrained', 'from_config']);

function constructionKind(file: SourceFile, call: SyntaxNode): Kind | null {
  const method = calleeMethod(file, call);
  const fn = childByField(call, 'function');
  if (method === null || fn === null) return null;
  if (method !== 'GradScaler' && !FACTORIES.has(method) && !(fn.type === 'identifier' && localModuleClasses(file).has(method))) {
    // Everything else must come from an optimizer or model library: check the head's import before
    // resolving the whole name (`nn.Linear(...)`, `torch.zeros(...)` are the common case and cheap to drop).
    let head: SyntaxNode | null = fn;
    while (head !== null && head.type === 'attribute') head = childByField(head, 'object');
    if (head === null || head.type !== 'identifier') return null;
    const origin = importBindings(file).get(file.textOf(head))?.qualified ?? '';
    const lower = !/^[A-Z]/.test(method);
    if (lower && !origin.startsWith('torchvision')) return null; // lower-case builders: torchvision.models only
    if (!lower && !LIBRARIES.test(origin) && !(fn.type === 'attribute' && file.textOf(fn).includes('optim'))) return null;
  }
  const name = calleeName(file, call);
  if (name === null) return null;
  if (SCALERS.has(name)) return 'scaler';
  if (!LR_SCHEDULER.test(name) && OPTIMIZER_PATTERNS.some((p) => p.test(name))) return 'optimizer';
  if (MODEL_PATTERNS.some((p) => p.test(name))) return 'model';
  if (fn.type === 'identifier' && !importBindings(file).has(name) && localModuleClasses(file).has(name)) return 'model';
  return null;
}

/** Between the call and its loop: a branch, so the construction may run once (warm-up switch, lazy init). */
function isConditional(call: SyntaxNode, loop: SyntaxNode): boolean {
  for (let p = call.parent; p !== null && p !== loop; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'conditional_expression' || p.type === 'except_clause' || p.type === 'boolean_operator') return true;
  }
  return false;
}

/** The name the constructed object is bound to (`opt = SGD(...)`, `self.scaler = GradScaler()`). */
function boundName(file: SourceFile, call: SyntaxNode): string | null {
  let n = call;
  // `model = Net().to(device)`: the construction is the head of a method chain.
  while (n.parent !== null && (n.parent.type === 'attribute' || (n.parent.type === 'call' && n.field === 'function'))) n = n.parent;
  const parent = n.parent;
  if (parent === null || parent.type !== 'assignment' || n.field !== 'right') return null;
  const left = childByField(parent, 'left');
  if (left === null || (left.type !== 'identifier' && left.type !== 'attribute')) return null;
  return file.textOf(left).replace(/\s+/g, '');
}

/** A per-step loop nested in `loop` (not containing `call`) that uses `name`: the object serves a whole run. */
function servesNestedRun(file: SourceFile, call: SyntaxNode, loop: SyntaxNode, name: string): boolean {
  const word = new RegExp(`(^|[^\\w.])${name.replace(/[.]/g, '\\.')}(?!\\w)`);
  for (const inner of nestedStepLoops(file, loop)) {
    if (inner.start <= call.start && call.end <= inner.end) continue;
    if (word.test(file.text.slice(inner.start, inner.end))) return true;
  }
  return false;
}

const MESSAGES: Record<Kind, string> = {
  optimizer:
    'An optimizer built every step allocates fresh state (Adam: two tensors per parameter) each iteration and throws away ' +
    'momentum and step counts, so training silently degrades while the allocator churns. Build it once before the loop; ' +
    'change the learning rate through `param_groups` or a scheduler.',
  model:
    'A model built every step allocates new parameters (and their gradients and optimizer state) each iteration, and the ' +
    'optimizer keeps updating the old ones. Build the model once before the loop.',
  scaler:
    'A GradScaler built every step resets its loss scale to 65536 each iteration, so it never adapts (overflowing steps ' +
    'get skipped) and it allocates its state anew. Create it once before the loop.',
};

export const rebuildInLoop: Rule = {
  code: 'MH007',
  name: 'rebuild-in-loop',
  severity: 'warning',
  summary: 'An optimizer, model or GradScaler constructed inside the per-step loop.',
  check(file) {
    const findings: RuleFinding[] = [];
    // The constructions in loops, per statement: they depend on it, the imports and the local classes.
    const signature = classesToken(file);
    for (const unit of unitsOf(file)) {
      for (const { call, kind } of unitConstructions.get(file, unit, signature, () => constructionsInLoops(file, unit))) {
        const loop = enclosingStepLoop(file, call);
        if (loop === null || isConditional(call, loop)) continue;
        const name = boundName(file, call);
        if (name !== null && servesNestedRun(file, call, loop, name)) continue;
        findings.push({ start: call.start, end: call.end, message: MESSAGES[kind] });
      }
    }
    return findings;
  },
};

interface Construction {
  readonly call: SyntaxNode;
  readonly kind: Kind;
}

const unitConstructions = new NodeMemo<readonly Construction[]>('MH007.constructions');

/** Constructions of optimizers, models and scalers inside a loop in one top-level statement, in document order. */
function constructionsInLoops(file: SourceFile, unit: SyntaxNode): Construction[] {
  let torchvision = false;
  for (const b of importBindings(file).values()) if (b.qualified.startsWith('torchvision')) torchvision = true;
  // Classes, factories, and (only where torchvision is imported) lower-case builders.
  const calls: SyntaxNode[] = [];
  for (const [method, list] of unitCallGroups(file, unit)) if (/^[A-Z]/.test(method) || FACTORIES.has(method) || (torchvision && TORCHVISION_BUILDER.test(method))) calls.push(...list);
  calls.sort((a, b) => a.start - b.start);
  const out: Construction[] = [];
  for (const call of calls) {
    const kind = constructionKind(file, call);
    // Name test first (cheap); the ancestor walk only for candidates, so deep nesting stays linear.
    if (kind !== null && enclosingLoops(call).length > 0) out.push({ call, kind });
  }
  return out;
}

export const rule = rebuildInLoop;
