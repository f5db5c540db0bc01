// A light def-use analysis over one scope (a function body, or a module's top-level code): which
// assignments reach a use, and whether a value may carry autograd history ("taint"). Flow is
// approximated by text order: the nearest preceding definition wins, definitions in branches that do
// not enclose the use are merged with the ones before them.
import { childByField, firstNamedChild, type SourceFile, type SyntaxNode } from '../syntax';
import { importBindings, qualifiedName } from './imports';
import { keyOf, forwardReceiver, modelSignature, scopeOf, backwardTargets } from './models';
import { combine } from './unitcache';
import { ModuleCodeMemo, NodeMemo, VersionMemo } from '../session';
import { enclosingGradToken, gradOffAt, gradMaybeOffAt, gradSignature } from './gradstate';
import { entryWrittenBy, literalKeyOf } from './dict-entries';
import { tensorTestOf } from './tensor-tests';

/** Clean < Unknown < Tainted; `max` merges. */
export const enum Taint {
  Clean = 0,
  Unknown = 1,
  Tainted = 2,
}

export type DefKind = 'assign' | 'aug' | 'for' | 'with' | 'param' | 'store';

export interface Def {
  readonly key: string;
  readonly kind: DefKind;
  /** The statement (or for/with statement, or the function for params). */
  readonly stmt: SyntaxNode;
  /** The assigned expression (for `for`: the iterable; `store`: the stored value). */
  readonly value: SyntaxNode | null;
  /** Uses at or after this offset see the definition. */
  readonly effective: number;
  /** `loss, out = step(...)`: the position of this target in the unpacked tuple (value is the whole call). */
  readonly element?: number;
}

// Methods whose result never carries autograd history.
const SAFE_METHODS = new Set([
  'item', 'detach', 'detach_', 'tolist', 'numpy', 'size', 'dim', 'numel', 'nelement', 'element_size', 'argmax', 'argmin', 'argsort',
  'eq', 'ne', 'lt', 'gt', 'le', 'ge', 'isnan', 'isinf', 'isfinite', 'any', 'all', 'long', 'int', 'bool', 'byte', 'short', 'nonzero',
  'data_ptr', 'get_device', 'stride', 'is_contiguous', 'keys', 'count', 'index', 'startswith', 'endswith', 'format', 'join',
]);
const SAFE_ATTRIBUTES = new Set(['data', 'shape', 'dtype', 'device', 'grad', 'requires_grad', 'ndim', 'is_cuda', 'is_leaf', 'grad_fn', 'T_']);
const CLEAN_BUILTINS = new Set(['float', 'int', 'bool', 'len', 'str', 'repr', 'round', 'isinstance', 'print', 'range', 'format', 'type', 'id', 'hash', 'hasattr', 'getattr']);
const PROPAGATING_BUILTINS = new Set(['sum', 'max', 'min', 'abs', 'list', 'tuple', 'zip', 'enumerate', 'reversed', 'sorted', 'iter', 'next', 'map', 'filter', 'dict', 'set']);
const CLEAN_TORCH = /^torch\.(tensor|as_tensor|from_numpy|zeros|ones|empty|full|arange|linspace|logspace|eye|randn|rand|randint|randperm|normal|zeros_like|ones_like|empty_like|full_like|rand_like|randn_like|randint_like|argmax|argmin|argsort|isnan|isinf|isfinite|eq|ne|lt|gt|le|ge|equal|numel|is_tensor|no_grad|inference_mode|manual_seed|device|Generator|get_rng_state|save|load|sign|bucketize|searchsorted|autograd\.grad)$/;

/** Methods (and torch functions) returning a view of their input or, in some cases, the input itself. */
const VIEW_OR_SELF = new Set([
  'view', 'view_as', 'reshape', 'reshape_as', 'squeeze', 'unsqueeze', 'transpose', 't', 'permute', 'expand', 'expand_as', 'narrow',
  'select', 'flatten', 'unflatten', 'contiguous', 'to', 'cpu', 'cuda', 'float', 'double', 'half', 'bfloat16', 'type', 'type_as', 'chunk',
  'split', 'tensor_split', 'unbind', 'movedim', 'moveaxis', 'as_strided', 'diagonal', 'unfold', 'swapaxes', 'swapdims', 'real', 'imag',
  'view_as_real', 'view_as_complex', 'squeeze_', 'unsqueeze_', 'requires_grad_', 'atleast_1d', 'atleast_2d', 'atleast_3d',
]);

/** Container methods that hand back an object already held (never one computed by the call). */
const RETURNS_HELD_OBJECT_METHODS = new Set(['pop', 'popleft', 'popitem', 'get', 'setdefault', 'copy', 'values', 'items', 'keys', 'peek', 'top']);
/** Builtins whose result is (or holds) one of their arguments' elements, not a new tensor. */
const RETURNS_ELEMENT_BUILTINS = new Set(['max', 'min', 'next', 'iter', 'list', 'tuple', 'sorted', 'reversed', 'getattr', 'dict', 'zip', 'enumerate', 'map', 'filter', 'set', 'vars']);

const DISTRIBUTIONS = /^torch\.distributions\./;

/** Modules whose functions return NumPy arrays or Python numbers, never tensors with autograd history. */
const NON_TENSOR_MODULES = /^(numpy|scipy|sklearn|math|statistics|pandas)\./;

class DefAt implements Def {
  constructor(
    readonly key: string,
    readonly kind: DefKind,
    readonly stmt: SyntaxNode,
    readonly value: SyntaxNode | null,
    private readonly at: SyntaxNode,
    private readonly atEnd: boolean,
    readonly element?: number,
  ) {}

  get effective(): number {
    return this.atEnd ? this.at.end : this.at.start;
  }
}

const COMPREHENSIONS = new Set(['list_comprehension', 'generator_expression', 'set_comprehension', 'dictionary_comprehension']);
const MAX_DEPTH = 40;

export class ScopeFlow {
  readonly defs = new Map<string, Def[]>();
  private readonly defTaint = new Map<Def, Taint>();
  private readonly backwardKeys = new Set<string>();
  /**
   * Answers to outside questions (taintOf at depth 0), per expression: rules ask about the same calls many
   * times (MH010 traces each D input through every call it reaches, asking each call's taint), and each
   * answer walks up to MAX_DEPTH receivers and operands. Valid as long as the flow is (see flowOf).
   */
  private readonly outsideTaint = new Map<SyntaxNode, Taint>();
  private depth = 0;

  constructor(
    /** Updated when a cached flow is reused for a later version of the document. */
    public file: SourceFile,
    /** Updated too: a module flow is reused while the module's own code is unchanged (ModuleCodeCache). */
    public scope: SyntaxNode,
    /** Parameters assumed to hold tensors with history (to ask "would this method keep its argument?"). */
    private readonly taintedParams: ReadonlySet<string> = new Set(),
    /** Module-level functions of this file whose return value carries history (`loss = train_step(...)`). */
    private readonly graphReturning: ReadonlySet<string> = new Set(),
    /** Module-level functions of this file that return a tuple: the taint of each position (`return loss, acc`). */
    private readonly tupleReturning: ReadonlyMap<string, readonly Taint[]> = new Map(),
    /** Module-level functions of this file whose every return is without history (`return loss.detach()`). */
    private readonly cleanReturning: ReadonlySet<string> = new Set(),
  ) {
    this.collect();
  }

  /** Definitions of `key` visible at `offset` (the use), nearest first, merged over branches. */
  reachingDefs(key: string, use: SyntaxNode, offset = use.start): Def[] {
    const list = this.defs.get(key);
    if (list === undefined) return [];
    const out: Def[] = [];
    for (let i = list.length - 1; i >= 0; i--) {
      const d = list[i];
      if (d.effective > offset) continue;
      if (d.stmt.start <= use.start && use.end <= d.stmt.end && d.kind !== 'for' && d.kind !== 'with' && d.kind !== 'param') continue; // `x = f(x)` reads the old x
      out.push(d);
      if (d.kind === 'store' || d.kind === 'aug') continue;
      if (dominates(d, use)) break;
    }
    return out;
  }

  /** Whether the key has `.backward()` (or accelerator.backward(key)...) called on it in this scope. */
  isBackwardKey(key: string): boolean {
    return this.backwardKeys.has(key);
  }

  taintOf(expr: SyntaxNode | null): Taint {
    if (expr === null) return Taint.Unknown;
    if (this.depth > MAX_DEPTH) return Taint.Unknown;
    const outside = this.depth === 0;
    if (outside) {
      const known = this.outsideTaint.get(expr);
      if (known !== undefined) return known;
    }
    this.depth++;
    try {
      const t = this.evaluate(expr);
      if (outside) this.outsideTaint.set(expr, t);
      return t;
    } finally {
      this.depth--;
    }
  }

  /** Taint of what `key` holds at `use`. */
  taintOfKey(key: string, use: SyntaxNode): Taint {
    const comp = this.comprehensionBinding(key, use);
    if (comp !== null) return this.taintOf(comp);
    const defs = this.reachingDefs(key, use);
    // `if isinstance(loss, torch.Tensor): loss = loss.item()`: a conversion of the value itself, even in
    // a branch, means the code makes sure it holds no graph from here on.
    const nearest = defs[0];
    if (nearest !== undefined && nearest.kind === 'assign' && nearest.value !== null && this.isConversionOf(nearest.value, key) && this.taintOfDef(nearest) === Taint.Clean) return Taint.Clean;
    let t = defs.length === 0 ? Taint.Unknown : Taint.Clean;
    for (const d of defs) t = Math.max(t, this.taintOfDef(d));
    return t;
  }

  /** `x.item()`, `float(x)`, `x.detach()`, `x.detach().cpu()`: a call on `key` itself. */
  private isConversionOf(value: SyntaxNode, key: string): boolean {
    if (value.type !== 'call') return false;
    const fn = childByField(value, 'function');
    if (fn === null) return false;
    if (fn.type === 'identifier') {
      const args = childByField(value, 'arguments')?.children.filter((c) => c.named) ?? [];
      return args.length === 1 && keyOf(this.file, args[0]) === key;
    }
    if (fn.type !== 'attribute') return false;
    let object = childByField(fn, 'object');
    while (object?.type === 'call') {
      const inner = childByField(object, 'function');
      object = inner?.type === 'attribute' ? childByField(inner, 'object') : null;
    }
    return object !== null && keyOf(this.file, object) === key;
  }

  taintOfDef(d: Def): Taint {
    const cached = this.defTaint.get(d);
    if (cached !== undefined) return cached;
    this.defTaint.set(d, Taint.Unknown); // cycles
    let t: Taint;
    switch (d.kind) {
      case 'param':
        t = this.taintedParams.has(d.key) ? Taint.Tainted : Taint.Unknown;
        break;
      case 'with':
        t = Taint.Unknown;
        break;
      case 'aug': {
        // `acc += v`: what acc held before, plus v.
        const before = this.reachingDefs(d.key, d.stmt, d.stmt.start);
        let prev: Taint = before.length === 0 ? Taint.Unknown : Taint.Clean;
        for (const b of before) prev = Math.max(prev, this.taintOfDef(b));
        t = Math.max(prev, this.taintOf(d.value));
        break;
      }
      default:
        t = d.kind === 'assign' && this.computedWithoutGrad(d.value) ? Taint.Clean : d.element === undefined ? this.taintOf(d.value) : this.elementTaint(d.value, d.element);
    }
    this.defTaint.set(d, t);
    return t;
  }

  /**
   * `with torch.no_grad(): p = F.softmax(out, 1)` (or `acc = (pred == y).float().mean() * 100`): an op run
   * with autograd off returns a tensor without history, whatever its inputs hold. Not a view or a method
   * that may return its receiver itself (`out[0]`, `out.view(-1)`, `out.cpu()` on a CPU tensor, `out.float()`):
   * those share the receiver's storage and keep its graph alive through `._base` or by being the same object.
   */
  private computedWithoutGrad(value: SyntaxNode | null): boolean {
    if (value === null || (value.type !== 'call' && value.type !== 'binary_operator' && value.type !== 'unary_operator')) return false;
    if (value.type === 'call') {
      const fn = childByField(value, 'function');
      const isMethod = fn?.type === 'attribute';
      const name = fn === null ? '' : isMethod ? this.file.textOf(childByField(fn, 'attribute') ?? fn) : this.file.textOf(fn).replace(/^.*\./, '');
      if (VIEW_OR_SELF.has(name)) return false;
      // `loss.clamp_(0, 10)` returns its receiver, history and all; `max(losses)`, `losses.pop()` and
      // `stats.get('loss')` return an object made before the block, which keeps whatever graph it had.
      if (isMethod && (name.endsWith('_') || RETURNS_HELD_OBJECT_METHODS.has(name))) return false;
      if (!isMethod && RETURNS_ELEMENT_BUILTINS.has(name)) return false;
    }
    return gradOffAt(this.file, value);
  }

  private evaluate(e: SyntaxNode): Taint {
    switch (e.type) {
      case 'identifier': {
        const name = this.file.textOf(e);
        if (name === 'None' || name === 'True' || name === 'False') return Taint.Clean;
        return this.upgrade(name, this.taintOfKey(name, e));
      }
      case 'attribute': {
        const attr = childByField(e, 'attribute');
        if (attr !== null && SAFE_ATTRIBUTES.has(this.file.textOf(attr))) return Taint.Clean;
        if (attr !== null && this.file.textOf(attr) === 'indices' && this.isValuesIndices(childByField(e, 'object'))) return Taint.Clean;
        const key = keyOf(this.file, e);
        if (key !== null && this.defs.has(key)) return this.upgrade(key, this.taintOfKey(key, e));
        return this.taintOf(childByField(e, 'object'));
      }
      case 'subscript': {
        // `step(x)[0]`: one position of a tuple returned by a function of this file.
        const index = childByField(e, 'subscript');
        if (index?.type === 'integer' && /^\d+$/.test(this.file.textOf(index))) {
          const i = Number(this.file.textOf(index));
          const value = childByField(e, 'value');
          const t = this.elementTaint(value, i);
          if (t !== Taint.Unknown) return t;
          // `r = step(x)` ... `r[0]`: every definition reaching the use is such a call.
          const defs = value?.type === 'identifier' ? this.reachingDefs(this.file.textOf(value), value) : [];
          if (defs.length > 0 && defs.every((d) => d.kind === 'assign' && d.element === undefined && this.tupleShapeOf(d.value) !== undefined)) {
            let merged = Taint.Clean;
            for (const d of defs) merged = Math.max(merged, this.elementTaint(d.value, i));
            if (merged !== Taint.Unknown) return merged;
          }
        }
        const entry = this.entryTaint(e);
        if (entry !== null) return entry;
        return this.taintOf(childByField(e, 'value'));
      }
      case 'call':
        return this.callTaint(e);
      case 'binary_operator':
      case 'boolean_operator':
        return Math.max(this.taintOf(childByField(e, 'left')), this.taintOf(childByField(e, 'right')));
      case 'unary_operator':
        return this.taintOf(childByField(e, 'argument'));
      case 'not_operator':
      case 'comparison_operator':
      case 'string':
      case 'concatenated_string':
      case 'integer':
      case 'float':
      case 'true':
      case 'false':
      case 'none':
        return Taint.Clean;
      case 'parenthesized_expression':
      case 'tuple':
      case 'list':
      case 'set':
      case 'expression_list': {
        let t = Taint.Clean;
        for (const c of e.children) if (c.named && c.type !== 'comment') t = Math.max(t, this.taintOf(c));
        return t;
      }
      case 'dictionary': {
        let t = Taint.Clean;
        for (const pair of e.children) if (pair.type === 'pair') t = Math.max(t, this.taintOf(childByField(pair, 'value')));
        return t;
      }
      case 'conditional_expression': {
        const parts = e.children.filter((c) => c.named);
        // `loss.item() if torch.is_tensor(loss) else loss`: the branch that keeps `loss` as is runs only on a number.
        const test = tensorTestOf(this.file, parts[1] ?? null);
        const keptAsNumber = (branch: SyntaxNode | undefined, condHolds: boolean): boolean => test !== null && test.whenTensor !== condHolds && branch !== undefined && keyOf(this.file, branch) === test.key;
        const whenTrue = keptAsNumber(parts[0], true) ? Taint.Clean : this.taintOf(parts[0] ?? null);
        const whenFalse = keptAsNumber(parts[2], false) ? Taint.Clean : this.taintOf(parts[2] ?? null);
        return Math.max(whenTrue, whenFalse);
      }
      case 'list_comprehension':
      case 'generator_expression':
      case 'set_comprehension':
        return this.taintOf(childByField(e, 'body'));
      case 'dictionary_comprehension': {
        const body = childByField(e, 'body');
        return body?.type === 'pair' ? this.taintOf(childByField(body, 'value')) : Taint.Unknown;
      }
      case 'list_splat':
      case 'keyword_argument':
        return this.taintOf(e.children.find((c) => c.named && c.field !== 'name') ?? null);
      case 'named_expression':
        return this.taintOf(childByField(e, 'value'));
      default:
        return Taint.Unknown;
    }
  }

  /**
   * `best['epoch']` with `best` a dict of this scope: only what its definitions put under that key
   * (`best = {'epoch': 0, 'loss': loss}` then `best['epoch'] = epoch`) counts, not the loss beside it.
   * Null when the subscript is not a literal key of a local name, or some definition is opaque.
   */
  private entryTaint(e: SyntaxNode): Taint | null {
    const value = childByField(e, 'value');
    const key = literalKeyOf(this.file, childByField(e, 'subscript'));
    const container = key === null ? null : keyOf(this.file, value);
    if (key === null || container === null || value === null) return null;
    const defs = this.reachingDefs(container, value);
    if (defs.length === 0) return null;
    let t = Taint.Clean;
    let sawEntry = false;
    for (const d of defs) {
      const written = entryWrittenBy(this.file, d.kind, d.stmt, d.value, container, key);
      if (written === 'absent') continue;
      if (written === 'whole' && d.kind !== 'store') return null;
      sawEntry = true;
      t = Math.max(t, written === 'whole' ? this.taintOf(d.value) : this.taintOf(written));
    }
    return sawEntry ? t : null;
  }

  /**
   * Position `i` of what `value` evaluates to, when `value` calls a module-level function of this file
   * whose every `return` is a tuple of the same length. Otherwise the taint of the whole value.
   */
  private elementTaint(value: SyntaxNode | null, i: number): Taint {
    const shape = this.tupleShapeOf(value);
    if (value === null || shape === undefined || i >= shape.length) return this.taintOf(value);
    if (gradOffAt(this.file, value)) return Taint.Clean;
    // Unknown in the callee (`return loss, acc` where loss comes from a parameter): what the call says.
    return shape[i] === Taint.Unknown ? this.taintOf(value) : shape[i];
  }

  /** The per-position taints when `value` calls a tuple-returning function of this file. */
  private tupleShapeOf(value: SyntaxNode | null): readonly Taint[] | undefined {
    const fn = value?.type === 'call' ? childByField(value, 'function') : null;
    if (value !== null && isValuesIndicesCall(this.file, value)) return VALUES_INDICES;
    return fn?.type === 'identifier' ? this.tupleReturning.get(this.file.textOf(fn)) : undefined;
  }

  /**
   * A `torch.distributions` object: built by a call of that package here, or a name every reaching
   * definition of which is one (`m = Categorical(probs)`). Its `sample()` draws without history (it runs
   * under no_grad; `rsample()` is the differentiable one), so an RL action sampled from it is clean. Other
   * `sample()` methods (a SAC policy's `sample(state)` returns log-probs with history) are not.
   */
  private isDistribution(e: SyntaxNode | null): boolean {
    const built = (v: SyntaxNode | null): boolean => {
      const fn = v?.type === 'call' ? childByField(v, 'function') : null;
      return fn !== null && DISTRIBUTIONS.test(qualifiedName(this.file, fn) ?? '');
    };
    if (e === null || built(e)) return e !== null;
    if (e.type !== 'identifier') return false;
    const defs = this.reachingDefs(this.file.textOf(e), e);
    return defs.length > 0 && defs.every((d) => d.kind === 'assign' && d.element === undefined && built(d.value));
  }

  /**
   * A (values, indices) result (`out.topk(5)`, `torch.sort(x, 1)`, `out.max(dim=1)`), or a name every
   * reaching definition of which is one: its `.indices` are integers without history.
   */
  private isValuesIndices(e: SyntaxNode | null): boolean {
    if (e === null) return false;
    if (e.type === 'call') return isValuesIndicesCall(this.file, e);
    if (e.type !== 'identifier') return false;
    const defs = this.reachingDefs(this.file.textOf(e), e);
    return defs.length > 0 && defs.every((d) => d.kind === 'assign' && d.element === undefined && d.value !== null && isValuesIndicesCall(this.file, d.value));
  }

  /** A name that receives `.backward()` holds a graph even when its source is opaque to us. */
  private upgrade(key: string, t: Taint): Taint {
    return t === Taint.Unknown && this.backwardKeys.has(key) ? Taint.Tainted : t;
  }

  private argsTaint(call: SyntaxNode): Taint {
    const args = childByField(call, 'arguments');
    let t = Taint.Clean;
    if (args === null) return t;
    for (const a of args.children) {
      if (!a.named || a.type === 'comment') continue;
      t = Math.max(t, this.taintOf(a.type === 'keyword_argument' ? childByField(a, 'value') : a));
    }
    return t;
  }

  private callTaint(call: SyntaxNode): Taint {
    const file = this.file;
    const fn = childByField(call, 'function');
    if (fn === null) return Taint.Unknown;
    if (forwardReceiver(file, call) !== null) {
      if (gradOffAt(file, call)) return Taint.Clean;
      return gradMaybeOffAt(file, call) ? Taint.Unknown : Taint.Tainted;
    }
    // numpy / sklearn / scipy / math results are never tensors (`log_loss(y, p)`, `np.mean(x)`): no history
    // to keep, and `.detach()` / `.item()` would not apply to them.
    const imported = qualifiedName(file, fn);
    if (imported !== null && NON_TENSOR_MODULES.test(imported) && importBindings(file).has(file.textOf(fn).split('.')[0].trim())) return Taint.Clean;
    if (fn.type === 'attribute') {
      const attr = childByField(fn, 'attribute');
      const method = attr === null ? '' : file.textOf(attr);
      if (SAFE_METHODS.has(method)) return Taint.Clean;
      if (method === 'sample' && this.isDistribution(childByField(fn, 'object'))) return Taint.Clean;
      const name = qualifiedName(file, fn);
      if (name !== null && name.startsWith('torch.')) return this.torchCallTaint(name, call);
      const receiver = this.taintOf(childByField(fn, 'object'));
      if (receiver === Taint.Tainted) return Taint.Tainted;
      return this.argsTaint(call) === Taint.Tainted || receiver === Taint.Unknown ? Taint.Unknown : receiver;
    }
    if (fn.type === 'identifier') {
      const name = file.textOf(fn);
      if (CLEAN_BUILTINS.has(name)) return Taint.Clean;
      if (PROPAGATING_BUILTINS.has(name)) return this.argsTaint(call);
      const q = qualifiedName(file, fn);
      if (q !== null && q.startsWith('torch.')) return this.torchCallTaint(q, call);
      // A helper of this file that returns `loss.detach()` / `.item()` / values computed under no_grad.
      if (this.cleanReturning.has(name)) return Taint.Clean;
      // criterion(out, y), loss_fn(...): a loss of tensors with history has history.
      if (/criterion|loss/i.test(name)) return this.argsTaint(call);
      if (this.graphReturning.has(name) && !gradOffAt(file, call)) return Taint.Tainted;
    }
    // Unknown functions: their result may or may not depend on their arguments' graphs.
    return Taint.Unknown;
  }

  private torchCallTaint(name: string, call: SyntaxNode): Taint {
    if (CLEAN_TORCH.test(name)) {
      const args = this.file.textOf(childByField(call, 'arguments') ?? call);
      if (name === 'torch.autograd.grad') return /create_graph\s*=\s*(?!False)/.test(args) ? Taint.Tainted : Taint.Clean;
      return /requires_grad\s*=\s*True/.test(args) ? Taint.Tainted : Taint.Clean;
    }
    // torch.cat/stack/F.cross_entropy/distributions: the result depends on the arguments.
    return this.argsTaint(call);
  }

  /** The iterable that binds `key` in a comprehension enclosing `use`, or null. */
  private comprehensionBinding(key: string, use: SyntaxNode): SyntaxNode | null {
    if (key.includes('.')) return null;
    for (let p = use.parent; p !== null && p !== this.scope; p = p.parent) {
      if (p.type === 'function_definition' || p.type === 'lambda') return null;
      if (!COMPREHENSIONS.has(p.type)) continue;
      for (const clause of p.children) {
        if (clause.type !== 'for_in_clause') continue;
        const left = childByField(clause, 'left');
        if (left !== null && targetNames(this.file, left).includes(key)) return childByField(clause, 'right');
      }
    }
    return null;
  }

  // ---- collection ---------------------------------------------------------------------------

  /** `effective` is an edge of a node, not an offset, so a flow stays right when its nodes are shifted by an edit. */
  private add(key: string | null, kind: DefKind, stmt: SyntaxNode, value: SyntaxNode | null, effective: SyntaxNode, atEnd = true, element?: number): void {
    if (key === null) return;
    let list = this.defs.get(key);
    if (list === undefined) {
      list = [];
      this.defs.set(key, list);
    }
    list.push(new DefAt(key, kind, stmt, value, effective, atEnd, element));
  }

  private collect(): void {
    const file = this.file;
    const scope = this.scope;
    if (scope.type === 'function_definition') {
      const params = childByField(scope, 'parameters');
      for (const p of params?.children ?? []) {
        const name = p.type === 'identifier' ? p : p.type === 'typed_parameter' ? (p.children.find((c) => c.type === 'identifier') ?? null) : childByField(p, 'name');
        if (name?.type === 'identifier') this.add(file.textOf(name), 'param', scope, null, scope, false);
      }
    }
    const body = scope.type === 'function_definition' ? childByField(scope, 'body') : scope;
    if (body === null) return;
    const stack: SyntaxNode[] = [body];
    while (stack.length > 0) {
      const n = stack.pop()!;
      switch (n.type) {
        case 'function_definition':
        case 'class_definition':
        case 'lambda':
          continue; // their bodies are other scopes
        case 'assignment':
          this.collectAssignment(n);
          break;
        case 'augmented_assignment': {
          const left = childByField(n, 'left');
          const stmt = statementOf(n);
          if (left?.type === 'subscript') this.add(keyOf(file, childByField(left, 'value')), 'store', stmt, childByField(n, 'right'), stmt);
          else this.add(keyOf(file, left), 'aug', stmt, childByField(n, 'right'), stmt);
          break;
        }
        case 'for_statement': {
          const left = childByField(n, 'left');
          const body = childByField(n, 'body');
          if (left !== null) for (const t of targetKeys(file, left)) this.add(t, 'for', n, childByField(n, 'right'), body ?? n, body === null);
          break;
        }
        case 'with_item': {
          const value = childByField(n, 'value');
          const alias = value?.type === 'as_pattern' ? childByField(value, 'alias') : null;
          const withStmt = n.parent?.parent ?? n;
          const withBody = childByField(withStmt, 'body');
          if (alias !== null) for (const t of targetKeys(file, alias)) this.add(t, 'with', withStmt, null, withBody ?? n, withBody === null);
          break;
        }
        case 'named_expression': {
          const name = childByField(n, 'name');
          if (name !== null) this.add(file.textOf(name), 'assign', n, childByField(n, 'value'), n);
          break;
        }
        case 'call':
          this.collectCall(n);
          break;
      }
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
    }
    for (const list of this.defs.values()) list.sort((a, b) => a.effective - b.effective || a.stmt.start - b.stmt.start);
  }

  private collectAssignment(n: SyntaxNode): void {
    const file = this.file;
    const stmt = statementOf(n);
    const right = childByField(n, 'right');
    // `a = b = expr`: every target gets expr.
    let value = right;
    while (value?.type === 'assignment') value = childByField(value, 'right');
    const left = childByField(n, 'left');
    if (left === null) return;
    if (left.type === 'subscript') {
      this.add(keyOf(file, childByField(left, 'value')), 'store', stmt, value, stmt);
      return;
    }
    if ((left.type === 'pattern_list' || left.type === 'tuple_pattern' || left.type === 'list_pattern') && value !== null && (value.type === 'expression_list' || value.type === 'tuple')) {
      const targets = left.children.filter((c) => c.named);
      const values = value.children.filter((c) => c.named && c.type !== 'comment');
      if (targets.length === values.length) {
        targets.forEach((t, i) => {
          for (const k of targetKeys(file, t)) this.add(k, 'assign', stmt, values[i], stmt);
        });
        return;
      }
    }
    // `loss, out = step(x)` with `def step(...): ... return loss, out`: each target gets its own position.
    const shape = this.tupleShapeOf(value);
    if (shape !== undefined && (left.type === 'pattern_list' || left.type === 'tuple_pattern' || left.type === 'list_pattern')) {
      const targets = left.children.filter((c) => c.named && c.type !== 'comment');
      const splat = targets.findIndex((t) => t.type === 'list_splat_pattern');
      // `loss, *rest = step(x)`: the positions before the splat are known, the rest keep the call's taint.
      if (splat >= 0 ? splat < shape.length && targets.length - 1 <= shape.length : targets.length === shape.length) {
        targets.forEach((t, i) => {
          const element = splat < 0 || i < splat ? i : undefined;
          for (const k of targetKeys(file, t)) this.add(k, 'assign', stmt, value, stmt, true, element);
        });
        return;
      }
    }
    for (const k of targetKeys(file, left)) this.add(k, 'assign', stmt, value, stmt);
  }

  private collectCall(call: SyntaxNode): void {
    const file = this.file;
    const fn = childByField(call, 'function');
    if (fn?.type !== 'attribute') return;
    const attr = childByField(fn, 'attribute');
    const method = attr === null ? '' : file.textOf(attr);
    if (method === 'append' || method === 'extend' || method === 'insert' || method === 'appendleft' || method === 'add' || method === 'put') {
      const args = childByField(call, 'arguments');
      const values = args === null ? [] : args.children.filter((c) => c.named && c.type !== 'comment');
      const value = method === 'insert' ? (values[1] ?? null) : (values[0] ?? null);
      const stmt = statementOf(call);
      this.add(keyOf(file, childByField(fn, 'object')), 'store', stmt, value, stmt);
      return;
    }
    const targets = backwardTargets(file, call);
    if (targets !== null) {
      for (const t of targets) {
        const key = keyOf(file, t);
        if (key !== null) this.backwardKeys.add(key);
        // `scaler.scale(loss).backward()`
        if (t.type === 'call') for (const a of t.children.find((c) => c.type === 'argument_list')?.children ?? []) {
          const k = keyOf(file, a);
          if (k !== null) this.backwardKeys.add(k);
        }
      }
    }
  }

  /**
   * Keys an expression reads as data: identifiers and attribute chains, not the names of called
   * functions (`criterion(out, y)` reads out and y; `out.sum()` reads out).
   */
  dataKeys(expr: SyntaxNode | null): SyntaxNode[] {
    const out: SyntaxNode[] = [];
    if (expr === null) return out;
    const imports = importBindings(this.file);
    const stack = [expr];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n.type === 'identifier' || n.type === 'attribute') {
        if (n.field === 'function' && n.parent?.type === 'call') {
          if (n.type === 'attribute') {
            const obj = childByField(n, 'object');
            if (obj !== null) stack.push(obj);
          }
          continue;
        }
        const key = keyOf(this.file, n);
        if (key !== null && imports.has(key.split('.')[0]) && !this.defs.has(key.split('.')[0])) continue; // `F.relu`, `torch.float`
        if (key !== null) {
          out.push(n);
          continue;
        }
      }
      if (n.type === 'keyword_argument') {
        const v = childByField(n, 'value');
        if (v !== null) stack.push(v);
        continue;
      }
      if (n.type === 'lambda' || n.type === 'function_definition') continue;
      for (const c of n.children) stack.push(c);
    }
    return out;
  }
}

function statementOf(n: SyntaxNode): SyntaxNode {
  let s = n;
  while (s.parent !== null && s.parent.type !== 'block' && s.parent.type !== 'module') s = s.parent;
  return s;
}

/** A definition dominates a later use when no branch (if/try arm, loop body) separates them. */
export function dominates(d: Def, use: SyntaxNode): boolean {
  if (d.kind === 'param') return true;
  if (d.kind === 'for' || d.kind === 'with') {
    const body = childByField(d.stmt, 'body');
    if (body !== null && body.start <= use.start && use.end <= body.end) return true;
    if (d.kind === 'for') return false;
  }
  for (let block = d.stmt.parent; block !== null; ) {
    if (block.start <= use.start && use.end <= block.end) return true;
    if (block.type === 'module') return true;
    const owner = block.parent;
    if (owner === null || BRANCH_OWNERS.has(owner.type)) return false;
    if (owner.type === 'function_definition') return true;
    // with-statement bodies always run: look at the block holding the with statement.
    block = owner.parent;
    while (block !== null && block.type !== 'block' && block.type !== 'module') block = block.parent;
  }
  return true;
}

const BRANCH_OWNERS = new Set(['if_statement', 'elif_clause', 'else_clause', 'for_statement', 'while_statement', 'try_statement', 'except_clause', 'except_group_clause', 'case_clause', 'finally_clause']);

function targetNames(file: SourceFile, target: SyntaxNode): string[] {
  return targetKeys(file, target).filter((k) => !k.includes('.'));
}

function targetKeys(file: SourceFile, target: SyntaxNode): string[] {
  const key = keyOf(file, target);
  if (key !== null) return [key];
  const out: string[] = [];
  for (const c of target.children) if (c.named) out.push(...targetKeys(file, c));
  return out;
}

const flowCache = new NodeMemo<ScopeFlow>('flow.scope');

/** Model and grad facts together: what a flow's taint results depend on beyond its own scope. */
export function factsSignature(file: SourceFile): string {
  return combine(file, 'facts', () => [modelSignature(file), gradSignature(file)]);
}

/**
 * The (cached) flow of a function or module scope. A function's flow is reused across edits that leave
 * its statement and the file-wide model/grad facts unchanged.
 */
export function flowOf(file: SourceFile, scope: SyntaxNode): ScopeFlow {
  const signature = flowSignature(file);
  const compute = (): ScopeFlow => new ScopeFlow(file, scope, new Set(), graphReturningFunctions(file), tupleReturningFunctions(file), cleanReturningFunctions(file));
  const flow = scope.type === 'module' ? moduleFlowCache.get(file, signature, compute) : flowCache.get(file, scope, scopeSignature(file, scope, signature), compute);
  flow.file = file;
  flow.scope = scope;
  return flow;
}

const moduleFlowCache = new ModuleCodeMemo<ScopeFlow>('flow.module');

/**
 * `signature` (file-wide inputs) with the grad state that a function scope's taints read around the
 * function node (enclosingGradToken): the deps of a memo kept on a function node whose value reads its
 * flow's taints. In a one-shot session (one version, nothing to tell apart) `signature` alone.
 */
export function scopeSignature(file: SourceFile, scope: SyntaxNode, signature: string): string {
  return scope.type !== 'function_definition' || file.session.oneShot ? signature : `${signature}|${enclosingGradToken(file, scope)}`;
}

/** Everything a scope's flow depends on beyond its own statements. */
export function flowSignature(file: SourceFile): string {
  return combine(file, 'flow', () => [factsSignature(file), [...graphReturningFunctions(file)].join(','), [...cleanReturningFunctions(file)].join(','), tupleReturningSignature(file)]);
}

const returningFnCache = new NodeMemo<Taint>('flow.returnTaint');
const returningCache = new VersionMemo<{ readonly tainted: ReadonlySet<string>; readonly clean: ReadonlySet<string> }>('flow.graphReturning');

/**
 * Names of module-level functions whose `return` value carries autograd history in the function's
 * own (intra-procedural) flow, e.g. a `train_step` that returns its loss. One level deep on purpose:
 * callers of such functions see a tensor with history; deeper chains stay Unknown (no false alarms).
 */
export function graphReturningFunctions(file: SourceFile): ReadonlySet<string> {
  return returningCache.get(file, computeReturning).tainted;
}

/**
 * Names of module-level functions every `return` of which is a value without history in the function's own
 * flow: a helper that returns `loss.detach()`, `loss.item()`, or values it computed under no_grad
 * (stylegan2's `reduce_loss_dict`), whatever its name says (`*loss*` names are otherwise read as losses of
 * their arguments). Generators are left out (their returns are not what the call gives).
 */
export function cleanReturningFunctions(file: SourceFile): ReadonlySet<string> {
  return returningCache.get(file, computeReturning).clean;
}

function computeReturning(file: SourceFile): { tainted: ReadonlySet<string>; clean: ReadonlySet<string> } {
  const tainted = new Set<string>();
  const clean = new Set<string>();
  const signature = factsSignature(file);
  for (const [name, fn] of moduleFunctionsThatReturn(file)) {
    const t = returningFnCache.get(file, fn, scopeSignature(file, fn, signature), () => returnTaint(new ScopeFlow(file, fn), fn));
    if (t === Taint.Tainted) tainted.add(name);
    else if (t === Taint.Clean) clean.add(name);
  }
  return { tainted, clean };
}

/** (name, definition) of each module-level function (decorated or not) whose text has a `return`. */
function moduleFunctionsThatReturn(file: SourceFile): Array<[string, SyntaxNode]> {
  const out: Array<[string, SyntaxNode]> = [];
  for (const top of file.root.children) {
    const fn = top.type === 'decorated_definition' ? childByField(top, 'definition') : top;
    if (fn === null || fn.type !== 'function_definition') continue;
    const nameNode = childByField(fn, 'name');
    if (nameNode !== null && file.textOf(fn).includes('return')) out.push([file.textOf(nameNode), fn]);
  }
  return out;
}

/**
 * Tainted when some non-tuple `return` carries history (tuples are tupleReturningFunctions' business);
 * Clean when every `return` gives a value without history (at least one value, no `yield`); else Unknown.
 */
function returnTaint(flow: ScopeFlow, fn: SyntaxNode): Taint {
  const stack = [...fn.children];
  let values = 0;
  let allClean = true;
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'lambda' || n.type === 'class_definition') continue;
    if (n.type === 'yield') allClean = false;
    if (n.type === 'return_statement') {
      const value = firstNamedChild(n);
      if (value === null) continue;
      values++;
      const t = flow.taintOf(value);
      if (value.type !== 'tuple' && value.type !== 'expression_list' && t === Taint.Tainted) return Taint.Tainted;
      if (t !== Taint.Clean) allClean = false;
      continue;
    }
    for (const c of n.children) stack.push(c);
  }
  return allClean && values > 0 ? Taint.Clean : Taint.Unknown;
}

const tupleFnCache = new NodeMemo<readonly Taint[] | null>('flow.tupleReturn');
const tupleCache = new VersionMemo<ReadonlyMap<string, readonly Taint[]>>('flow.tupleReturning');

/**
 * Module-level functions of this file whose every `return` is a tuple of one length (`return loss, acc`),
 * with the taint of each position merged over the returns, in the function's own flow (one level deep,
 * like graphReturningFunctions). The caller then knows which of `loss, acc = step(...)` has history.
 */
export function tupleReturningFunctions(file: SourceFile): ReadonlyMap<string, readonly Taint[]> {
  return tupleCache.get(file, computeTupleReturning);
}

/** `name:taints` of every tuple-returning function: what callers' flows depend on. */
export function tupleReturningSignature(file: SourceFile): string {
  return [...tupleReturningFunctions(file)].map(([name, shape]) => `${name}:${shape.join('')}`).join(',');
}

function computeTupleReturning(file: SourceFile): ReadonlyMap<string, readonly Taint[]> {
  const found = new Map<string, readonly Taint[]>();
  const signature = factsSignature(file);
  for (const [name, fn] of moduleFunctionsThatReturn(file)) {
    const shape = tupleFnCache.get(file, fn, scopeSignature(file, fn, signature), () => returnedTuple(new ScopeFlow(file, fn), fn));
    if (shape !== null) found.set(name, shape);
  }
  return found;
}

function returnedTuple(flow: ScopeFlow, fn: SyntaxNode): readonly Taint[] | null {
  let shape: Taint[] | null = null;
  const stack = [...fn.children];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'function_definition' || n.type === 'lambda' || n.type === 'class_definition') continue;
    if (n.type === 'return_statement') {
      let value = firstNamedChild(n);
      while (value?.type === 'parenthesized_expression') value = firstNamedChild(value);
      // A bare `return`, `return None` or `return x` next to `return a, b`: the shape is not known.
      if (value === null || (value.type !== 'tuple' && value.type !== 'expression_list')) return null;
      const items = value.children.filter((c) => c.named && c.type !== 'comment');
      if (items.some((c) => c.type === 'list_splat')) return null;
      if (shape === null) shape = items.map((c) => flow.taintOf(c));
      else if (shape.length !== items.length) return null;
      else items.forEach((c, i) => (shape![i] = Math.max(shape![i], flow.taintOf(c))));
      continue;
    }
    for (const c of n.children) stack.push(c);
  }
  return shape;
}

/** The flow of the scope a node is in, or null in class bodies. */
export function flowAt(file: SourceFile, node: SyntaxNode): ScopeFlow | null {
  const scope = scopeOf(node);
  return scope === null ? null : flowOf(file, scope);
}

/** `(values, indices)` of a reduction: the values keep the input's history (Unknown: the call's taint), the integer indices have none. */
const VALUES_INDICES: readonly Taint[] = [Taint.Unknown, Taint.Clean];
const PAIR_METHODS = /^(topk|sort|kthvalue|mode)$/;
const PAIR_WITH_DIM = /^(max|min|median|nanmedian)$/;

/**
 * `out.max(1)`, `torch.max(out, dim=1)`, `out.topk(5)`, `x.sort()`: calls returning a (values, indices)
 * pair. `max`/`min`/`median` only do with a dimension (`x.max()` is one tensor).
 */
function isValuesIndicesCall(file: SourceFile, call: SyntaxNode): boolean {
  if (call.type !== 'call') return false;
  const fn = childByField(call, 'function');
  if (fn?.type !== 'attribute') return false;
  const method = file.textOf(childByField(fn, 'attribute') ?? fn);
  const viaTorch = file.textOf(childByField(fn, 'object') ?? fn) === 'torch';
  if (PAIR_METHODS.test(method)) return true;
  if (!PAIR_WITH_DIM.test(method)) return false;
  const args = childByField(call, 'arguments');
  const named = args === null ? [] : args.children.filter((c) => c.named && c.type !== 'comment');
  if (named.some((a) => a.type === 'keyword_argument' && /^dim\s*=/.test(file.textOf(a)))) return true;
  const positional = named.filter((a) => a.type !== 'keyword_argument');
  // `x.max(1)` / `torch.max(x, 1)`: an integer dimension (not `x.max(other)`, elementwise).
  const dim = positional[viaTorch ? 1 : 0];
  return dim !== undefined && /^-?\d+$/.test(file.textOf(dim));
}
