// MH009 blocking-transfer: host-to-GPU copies of batch data that serialise with the step.
//  (a) `.to(device)` / `.cuda()` of a batch from a DataLoader built with `pin_memory=True`, without
//      `non_blocking=True`: the copy could overlap with compute but blocks the host instead;
//  (b) a DataLoader whose batches a training loop moves to CUDA, built without `pin_memory`: every copy
//      goes through a pageable staging buffer and cannot be asynchronous at all.
// Both need the loader's construction and the transfer in this file; anything less stays silent.
import { childByField, firstNamedChild, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod, calleeName, importBindings } from '../analysis/imports';
import { enclosingFunction, enclosingLoops, keywordArgument, positionalArguments, withAliasCalls } from '../analysis/context';
import { parameterNames, positionalParameters } from '../analysis/parameters';
import { assignedNames, bindingOf, functionsNamed, parameterValuesOf, returnsOf, storedItems, subscriptValues, valuesOf } from '../analysis/values';
import { callSiteArguments, importedReturns, importerArguments, unboundName } from '../analysis/imported-values';
import { reexportedLibraryName, resolveImport, type ResolvedName } from '../project/resolve';
import { callsNamed, callsNamedByFunction, callsWithKeyword, unitCallGroups } from '../analysis/calls';
import { enclosingPiece, importSignature, intern, unitsOf } from '../analysis/unitcache';
import { NodeMemo, VersionMemo } from '../session';
import { appendArgument, argumentNodes, hasSplat } from '../analysis/call-edits';
import { isTrainingLoop, loopIterable } from '../analysis/steps';
import { handedCallee, importedCallee } from '../analysis/handed-arguments';
import { constructionArguments } from '../analysis/importer-constructions';
import { instanceMethodReturns, type MethodReturns } from '../analysis/instance-methods';
import { loaderDatasetOnDevice } from '../analysis/device-datasets';
import { configuredAttribute } from '../analysis/config-defaults';
import type { Rule, RuleFinding } from '../types';

const DATALOADERS = new Set([
  'torch.utils.data.DataLoader',
  'torch.utils.data.dataloader.DataLoader',
  // torch DataLoader subclasses that take pin_memory the same way
  'torch_geometric.loader.DataLoader',
  'torch_geometric.data.DataLoader',
  'torch_geometric.loader.NeighborLoader',
  'monai.data.DataLoader',
  'monai.data.dataloader.DataLoader',
]);
const SCOPES = new Set(['function_definition', 'class_definition', 'lambda']);
const COMPREHENSIONS = new Set(['list_comprehension', 'dictionary_comprehension', 'set_comprehension', 'generator_expression']);
const DTYPE = /^torch\.(float|half|bfloat|double|int|long|short|uint|bool|complex|cfloat|chalf)\w*$/;
/** `x.type(torch.cuda.FloatTensor)`: a copy to the current CUDA device. */
const CUDA_TENSOR_TYPE = /^(torch\.cuda\.\w+Tensor|['"]torch\.cuda\.\w+Tensor['"])$/;

/**
 * A CUDA tensor type: the literal, `torch.cuda.FloatTensor if cuda else torch.FloatTensor` (CUDA whenever
 * there is one, like `torch.device("cuda" if ... else "cpu")`), or a name such as `Tensor` bound to one of
 * those (the YOLO idiom `Tensor = torch.cuda.FloatTensor if ...; x.type(Tensor)`).
 */
function isCudaTensorType(file: SourceFile, arg: SyntaxNode, depth = 0): boolean {
  if (depth > MAX_DEPTH) return false;
  if (CUDA_TENSOR_TYPE.test(file.textOf(arg))) return true;
  const branch = eitherBranch(arg, (b) => isCudaTensorType(file, b, depth + 1));
  if (branch !== null) return branch;
  if (arg.type !== 'identifier' && arg.type !== 'attribute') return false;
  const values = valuesOf(file, arg);
  return values !== null && values.some((v) => isCudaTensorType(file, v, depth + 1));
}

/**
 * `(x)` holds when `x` does; `a if c else b` when either branch does (CUDA whenever a branch is: a run on a
 * GPU machine takes that branch). Null for any other expression.
 */
function eitherBranch(arg: SyntaxNode, holds: (branch: SyntaxNode) => boolean): boolean | null {
  if (arg.type === 'parenthesized_expression') {
    const inner = firstNamedChild(arg);
    return inner !== null && holds(inner);
  }
  if (arg.type === 'conditional_expression') {
    // Named children: the value, the condition, the alternative.
    const [value, , alternative] = namedChildren(arg);
    return [value, alternative].some((b) => b !== undefined && holds(b));
  }
  return null;
}

/** tqdm's progress bars by callee name (`tqdm`, `tqdm.auto`, `tqdm.auto.tqdm`...): a regex alternation. */
const TQDM = String.raw`tqdm|tqdm\.\w+|tqdm\.\w+\.tqdm`;
const TQDM_CALLEE = new RegExp(`^(${TQDM})$`);
const WRAPPERS = new RegExp(String.raw`^(${TQDM}|enumerate|iter|itertools\.islice|islice|track|rich\.progress\.track|[\w.]+\.log_every)$`);

/**
 * `option`: `pin_memory=` is a key of a configuration dict (`config["pin_memory"]`):
 * pinned whenever the user turns it on, so a blocking copy wastes it then (case 1); not an unpinned loader (case 2).
 */
type Pinned = 'yes' | 'no' | 'unknown' | 'option';

interface Loader {
  /** The constructions, when they are in this file (empty for a loader built in another module). */
  readonly calls: readonly SyntaxNode[];
  readonly pinned: Pinned;
  /** `data/loader.py:42`: where a loader built in another module of the project is constructed. */
  readonly origin?: string;
  /** The constructions of a loader built in another module, by that module's path and their spans there. */
  readonly built?: readonly Construction[];
  /** A batch fetched now and then beside the step (`if i % 10 == 0: data = next(iter(test_loader))`). */
  readonly side?: boolean;
}

interface Construction {
  readonly path: string;
  readonly start: number;
  readonly end: number;
}

const MAX_DEPTH = 6;

/** `from src.imports import *`: names the file uses may come from there (checked per call, not cached). */
function hasWildcardImport(file: SourceFile): boolean {
  return file.nodesOfType('import_from_statement').some((s) => s.children.some((c) => c.type === 'wildcard_import'));
}

export function isDataLoader(file: SourceFile, call: SyntaxNode): boolean {
  const method = calleeMethod(file, call);
  // `data.DataLoader(...)` with `data` from a star import (`from src.imports import *` re-exporting
  // `from torch.utils import data`): the head is bound by no import or assignment the file shows.
  if (method === 'DataLoader' && (viaWildcard(file, call) || notebookGlobalLoader(file, call))) return true;
  if (method === null || !method.endsWith('Loader')) {
    // `from torch.utils.data import DataLoader as DL`: aliases need the import lookup.
    const fn = childByField(call, 'function');
    if (fn === null || fn.type !== 'identifier' || importBindings(file).get(file.textOf(fn))?.qualified.endsWith('Loader') !== true) return false;
  }
  const name = calleeName(file, call);
  return name !== null && (DATALOADERS.has(name) || isDropInLoader(file, call) || isReexportedLoader(file, call));
}

const TRAINING_KEY = /^[rRbBuU]*(['"])(train|training)\1$/;
const EVALUATION_KEY = /^[rRbBuU]*(['"])(val|valid|validation|test|eval|evaluation|dev)\1$/;

/**
 * `{"train": loader_train, "valid": loader_valid}` walked by a phase loop (`for data in loaders[phase]`):
 * the training loader's batches are the loop's training copies; the validation loader is an evaluation
 * loader, which the rule leaves alone elsewhere too (a few batches per epoch). Only when every key is a
 * literal naming a training or an evaluation split, and both kinds are there; otherwise every pair.
 */
function trainingPairs(file: SourceFile, pairs: readonly SyntaxNode[]): readonly SyntaxNode[] {
  const keys = pairs.map((pair) => file.textOf(childByField(pair, 'key') ?? pair));
  const training = pairs.filter((_, i) => TRAINING_KEY.test(keys[i]));
  const evaluation = keys.filter((k) => EVALUATION_KEY.test(k)).length;
  return training.length > 0 && evaluation > 0 && training.length + evaluation === pairs.length ? training : pairs;
}

/** `from dataset import DataLoader`, where the project's dataset.py imports torch's DataLoader: torch's class. */
function isReexportedLoader(file: SourceFile, call: SyntaxNode): boolean {
  const fn = childByField(call, 'function');
  if (fn?.type !== 'identifier') return false;
  const name = reexportedLibraryName(file, file.textOf(fn));
  return name !== null && DATALOADERS.has(name);
}

/**
 * `from .utils import ThreadingDataLoader as DataLoader`: a loader class of the repository itself (a
 * relative import) that the file imports under torch's own name, a drop-in DataLoader subclass taking the
 * same arguments. Any other name or module is not assumed to be one (a custom batch iterator may take no
 * `pin_memory` at all).
 */
/** Says which class the verdict assumes to be a torch DataLoader subclass (its definition is in another file). */
function dropInNote(file: SourceFile, call: SyntaxNode): string {
  const source = dropInSource(file, call);
  return source === null ? '' : ` (\`DataLoader\` here is \`${source}\` of this repository, taken as a torch DataLoader subclass: it is imported under that name.)`;
}

function isDropInLoader(file: SourceFile, call: SyntaxNode): boolean {
  return dropInSource(file, call) !== null;
}

/** `.utils.ThreadingDataLoader` for a `DataLoader(...)` call bound by `from .utils import ThreadingDataLoader as DataLoader`. */
function dropInSource(file: SourceFile, call: SyntaxNode): string | null {
  const fn = childByField(call, 'function');
  if (fn?.type !== 'identifier' || file.textOf(fn) !== 'DataLoader') return null;
  // importBindings leaves relative imports out (they never name a library): read them here.
  for (const stmt of file.nodesOfType('import_from_statement')) {
    const module = childByField(stmt, 'module_name');
    if (module?.type !== 'relative_import') continue;
    for (const item of stmt.children) {
      if (item.type !== 'aliased_import') continue;
      const name = childByField(item, 'name');
      const alias = childByField(item, 'alias');
      if (name === null || alias === null || file.textOf(alias) !== 'DataLoader') continue;
      return file.textOf(name).endsWith('DataLoader') ? `${file.textOf(module)}.${file.textOf(name)}` : null;
    }
  }
  return null;
}

/**
 * `DataLoader(...)` in a file that imports torch but binds no `DataLoader` (a notebook exported cell by cell
 * into files: `from torch.utils.data import DataLoader` ran in an earlier cell): torch's class.
 */
function notebookGlobalLoader(file: SourceFile, call: SyntaxNode): boolean {
  const fn = childByField(call, 'function');
  if (fn?.type !== 'identifier' || !unboundName(file, 'DataLoader')) return false;
  return [...importBindings(file).values()].some((b) => b.qualified === 'torch' || b.qualified.startsWith('torch.'));
}

function viaWildcard(file: SourceFile, call: SyntaxNode): boolean {
  const fn = childByField(call, 'function');
  let head = fn;
  while (head !== null && head.type === 'attribute') head = childByField(head, 'object');
  if (head === null || head.type !== 'identifier') return false;
  const name = file.textOf(head);
  if (importBindings(file).has(name) || functionsNamed(file, name).length > 0) return false;
  if (head !== fn && valuesOf(file, head) !== null) return false;
  return hasWildcardImport(file);
}

function merge(results: readonly Loader[]): Loader | null {
  if (results.length === 0) return null;
  const pins = new Set(results.map((r) => r.pinned));
  const origin = results.find((r) => r.origin !== undefined)?.origin;
  const built = results.flatMap((r) => r.built ?? []);
  return {
    calls: results.flatMap((r) => r.calls),
    pinned: pins.size === 1 ? results[0].pinned : 'unknown',
    ...(origin === undefined ? {} : { origin }),
    ...(built.length === 0 ? {} : { built }),
  };
}

/** The DataLoader construction(s) an expression evaluates to (through tqdm/enumerate and names), or null. */
function loaderOf(file: SourceFile, value: SyntaxNode, depth: number): Loader | null {
  if (depth > MAX_DEPTH) return null;
  let v: SyntaxNode | null = value;
  while (v !== null && v.type === 'call') {
    if (isDataLoader(file, v)) return { calls: [v], pinned: pinnedOf(file, v) };
    // `kwargs.get('train_data')`: the same forwarded keyword as `kwargs['train_data']`.
    const getter = childByField(v, 'function');
    const holder = getter?.type === 'attribute' && calleeMethod(file, v) === 'get' ? childByField(getter, 'object') : null;
    const key = positionalArguments(v)[0];
    if (holder?.type === 'identifier' && key?.type === 'string') {
      const forwarded = forwardedKeyword(file, holder, key);
      if (forwarded !== null) return loaderOfAll(file, forwarded, depth + 1);
    }
    // `DPDataLoader.from_data_loader(loader)`: a library's loader rebuilt from this one, with its settings.
    const rewrapped = libraryRewrap(file, v, null);
    if (rewrapped !== null) {
      v = rewrapped;
      continue;
    }
    const name = calleeName(file, v);
    if (name !== null && !WRAPPERS.test(name)) {
      // `for x, y in inf_generator(train_loader)`: a generator of the file handing on a loader's batches.
      const generated = generatorLoader(file, v, depth + 1);
      if (generated !== null) return generated;
      // `train_loader = create_dataloader(...)`: what a local factory function returns.
      const returned = returnedValues(file, v);
      if (returned !== null) return loaderOfAll(file, returned, depth + 1);
      // `train_loader = dm.train_dataloader()`: a method of the data module `dm` was built from.
      const method = instanceMethodReturns(file, v);
      if (method !== null) return methodLoader(method, depth);
      return importedLoader(file, v, null, depth);
    }
    if (name === null) return null;
    v = positionalArguments(v)[0] ?? null;
  }
  if (v === null) return null;
  if (v.type === 'conditional_expression') {
    // `tqdm(enumerate(loader)) if is_train else enumerate(loader)`
    const branches = v.children.filter((c) => c.named);
    return branches.length !== 3 ? null : loaderOfAll(file, [branches[0], branches[2]], depth + 1);
  }
  if (v.type === 'dictionary_comprehension') {
    // `{x: DataLoader(...) for x in ['train', 'val']}`
    const pair = childByField(v, 'body');
    const value = pair === null ? null : childByField(pair, 'value');
    return value === null ? null : loaderOf(file, value, depth + 1);
  }
  if (v.type === 'dictionary') {
    if (v.children.some((c) => c.type === 'dictionary_splat')) return null;
    const pairs = v.children.filter((c) => c.type === 'pair');
    const values = trainingPairs(file, pairs).map((pair) => childByField(pair, 'value')).filter((x) => x !== null);
    return loaderOfAll(file, values, depth + 1);
  }
  if (v.type === 'subscript') {
    const base = childByField(v, 'value');
    const key = childByField(v, 'subscript');
    // `kwargs['train_data']` of a hook handed the keywords of `trainer.fit(train_data=loader)`.
    const forwarded = base?.type === 'identifier' && key?.type === 'string' ? forwardedKeyword(file, base, key) : null;
    if (forwarded !== null) return loaderOfAll(file, forwarded, depth + 1);
    // `dataloaders[phase]`: every loader the collection holds.
    return base === null ? null : loaderOf(file, base, depth + 1);
  }
  if (v.type !== 'identifier' && v.type !== 'attribute') return null;
  const bound = (v.type === 'identifier' ? rebuiltParameterValues(file, v) : null) ?? valuesOf(file, v);
  const values = bound === null ? bound : withStoredItems(file, v, bound);
  if (values === null) {
    if (v.type !== 'identifier') return importedNameLoader(file, v, depth) ?? constructedLoader(file, v, depth);
    const managed = managedLoaderArgument(file, v) ?? loopedCollection(file, v);
    return managed !== null ? loaderOf(file, managed, depth + 1) : (boundLoader(file, v, depth) ?? importedNameLoader(file, v, depth));
  }
  // `self.loader` kept from an `__init__` parameter that nothing in this file passes: the class's constructions
  // (also in the modules that import it) say what it holds.
  return loaderOfAll(file, values, depth + 1) ?? (v.type === 'attribute' ? constructedLoader(file, v, depth) : null);
}

/** `{}`, `dict()`, `OrderedDict()`: a container with nothing in it yet. */
function isEmptyDict(file: SourceFile, node: SyntaxNode): boolean {
  if (node.type === 'dictionary') return namedChildren(node).length === 0;
  if (node.type !== 'call') return false;
  const callee = calleeName(file, node) ?? '';
  return /^(dict|OrderedDict|collections\.OrderedDict)$/.test(callee) && argumentNodes(node)?.length === 0;
}

/**
 * The values of a dict filled item by item in the scope that binds it (`data_loaders = dict()`, then
 * `data_loaders['train'] = DataLoader(...)` / `= make_loader(...)`, then `return data_loaders`): the items
 * stored take the place of the empty container. `bound` unchanged when nothing is stored into the name there
 * or when a binding is not a dict (a list `loaders[0] = ...` or another object is left as it was).
 */
function withStoredItems(file: SourceFile, name: SyntaxNode, bound: readonly SyntaxNode[]): SyntaxNode[] {
  if (!bound.some((b) => isEmptyDict(file, b))) return [...bound];
  const owner = storeOwner(file, name);
  if (owner === undefined) return [...bound];
  const stored: SyntaxNode[] = [];
  for (const { assign } of storedItems(file, file.textOf(name))) {
    const right = childByField(assign, 'right');
    if (right !== null && storeOwner(file, assign) === owner) stored.push(right);
  }
  if (stored.length === 0) return [...bound];
  return [...bound.filter((b) => !isEmptyDict(file, b)), ...stored];
}

/**
 * The scope whose stores into a container count for `node`: the function (or module: null) of a plain name,
 * the class of a `self.loaders` (filled in `__init__`, read in `train_epoch`); undefined for other attributes.
 */
function storeOwner(file: SourceFile, node: SyntaxNode): SyntaxNode | null | undefined {
  const def = enclosingFunction(node);
  if (node.type === 'identifier') return def;
  if (node.type === 'assignment') {
    const left = childByField(node, 'left');
    const container = left === null ? null : childByField(left, 'value');
    return container === null ? undefined : container.type === 'identifier' ? def : def === null ? undefined : (classOf(def) ?? undefined);
  }
  const obj = node.type === 'attribute' ? childByField(node, 'object') : null;
  if (obj?.type !== 'identifier' || file.textOf(obj) !== 'self' || def === null) return undefined;
  return classOf(def) ?? undefined;
}

/** `from data import train_loader` / `data.train_loader`: a module-level loader of another module of the project. */
function importedNameLoader(file: SourceFile, name: SyntaxNode, depth: number): Loader | null {
  if (file.session.project === null || depth > MAX_DEPTH) return null;
  const resolved = importedValue(file, name);
  if (resolved === null) return null;
  const foreign = resolved.module.file;
  const l = loaderOf(foreign, resolved.node!, depth + 1);
  return l === null ? null : foreignLoader(l, foreign, resolved.module.display, resolved.where, resolved.module.path);
}

/**
 * `self.dataloader` of a runner class whose `__init__` (or its base class's) keeps a parameter: the loaders its
 * constructions pass, in this file and in the modules that import the class or a factory of this file
 * returning it (importer-constructions.ts).
 */
function constructedLoader(file: SourceFile, attr: SyntaxNode, depth: number): Loader | null {
  if (depth > MAX_DEPTH) return null;
  const sites = constructionArguments(file, attr);
  if (sites === null) return null;
  const loaders: Loader[] = [];
  for (const site of sites) {
    const l = loaderOf(site.file, site.value, depth + 1);
    if (l === null) return null;
    loaders.push(site.module === null ? l : foreignLoader(l, site.file, site.module.display, site.module.display, site.module.path));
  }
  return merge(loaders);
}

/**
 * Library calls that hand back the DataLoader they are given rebuilt with the same settings (workers,
 * `pin_memory`), whose batches stay on the host for the caller to copy: Opacus'
 * `privacy_engine.make_private(module=, optimizer=, data_loader=loader, ...)` (and `make_private_with_epsilon`),
 * which returns `(module, optimizer[, criterion], loader)`, and `DPDataLoader.from_data_loader(loader)`. The
 * loader argument, when `call` is one and `target` (the position in an unpacking, with the number of
 * names; null when not unpacked) is the loader it returns; else null. Wrappers that move batches to the
 * device themselves (`accelerator.prepare`, Fabric's `setup_dataloaders`) are not among them: nothing is
 * left to copy.
 */
function libraryRewrap(file: SourceFile, call: SyntaxNode, target: { index: number; count: number } | null): SyntaxNode | null {
  const fn = childByField(call, 'function');
  if (fn?.type !== 'attribute') return null;
  const method = calleeMethod(file, call);
  if (method === 'make_private' || method === 'make_private_with_epsilon') {
    // The loader is the last element of the returned tuple.
    return target !== null && target.index === target.count - 1 ? keywordArgument(file, call, 'data_loader') : null;
  }
  const obj = childByField(fn, 'object');
  if (method === 'from_data_loader' && target === null && obj !== null && /(^|\.)DPDataLoader$/.test(file.textOf(obj))) {
    return keywordArgument(file, call, 'data_loader') ?? positionalArguments(call)[0] ?? null;
  }
  return null;
}

/**
 * `with BatchMemoryManager(data_loader=train_loader, ...) as loader:` (Opacus): the alias is a loader
 * rebuilt from `train_loader` with its settings (pin_memory included), splitting each batch into physical
 * batches that fit. The `data_loader` argument when `name` is such an alias of a `with` around it (the
 * iterable of `with tqdm(loader) as bar:`), else null.
 */
function managedLoaderArgument(file: SourceFile, name: SyntaxNode): SyntaxNode | null {
  const [expr] = withAliasCalls(file, name, SCOPES);
  if (expr === undefined) return null;
  const callee = calleeName(file, expr) ?? '';
  // `with tqdm(loader, total=n) as progress_bar:`: a progress bar used as a context manager (so that it
  // closes) iterates the loader it wraps, as `progress_bar = tqdm(loader)` does.
  if (TQDM_CALLEE.test(callee)) return positionalArguments(expr)[0] ?? keywordArgument(file, expr, 'iterable');
  if (!/(^|\.)BatchMemoryManager$/.test(callee)) return null;
  return keywordArgument(file, expr, 'data_loader') ?? positionalArguments(expr)[0] ?? null;
}

/**
 * The collection a loop variable takes its loader from: `for phase, data_loader in data_loaders.items()` (r9y9's
 * WaveNet vocoder: one loop over the train and dev loaders of a dict filled item by item), `for loader in
 * loaders.values()`. Every loader the collection holds, as for `dataloaders[phase]`; null for other loops.
 */
function loopedCollection(file: SourceFile, name: SyntaxNode): SyntaxNode | null {
  const loop = bindingLoop(file, name, name);
  const left = loop === null ? null : childByField(loop, 'left');
  const right = loop === null ? null : childByField(loop, 'right');
  if (left === null || right === null || right.type !== 'call' || (argumentNodes(right)?.length ?? 1) !== 0) return null;
  const fn = childByField(right, 'function');
  if (fn?.type !== 'attribute') return null;
  const method = calleeMethod(file, right);
  if (method === 'values' && left.type === 'identifier') return childByField(fn, 'object');
  const parts = left.type === 'pattern_list' || left.type === 'tuple_pattern' ? namedChildren(left) : [];
  if (method === 'items' && parts.length === 2 && parts[1].type === 'identifier' && file.textOf(parts[1]) === file.textOf(name)) return childByField(fn, 'object');
  return null;
}

/**
 * `kwargs['train_data']` where `kwargs` is a parameter of a method of a class of this file whose instances
 * are handed `train_data=` by a method the class does not define itself (`trainer.fit(train_data=loader)`
 * of a library base class, a `Trainer` that passes its keywords on to the subclass's `train(kwargs)` hook):
 * the arguments given for that keyword. Null for anything else (a method of the class itself binds its
 * parameters by name, and is followed that way).
 */
function forwardedKeyword(file: SourceFile, holder: SyntaxNode, keyNode: SyntaxNode): SyntaxNode[] | null {
  const key = /^['"](\w+)['"]$/.exec(file.textOf(keyNode))?.[1];
  const def = enclosingFunction(holder);
  const cls = def === null ? null : classOf(def);
  const clsName = cls === null ? null : childByField(cls, 'name');
  if (key === undefined || def === null || !holdsKeywords(file, def, file.textOf(holder))) return null;
  const passed = splatKeywordArguments(file, def, file.textOf(holder), key);
  if (passed !== null) return passed;
  if (clsName === null) return null;
  const own = new Set(methodNames(file, cls!));
  const isInstance = (obj: SyntaxNode): boolean => {
    if (obj.type === 'call') return file.textOf(childByField(obj, 'function') ?? obj) === file.textOf(clsName);
    if (obj.type !== 'identifier' && obj.type !== 'attribute') return false;
    if (file.textOf(obj) === 'self') return enclosingFunction(obj) !== null && classOf(enclosingFunction(obj)!) === cls;
    return (valuesOf(file, obj) ?? []).some((x) => x.type === 'call' && file.textOf(childByField(x, 'function') ?? x) === file.textOf(clsName));
  };
  const out: SyntaxNode[] = [];
  for (const { call, method, value } of callsWithKeyword(file, key)) {
    if (own.has(method)) continue;
    const fn = childByField(call, 'function');
    const obj = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
    if (obj !== null && isInstance(obj)) out.push(value);
  }
  return out.length > 0 ? out : null;
}

/**
 * `def train(**kwargs): data_loader = kwargs['data_loader']` called as `train(..., data_loader=train_loader)`:
 * what the file's calls of that function (by its bare name, or `self.train(...)` in its class) pass for
 * keyword `key`. Null when `holder` is not the function's `**` parameter, there is no such call, or a call
 * may pass it through a splat of its own.
 */
function splatKeywordArguments(file: SourceFile, def: SyntaxNode, holder: string, key: string): SyntaxNode[] | null {
  const params = childByField(def, 'parameters');
  const defName = childByField(def, 'name');
  if (defName === null || !(params?.children ?? []).some((p) => p.type === 'dictionary_splat_pattern' && file.textOf(p).replace(/^\*\*\s*/, '') === holder)) return null;
  if (parameterNames(file, def).includes(key)) return null; // a named parameter takes that keyword
  const own = classOf(def) !== null;
  const out: SyntaxNode[] = [];
  for (const call of callsNamed(file, file.textOf(defName))) {
    const fn = childByField(call, 'function');
    if (own ? fn?.type !== 'attribute' || localCallee(file, call) !== def : fn?.type !== 'identifier' || localCallee(file, call) !== def) continue;
    const arg = keywordArgument(file, call, key);
    if (arg === null) {
      if ((argumentNodes(call) ?? []).some((a) => a.type === 'dictionary_splat')) return null;
      continue;
    }
    out.push(arg);
  }
  return out.length > 0 ? out : null;
}

/** `name` is a parameter of `def`: a plain one handed the dict (`def train(self, kwargs)`), or `**name`. */
function holdsKeywords(file: SourceFile, def: SyntaxNode, name: string): boolean {
  if (parameterNames(file, def).includes(name)) return true;
  const params = childByField(def, 'parameters');
  return params !== null && params.children.some((p) => p.type === 'dictionary_splat_pattern' && file.textOf(p).replace(/^\*\*\s*/, '') === name);
}

/** The names of the methods a class defines in its body (the definitions whose classOf is `cls`). */
function methodNames(file: SourceFile, cls: SyntaxNode): string[] {
  // From the class's own body, not a filter of the file's definitions per call (quadratic in a long file).
  // Outside the indexes: per-reader memos holding it hold for this version only.
  file.session.noteWholeFileRead(file);
  const names: string[] = [];
  const add = (d: SyntaxNode): void => {
    names.push(file.textOf(childByField(d, 'name') ?? d));
  };
  for (const body of cls.children) {
    if (body.type !== 'block') continue;
    for (const member of body.children) {
      if (member.type === 'function_definition') add(member);
      else if (member.type === 'decorated_definition') for (const d of member.children) if (d.type === 'function_definition') add(d);
    }
  }
  return names;
}

/**
 * A name valuesOf cannot see through because its value comes from another module of the project
 * (`train_set, test_set = get_datasets(...)` imported from utils/dataset.py), directly or through the
 * parameters it is passed to; or unpacked from a library call that hands back the loader it is given
 * (`..., train_loader = privacy_engine.make_private(..., data_loader=train_loader)`, no project needed).
 * Null when any binding is not a known loader.
 */
function boundLoader(file: SourceFile, name: SyntaxNode, depth: number): Loader | null {
  if (depth > MAX_DEPTH) return null;
  const binding = bindingOf(file, name);
  if (binding === null) return null;
  if (binding.kind === 'parameter') {
    const args = callSiteArguments(file, binding.def, file.textOf(name)) ?? bareCallArguments(file, binding.def, file.textOf(name));
    if (args !== null) return loaderOfAll(file, args, depth + 1);
    if (file.session.project === null) return null;
    // Called only from the modules that import this file (`fit_one_epoch(..., gen, ...)` in train.py).
    const defName = childByField(binding.def, 'name');
    // `audio_model.train()` is another function: only calls by the bare name would call this one.
    if (defName === null || callsNamed(file, file.textOf(defName)).some((c) => childByField(c, 'function')?.type === 'identifier')) return null;
    const sites = importerArguments(file, binding.def, file.textOf(name), true);
    if (sites === null) return null;
    const loaders: Loader[] = [];
    for (const site of sites) {
      const l = loaderOfAll(site.module.file, site.args, depth + 1);
      if (l === null) return null;
      loaders.push(foreignLoader(l, site.module.file, site.module.display, site.module.display, site.module.path));
    }
    return merge(loaders);
  }
  const loaders: Loader[] = [];
  for (const { right, index } of binding.sources) {
    // `model, optimizer, train_loader = privacy_engine.make_private(..., data_loader=train_loader)`.
    const count = index === null || right.parent?.type !== 'assignment' ? 0 : namedChildren(childByField(right.parent, 'left') ?? right).length;
    const rewrapped = index === null || right.type !== 'call' ? null : libraryRewrap(file, right, { index, count });
    // `data_loader=train_loader` rebinding its own argument is the loader of the other bindings.
    if (rewrapped !== null && file.textOf(rewrapped) === file.textOf(name) && binding.sources.length > 1) continue;
    const l = index === null ? loaderOf(file, right, depth + 1) : rewrapped !== null ? loaderOf(file, rewrapped, depth + 1) : importedLoader(file, right, index, depth + 1);
    if (l === null) return null;
    loaders.push(l);
  }
  return merge(loaders);
}

/**
 * What the calls of a module-level function by its bare name pass for parameter `name` (`train(args, model,
 * device, train_loader, ...)`), leaving out calls of same-named methods of other objects (`model.train()`,
 * which callSiteArguments cannot tell apart); null when a call cannot be read or there is none.
 */
function bareCallArguments(file: SourceFile, def: SyntaxNode, name: string): SyntaxNode[] | null {
  const defName = childByField(def, 'name');
  const index = parameterNames(file, def).indexOf(name);
  if (defName === null || index < 0 || classOf(def) !== null) return null;
  const out: SyntaxNode[] = [];
  for (const call of callsNamed(file, file.textOf(defName))) {
    if (childByField(call, 'function')?.type !== 'identifier') continue;
    if (hasSplat(call)) return null;
    const arg = keywordArgument(file, call, name) ?? positionalArguments(call)[index] ?? null;
    if (arg === null) return null;
    out.push(arg);
  }
  return out.length === 0 ? null : out;
}

/** The loader a data module's method returns, in this file or (seen from here) in the module that defines its class. */
function methodLoader(method: MethodReturns, depth: number): Loader | null {
  const l = loaderOfAll(method.file, method.values, depth + 1);
  if (l === null || method.module === null) return l;
  return foreignLoader(l, method.file, method.module.display, method.module.display, method.module.path);
}

/** The loader a call of a function imported from another module of the project returns (element `index` when unpacked). */
function importedLoader(file: SourceFile, call: SyntaxNode, index: number | null, depth: number): Loader | null {
  if (depth > MAX_DEPTH) return null;
  const returned = importedReturns(file, call, index);
  if (returned === null) return null;
  const foreign = returned.module.file;
  const l = loaderOfAll(foreign, returned.values, depth + 1);
  if (l === null) return null;
  const configured = l.pinned === 'unknown' ? callerConfiguredPinned(file, call, foreign, l) : null;
  return foreignLoader(configured === null ? l : { ...l, pinned: configured }, foreign, returned.module.display, returned.where, returned.module.path);
}

/**
 * A factory of another module that builds its loader from what the caller hands it (`def load_training(root,
 * bs, kwargs): return DataLoader(data, bs, **kwargs)`, called with `kwargs = {'num_workers': 1, 'pin_memory':
 * True} if args.cuda else {}`; or `pin_memory=pin` with `pin` a parameter): the factory alone cannot say
 * whether it pins, the caller's argument does. Null unless every construction sits in the function `call`
 * runs and each reads such a parameter to a verdict.
 */
function callerConfiguredPinned(file: SourceFile, call: SyntaxNode, foreign: SourceFile, l: Loader): Pinned | null {
  const resolved = importedCallee(file, call);
  const callee = handedCallee(file, call);
  if (resolved === null || resolved.node === null || callee === null || l.calls.length === 0) return null;
  const def = resolved.node;
  const handed: HandedArgument = (node) => {
    const binding = bindingOf(foreign, node);
    if (binding?.kind !== 'parameter' || binding.def !== def) return null;
    const value = callee.argumentFor(node);
    return value === null ? null : { file, value };
  };
  const states = l.calls.map((c) => (enclosingFunction(c) === def ? pinnedOf(foreign, c, handed) : 'unknown'));
  const state = combine(states);
  return state === 'unknown' ? null : state;
}

/**
 * A loader found in another module (`foreign`, shown as `display`), as seen from this file: its
 * constructions are nodes of that file, so only where they are goes with the verdict (`data.py:42`, or
 * `fallback` when it has none of its own, e.g. it came through yet another module, whose origin it keeps).
 */
function foreignLoader(l: Loader, foreign: SourceFile, display: string, fallback: string, path: string): Loader {
  const origin = l.origin ?? (l.calls.length > 0 ? `${display}:${foreign.lineOf(l.calls[0].start) + 1}` : fallback);
  // Kept by span so that the module that built it can find its own constructions again (exportedLoaders).
  const built = [...(l.built ?? []), ...l.calls.map((c) => ({ path, start: c.start, end: c.end }))];
  return { calls: [], pinned: l.pinned, origin, ...(built.length === 0 ? {} : { built }) };
}

/**
 * `def train(loader, ...): loader = tqdm(loader)`: the `loader` wrapped on the right is the parameter,
 * whose values come from the call sites. Looked up by name it would be the assignment it sits in (a
 * cycle that ends in "unknown"). Null when `name` is not such a self-rebinding (of a parameter, or of a
 * local name with other definitions).
 */
function rebuiltParameterValues(file: SourceFile, name: SyntaxNode): SyntaxNode[] | null {
  let p = name.parent;
  while (p !== null && (p.type === 'argument_list' || p.type === 'call')) p = p.parent;
  const left = p?.type === 'assignment' ? childByField(p, 'left') : null;
  if (left === null || left === name || file.textOf(left) !== file.textOf(name)) return null;
  const scope = enclosingFunction(name);
  if (scope !== null && parameterNames(file, scope).includes(file.textOf(name))) return parameterValuesOf(file, scope, file.textOf(name));
  // A local alias rewrapped the same way (`tl = train_loader; if n: tl = islice(tl, n)`): its other
  // definitions, without the rewrapping itself.
  const own = childByField(p!, 'right');
  const others = (valuesOf(file, name) ?? []).filter((v) => v !== own);
  return others.length > 0 ? others : null;
}

/** The loaders of every value merged, or null when any of them is not (known to be) a loader. */
function loaderOfAll(file: SourceFile, values: readonly SyntaxNode[], depth: number): Loader | null {
  const loaders: Loader[] = [];
  for (const x of values) {
    // `[train_loader, None]` on ranks without evaluation: a None loader is never iterated.
    if (x.type === 'none') continue;
    const l = loaderOf(file, x, depth);
    if (l === null) return null;
    loaders.push(l);
  }
  return merge(loaders);
}

/** Return values of the unique local function a call invokes by name (or `self.get_loader()`'s method), or null. */
function returnedValues(file: SourceFile, call: SyntaxNode): SyntaxNode[] | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  const defs = fn.type === 'identifier' ? functionsNamed(file, file.textOf(fn)) : [localCallee(file, call)].filter((d) => d !== null);
  if (defs.length !== 1) return null;
  const out: SyntaxNode[] = [];
  for (const ret of returnsOf(defs[0])) {
    const value = firstNamedChild(ret);
    if (value === null) return null;
    out.push(value);
  }
  return out.length === 0 ? null : out;
}

function isTrue(file: SourceFile, node: SyntaxNode): boolean {
  if (file.textOf(node) === 'True') return true;
  // `pin_memory=PIN_MEMORY` with `PIN_MEMORY = True`
  if (node.type !== 'identifier') return false;
  const values = valuesOf(file, node);
  return values !== null && values.length > 0 && values.every((v) => file.textOf(v) === 'True');
}

/** `False`, or a name whose every value is `False`. */
function isFalse(file: SourceFile, node: SyntaxNode): boolean {
  if (file.textOf(node) === 'False') return true;
  if (node.type !== 'identifier') return false;
  const values = valuesOf(file, node);
  return values !== null && values.length > 0 && values.every((v) => file.textOf(v) === 'False');
}

/**
 * A key of a configuration dict named after DataLoader's keyword: `config["pin_memory"]`,
 * `cfg["data"]["pin_memory"]` (ParallelWaveGAN's yaml recipes). Such a dict is loaded from a file the shipped
 * recipes fill in; nothing in the code holds a default. An attribute (`cfg.train.dataloader.pin_memory`,
 * `args.pin_mem`) belongs to an object whose defaults live in code (yacs defaults, argparse, dataclasses),
 * often False: it stays unknown.
 */
function isPinOption(file: SourceFile, node: SyntaxNode): boolean {
  const index = node.type === 'subscript' ? childByField(node, 'subscript') : null;
  return index?.type === 'string' && /^[rRbBuU]*(['"])(\w+_)?pin_memory\1$/.test(file.textOf(index));
}

/**
 * An attribute of a configuration object whose construction in the project's code turns it on: `pin_memory=
 * hparams.pin_memory` with `hparams = HParams(..., pin_memory=True)` in hparams.py (r9y9's WaveNet vocoder).
 * A setting like a recipe's key (`option`): the run may override it (`hparams.parse(...)`), and when it does
 * `non_blocking=True` costs nothing. Off in the construction, or built where the code does not show it
 * (argparse, yacs, yaml), it stays unknown.
 */
function isConfiguredOn(file: SourceFile, node: SyntaxNode): boolean {
  const values = configuredAttribute(file, node);
  return values !== null && values.every((c) => isTrue(c.file, c.value));
}

/** The CUDA flag idioms: `pin_memory=use_gpu` / `args.cuda` / `torch.cuda.is_available()`: pinned whenever CUDA is used. */
const CUDA_FLAG = /^((\w+\.)?(use_)?(cuda|gpu)|(\w+\.)?(is_)?cuda_available|(torch\.)?cuda\.is_available\(\))$/i;

function pinnedWhenCuda(file: SourceFile, node: SyntaxNode, depth = 0): boolean {
  if (CUDA_FLAG.test(file.textOf(node).replace(/\s+/g, ''))) return true;
  if (node.type !== 'identifier' || depth > 2) return false;
  const values = valuesOf(file, node);
  return values !== null && values.length > 0 && values.every((v) => file.textOf(v) === 'True' || pinnedWhenCuda(file, v, depth + 1));
}

/**
 * A caller's argument for a parameter of the function a construction sits in (`def load_training(root, bs,
 * kwargs): DataLoader(data, **kwargs)` called as `load_training(root, bs, kwargs)` from another module): the
 * caller's file and its expression for the parameter `node` names, or null when `node` is no such parameter.
 */
type HandedArgument = (node: SyntaxNode) => { file: SourceFile; value: SyntaxNode } | null;

function pinnedOf(file: SourceFile, call: SyntaxNode, handed?: HandedArgument): Pinned {
  const pin = keywordArgument(file, call, 'pin_memory');
  if (pin !== null) {
    const h = handed?.(pin);
    const [f, v] = h === null || h === undefined ? [file, pin] : [h.file, h.value];
    return isTrue(f, v) || pinnedWhenCuda(f, v) ? 'yes' : isFalse(f, v) ? 'no' : isPinOption(f, v) || isConfiguredOn(f, v) ? 'option' : 'unknown';
  }
  const args = argumentNodes(call);
  if (args === null || args.some((a) => a.type === 'list_splat')) return 'unknown';
  if (positionalArguments(call).length >= 8) return 'unknown'; // pin_memory is the 8th positional parameter
  let state: Pinned = 'no';
  for (const splat of args.filter((a) => a.type === 'dictionary_splat')) {
    const inner = splat.children.find((c) => c.named);
    const h = inner === undefined ? null : (handed?.(inner) ?? null);
    const s = inner === undefined ? 'unknown' : h !== null ? dictPinned(h.file, h.value, 0) : dictPinned(file, inner, 0);
    if (s === 'unknown') return 'unknown';
    if (s === 'yes') state = 'yes';
  }
  return state;
}

function combine(states: readonly Pinned[]): Pinned {
  if (states.includes('unknown')) return 'unknown';
  return states.includes('yes') ? 'yes' : 'no';
}

/**
 * What a `**kwargs` expression says about pin_memory: dict literals, `dict(...)`, conditionals of them,
 * names bound to them, and `.update(...)`s of that name in the same function.
 */
function dictPinned(file: SourceFile, v: SyntaxNode, depth: number): Pinned {
  if (depth > MAX_DEPTH) return 'unknown';
  if (v.type === 'dictionary') {
    let state: Pinned = 'no';
    for (const c of v.children) {
      if (c.type === 'dictionary_splat') return 'unknown';
      if (c.type !== 'pair') continue;
      const k = childByField(c, 'key');
      const value = childByField(c, 'value');
      if (k === null || value === null) return 'unknown';
      if (/^['"]pin_memory['"]$/.test(file.textOf(k))) {
        if (file.textOf(value) !== 'True') return 'unknown';
        state = 'yes';
      }
    }
    return state;
  }
  if (v.type === 'conditional_expression') {
    // `{'pin_memory': True} if args.cuda else {}`: pinned whenever CUDA is used.
    const branches = v.children.filter((c) => c.named);
    if (branches.length !== 3) return 'unknown';
    return combine([dictPinned(file, branches[0], depth + 1), dictPinned(file, branches[2], depth + 1)]);
  }
  if (v.type === 'call' && calleeName(file, v) === 'dict' && positionalArguments(v).length === 0) {
    const pin = keywordArgument(file, v, 'pin_memory');
    if (pin === null) return hasSplat(v) ? 'unknown' : 'no';
    return file.textOf(pin) === 'True' ? 'yes' : 'unknown';
  }
  if (v.type !== 'identifier') return 'unknown';
  const values = valuesOf(file, v);
  if (values === null) return 'unknown';
  const states = values.map((x) => dictPinned(file, x, depth + 1));
  // `train_kwargs.update(cuda_kwargs)` in a function that binds the dict.
  const key = file.textOf(v);
  const scopes = new Set(values.map((x) => enclosingFunction(x)));
  const updates = callsNamedByFunction(file, 'update');
  for (const call of [...scopes].flatMap((s) => updates.get(s) ?? [])) {
    const fn = childByField(call, 'function');
    const obj = fn === null || fn.type !== 'attribute' ? null : childByField(fn, 'object');
    if (obj === null || file.textOf(obj) !== key) continue;
    for (const arg of argumentNodes(call) ?? []) {
      if (arg.type === 'keyword_argument') {
        const k = childByField(arg, 'name');
        const value = childByField(arg, 'value');
        if (k !== null && value !== null && file.textOf(k) === 'pin_memory') states.push(file.textOf(value) === 'True' ? 'yes' : 'unknown');
      } else states.push(dictPinned(file, arg, depth + 1));
    }
  }
  return combine(states);
}

interface LoopLoader {
  readonly loader: Loader;
  readonly enumerated: boolean;
  /** `zip(source_loader, target_loader)`: each position's loader (the header unpacks one batch per loader). */
  readonly zipped: readonly Loader[] | null;
}

/** The loader a for-loop walks (through enumerate/tqdm, `it = tqdm(enumerate(loader))` aliases and `zip`), or null. */
function loaderOfLoop(file: SourceFile, loop: SyntaxNode): LoopLoader | null {
  const found = loopIterable(file, loop);
  if (found === null) return null;
  const it = found.iterable;
  if (it.type === 'call' && calleeName(file, it) === 'zip') {
    const args = argumentNodes(it);
    if (args === null || args.length < 2 || args.some((a) => a.type !== 'identifier' && a.type !== 'attribute' && a.type !== 'subscript')) return null;
    const zipped: Loader[] = [];
    for (const a of args) {
      const l = loaderOf(file, a, 0);
      if (l === null) return null;
      zipped.push(l);
    }
    const loader = merge(zipped);
    return loader === null ? null : { loader, enumerated: found.enumerated, zipped };
  }
  // `for x, y in self.get_loader(ds)`: a loader built by a function or method of this file (or one it imports).
  const built = it.type === 'call' && (localCallee(file, it) !== null || importedFunction(file, it) !== null);
  if (it.type !== 'identifier' && it.type !== 'attribute' && it.type !== 'subscript' && !built) return null;
  const loader = loaderOf(file, it, 0);
  if (loader === null) return null;
  let enumerated = found.enumerated;
  if (!enumerated && it.type === 'identifier') {
    // `pbar = tqdm(enumerate(train_loader))` then `for step, (x, y) in pbar`.
    for (const v of valuesOf(file, it) ?? []) if (/\benumerate\s*\(/.test(file.textOf(v))) enumerated = true;
  }
  return { loader, enumerated, zipped: null };
}

const PATTERNS = new Set(['pattern_list', 'tuple_pattern', 'list_pattern', 'tuple', 'list', 'parenthesized_expression']);

function patternNames(file: SourceFile, node: SyntaxNode, out: Set<string>): void {
  const stack = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'identifier') out.add(file.textOf(n));
    else if (PATTERNS.has(n.type)) for (const c of n.children) if (c.named) stack.push(c);
  }
}

/**
 * Names bound to batch data by the loop header (with their loader when `zip` gives each position its
 * own, else undefined: the loop's loader), and the names that hold a whole batch.
 */
function batchNames(file: SourceFile, loop: SyntaxNode, found: LoopLoader): { names: Map<string, Loader | undefined>; whole: Set<string> } {
  const names = new Map<string, Loader | undefined>();
  const whole = new Set<string>();
  let left = childByField(loop, 'left');
  if (left !== null && found.enumerated) {
    const parts = left.children.filter((c) => c.named);
    left = (left.type === 'pattern_list' || left.type === 'tuple_pattern') && parts.length === 2 ? parts[1] : null;
  }
  if (left === null) return { names, whole };
  const groups: [SyntaxNode, Loader | undefined][] = [];
  if (found.zipped === null) groups.push([left, undefined]);
  else {
    // `for (xs, ys), (xt, _) in zip(source_loader, target_loader)`: one batch per loader.
    const parts = PATTERNS.has(left.type) ? left.children.filter((c) => c.named) : [];
    if (parts.length !== found.zipped.length) return { names, whole };
    parts.forEach((p, i) => groups.push([p, found.zipped![i]]));
  }
  for (const [target, loader] of groups) {
    if (target.type === 'identifier') whole.add(file.textOf(target));
    const bound = new Set<string>();
    patternNames(file, target, bound);
    for (const n of bound) names.set(n, loader);
  }
  return { names, whole };
}

/**
 * Views of a tensor keep its (pinned) storage: `x.squeeze(0).to(d)`, `images.reshape(n, -1).to(d)`,
 * `Variable(img).cuda()`. `.float()` / `.long()` return the tensor itself when it already has that dtype,
 * which is what a loader yields in the common case (`ToTensor()` images are float32, class targets int64),
 * so `images.float().to(d)` still copies from pinned memory. Other conversions (`.half()`) copy into
 * pageable memory and end the chain.
 * `.detach()` is a view too: `inputs = inputs.cuda().detach()` rebinds the name to its device copy.
 */
const VIEW_METHODS = new Set(['requires_grad_', 'detach', 'squeeze', 'unsqueeze', 'view', 'view_as', 'reshape', 'reshape_as', 'permute', 'transpose', 'flatten', 'unflatten', 'expand', 'expand_as', 'narrow', 'select', 't', 'unbind', 'split', 'chunk', 'float', 'long']);
const SAME_STORAGE_CONSTRUCTORS = /^torch\.(Tensor|FloatTensor|LongTensor|as_tensor|asarray)$/;
/**
 * The spellings of `.float()` / `.long()` as an argument: `x.type(torch.FloatTensor)`, `x.type(torch.float32)`,
 * `x.to(torch.long)`. Like `.float()` they return the tensor itself when it already has that dtype (U-2-Net's
 * `inputs = inputs.type(torch.FloatTensor)` before `inputs.cuda()`), so the copy after them is still the batch's.
 */
const SAME_DTYPE_ARGUMENT = /^(torch\.(FloatTensor|LongTensor|float|float32|long|int64)|['"]torch\.(FloatTensor|LongTensor)['"])$/;
// The function spellings of the view methods: `torch.chunk(sdf_gt, n)` then `sdf_gt[i].cuda()` (DeepSDF's
// micro-batches) copies a view of the batch, as `sdf_gt.chunk(n)` does.
const VIEW_FUNCTIONS = /^(torch\.autograd\.Variable|torch\.autograd\.variable\.Variable|torch\.(squeeze|unsqueeze|reshape|flatten|permute|transpose|narrow|select|chunk|split|tensor_split|unbind|t))$/;

/** The expression a view chain starts from (`x` of `x.squeeze(0)`, `Variable(x)`, `torch.unsqueeze(x, 1)`), or null. */
function viewBase(file: SourceFile, n: SyntaxNode): SyntaxNode | null {
  if (n.type === 'parenthesized_expression') return firstNamedChild(n);
  if (n.type === 'subscript') return childByField(n, 'value');
  if (n.type === 'attribute') return childByField(n, 'object');
  if (n.type !== 'call') return null;
  const fn = childByField(n, 'function');
  if (fn === null) return null;
  // `torch.unsqueeze(x, 1)` before `x.unsqueeze(1)`: the function's tensor is its argument, not `torch`.
  const name = calleeName(file, n);
  if (name !== null && VIEW_FUNCTIONS.test(name)) return positionalArguments(n)[0] ?? null;
  const method = calleeMethod(file, n) ?? '';
  if (fn.type === 'attribute' && VIEW_METHODS.has(method)) return childByField(fn, 'object');
  if (fn.type === 'attribute' && (method === 'type' || method === 'to') && argumentNodes(n)?.length === 1 && SAME_DTYPE_ARGUMENT.test(file.textOf(positionalArguments(n)[0] ?? n))) {
    return childByField(fn, 'object');
  }
  // `torch.Tensor(images[0])` (the legacy constructor given a tensor of its type) and `torch.as_tensor(x)`
  // without a dtype or device return the same storage: still the pinned batch. With more arguments they
  // may convert, into pageable memory.
  if (name !== null && SAME_STORAGE_CONSTRUCTORS.test(name) && positionalArguments(n).length === 1 && argumentNodes(n)?.length === 1) return positionalArguments(n)[0];
  return null;
}

interface Root {
  readonly name: string | null;
  readonly loader: Loader;
}

/** Batch data at the root of an expression (a batch name, `batch[...]`, `batch.x`, views of them, `next(it)`), or null. */
function batchRoot(file: SourceFile, node: SyntaxNode, names: ReadonlyMap<string, Loader>): Root | null {
  let n = node;
  for (let i = 0; i < 16; i++) {
    if (n.type === 'identifier') {
      const name = file.textOf(n);
      const loader = names.get(name);
      return loader === undefined ? null : { name, loader };
    }
    const fetched = n.type === 'call' ? fetchedLoader(file, n, 0) : null;
    if (fetched !== null) return { name: null, loader: fetched.loader };
    const base = viewBase(file, n);
    if (base === null) return null;
    n = base;
  }
  return null;
}

/**
 * The loader whose batch `next(it)` / `it.next()` / `it.__next__()` fetches, where `it` is `iter(loader)`,
 * `enumerate(loader)` (`enumerated`: the batch is the pair's second element) or a generator of this file
 * that yields a loader's batches (`def sample_data(loader): while True: for b in loader: yield b`).
 */
function fetchedLoader(file: SourceFile, call: SyntaxNode, depth: number): { loader: Loader; enumerated: boolean } | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  let it: SyntaxNode | null = null;
  if (fn.type === 'identifier' && file.textOf(fn) === 'next') it = positionalArguments(call)[0] ?? null;
  else if (fn.type === 'attribute' && /^(__next__|next)$/.test(calleeMethod(file, call) ?? '') && positionalArguments(call).length === 0) it = childByField(fn, 'object');
  return it === null ? null : iteratorLoader(file, it, depth);
}

const ITERATORS = new RegExp(`^(iter|enumerate|itertools\\.cycle|cycle|${TQDM})$`);

function iteratorLoader(file: SourceFile, it: SyntaxNode, depth: number): { loader: Loader; enumerated: boolean } | null {
  if (depth > MAX_DEPTH) return null;
  if (it.type === 'call') {
    const name = calleeName(file, it);
    // `loader.__iter__()` is `iter(loader)`.
    const dunder = name !== null && ITERATORS.test(name) ? null : iterated(file, it);
    if (dunder !== null) {
      const loader = loaderOf(file, dunder, depth + 1);
      return loader === null ? null : { loader, enumerated: false };
    }
    if (name !== null && ITERATORS.test(name)) {
      const inner = positionalArguments(it)[0];
      if (inner === undefined) return null;
      const loader = loaderOf(file, inner, depth + 1);
      if (loader !== null) return { loader, enumerated: name === 'enumerate' || /\benumerate\s*\(/.test(file.textOf(inner)) };
      return name === 'enumerate' ? null : iteratorLoader(file, inner, depth + 1);
    }
    const loader = generatorLoader(file, it, depth + 1);
    return loader === null ? null : { loader, enumerated: false };
  }
  if (it.type !== 'identifier' && it.type !== 'attribute') return null;
  const values = valuesOf(file, it);
  if (values === null || values.length === 0) return null;
  let found: { loader: Loader; enumerated: boolean } | null = null;
  const loaders: Loader[] = [];
  for (const v of values) {
    const r = iteratorLoader(file, v, depth + 1);
    if (r === null || (found !== null && found.enumerated !== r.enumerated)) return null;
    found = r;
    loaders.push(r.loader);
  }
  const loader = merge(loaders);
  return found === null || loader === null ? null : { loader, enumerated: found.enumerated };
}

/**
 * The loader a call of a local generator function walks: every `yield` yields a name bound by a for
 * loop over a loader (the generator's parameter resolves to this call's argument).
 */
function generatorLoader(file: SourceFile, call: SyntaxNode, depth: number): Loader | null {
  const fn = childByField(call, 'function');
  if (fn === null || fn.type !== 'identifier') return null;
  const defs = functionsNamed(file, file.textOf(fn));
  if (defs.length !== 1) return null;
  const def = defs[0];
  const yields = yieldsOf(def);
  if (yields.length === 0) return null;
  const params = parameterNames(file, def);
  const slots = positionalParameters(file, def);
  const args = positionalArguments(call);
  const loaders: Loader[] = [];
  for (const y of yields) {
    // What the yielded batch is taken from, with the generator's parameter replaced by this call's argument.
    const source = yieldedSource(file, y);
    if (source === null) return null;
    if (source.type === 'identifier' && params.includes(file.textOf(source))) {
      const name = file.textOf(source);
      const arg = keywordArgument(file, call, name) ?? args[slots.indexOf(name)] ?? null;
      if (arg === null) return null;
      const loader = callerArgumentLoader(file, call, arg, depth + 1);
      if (loader === null) return null;
      loaders.push(loader);
      continue;
    }
    const loader = loaderOf(file, source, depth + 1);
    if (loader === null) return null;
    loaders.push(loader);
  }
  return merge(loaders);
}

/**
 * The iterable a generator's `yield` hands on batches of (stripped of iter/enumerate/tqdm): `for b in
 * loader: yield b`, or a batch fetched from an iterator of it, `it = iter(loader)` / `loader.__iter__()`
 * then `yield next(it)` / `yield it.__next__()` (an infinite generator restarting the iterator on
 * StopIteration). Null when the yielded value is anything else (a batch the generator transforms or copies).
 */
function yieldedSource(file: SourceFile, y: SyntaxNode): SyntaxNode | null {
  const value = firstNamedChild(y);
  if (value === null) return null;
  let source: SyntaxNode | null = null;
  if (value.type === 'identifier') {
    const loop = bindingLoop(file, value, y);
    // `batch = next(it)` (in a try that restarts `it` on StopIteration), then `yield batch`.
    source = loop === null ? sameIterable(file, (valuesOf(file, value) ?? []).map((v) => (v.type === 'call' ? fetchedIterable(file, v) : null))) : childByField(loop, 'right');
  } else if (value.type === 'call') source = fetchedIterable(file, value);
  while (source !== null && source.type === 'call') {
    const inner = iterated(file, source);
    if (inner === null) break;
    source = inner;
  }
  return source;
}

/** `x` of `iter(x)` / `enumerate(x)` / `tqdm(x)` / `x.__iter__()`, or null for another expression. */
function iterated(file: SourceFile, call: SyntaxNode): SyntaxNode | null {
  if (ITERATORS.test(calleeName(file, call) ?? '')) return positionalArguments(call)[0] ?? null;
  const fn = childByField(call, 'function');
  if (fn?.type === 'attribute' && calleeMethod(file, call) === '__iter__' && (argumentNodes(call) ?? []).length === 0) return childByField(fn, 'object');
  return null;
}

/**
 * `next(it)` / `it.__next__()` / `it.next()` where every assignment of `it` in the generator is an iterator
 * over the same iterable (`it = iter(loader)`, `it = loader.__iter__()`): that iterable, else null.
 */
function fetchedIterable(file: SourceFile, call: SyntaxNode): SyntaxNode | null {
  const fn = childByField(call, 'function');
  let it: SyntaxNode | null = null;
  if (fn?.type === 'identifier' && file.textOf(fn) === 'next') it = positionalArguments(call)[0] ?? null;
  else if (fn?.type === 'attribute' && /^(__next__|next)$/.test(calleeMethod(file, call) ?? '') && positionalArguments(call).length === 0) it = childByField(fn, 'object');
  if (it === null) return null;
  if (it.type === 'call') return iterated(file, it);
  if (it.type !== 'identifier') return null;
  const values = valuesOf(file, it);
  if (values === null || values.length === 0) return null;
  return sameIterable(file, values.map((v) => (v.type === 'call' ? iterated(file, v) : null)));
}

/** The iterable when every entry is the same expression (by text), else null (also for none). */
function sameIterable(file: SourceFile, sources: readonly (SyntaxNode | null)[]): SyntaxNode | null {
  const first = sources[0];
  if (first === undefined || first === null) return null;
  return sources.every((s) => s !== null && file.textOf(s) === file.textOf(first)) ? first : null;
}

/**
 * What an argument holds at a call site. `loader = sample_data(loader)` rebinds the caller's parameter:
 * the argument is the parameter's value from the caller's own call sites, not the assignment it is in.
 */
function callerArgumentLoader(file: SourceFile, call: SyntaxNode, arg: SyntaxNode, depth: number): Loader | null {
  if (arg.type === 'identifier') {
    const assign = call.parent;
    const left = assign !== null && assign.type === 'assignment' ? childByField(assign, 'left') : null;
    const scope = enclosingFunction(call);
    if (left !== null && file.textOf(left) === file.textOf(arg) && scope !== null && parameterNames(file, scope).includes(file.textOf(arg))) {
      const values = parameterValuesOf(file, scope, file.textOf(arg));
      return values === null ? null : loaderOfAll(file, values, depth + 1);
    }
  }
  return loaderOf(file, arg, depth);
}

/** `yield` expressions whose nearest function is `def`. */
function yieldsOf(def: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const stack = [...def.children];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (SCOPES.has(n.type)) continue;
    if (n.type === 'yield' && n.named) out.push(n);
    stack.push(...n.children);
  }
  return out;
}

/** The for loop enclosing `at` whose header binds `name`'s identifier, or null. */
function bindingLoop(file: SourceFile, name: SyntaxNode, at: SyntaxNode): SyntaxNode | null {
  const text = file.textOf(name);
  for (const loop of enclosingLoops(at)) {
    if (loop.type !== 'for_statement') continue;
    const left = childByField(loop, 'left');
    if (left === null) continue;
    const bound = new Set<string>();
    patternNames(file, left, bound);
    if (bound.has(text)) return loop;
  }
  return null;
}

/** The loader of the batch data a comprehension variable ranges over (`{k: v.to(d) for k, v in batch.items()}`), or null. */
function comprehensionOverBatch(file: SourceFile, receiver: SyntaxNode, names: ReadonlyMap<string, Loader>, stop: SyntaxNode, depth = 0): Loader | null {
  const name = file.textOf(receiver);
  for (let p = receiver.parent; p !== null && p !== stop; p = p.parent) {
    if (p.type === 'lambda') {
      const params = childByField(p, 'parameters');
      if (params === null || !namedChildren(params).some((c) => file.textOf(c) === name)) continue;
      return mappedOverBatch(file, p, names);
    }
    if (!COMPREHENSIONS.has(p.type)) continue;
    for (const clause of p.children) {
      if (clause.type !== 'for_in_clause') continue;
      const left = childByField(clause, 'left');
      let right = childByField(clause, 'right');
      if (left === null || right === null) continue;
      const bound = new Set<string>();
      patternNames(file, left, bound);
      if (!bound.has(name)) continue;
      if (right.type === 'call') {
        const m = calleeMethod(file, right);
        const fn = childByField(right, 'function');
        if ((m === 'items' || m === 'values') && fn !== null && fn.type === 'attribute') right = childByField(fn, 'object');
        else return null;
      }
      if (right === null) return null;
      const root = batchRoot(file, right, names);
      if (root !== null) return root.loader;
      // `[{k: v.to(d) for k, v in t.items()} for t in targets]`: t ranges over batch data itself.
      let inner = right;
      while (inner.type === 'subscript' || inner.type === 'attribute') inner = childByField(inner, inner.type === 'subscript' ? 'value' : 'object') ?? inner;
      return inner.type === 'identifier' && inner !== receiver && depth < 4 ? comprehensionOverBatch(file, inner, names, stop, depth + 1) : null;
    }
  }
  return null;
}

/**
 * `x, y = map(lambda t: t.to(device), batch)`: the lambda's parameter ranges over the batch's elements, as a
 * comprehension variable does. The batch's loader when `lambda` is `map`'s function over batch data, else null.
 */
function mappedOverBatch(file: SourceFile, lambda: SyntaxNode, names: ReadonlyMap<string, Loader>): Loader | null {
  const over = mappedLambda(file, lambda);
  if (over === null) return null;
  // `map(lambda t: t.cuda(), (x, y))`: a tuple of batch data.
  const items = over.type === 'tuple' || over.type === 'list' ? namedChildren(over) : [over];
  for (const item of items) {
    const root = batchRoot(file, item, names);
    if (root !== null) return root.loader;
  }
  return null;
}

/** What `map(lambda ..., over)` maps its lambda over, when `lambda` is that lambda; else null. */
function mappedLambda(file: SourceFile, lambda: SyntaxNode): SyntaxNode | null {
  const call = lambda.parent?.type === 'argument_list' ? lambda.parent.parent : null;
  if (call?.type !== 'call' || calleeName(file, call) !== 'map') return null;
  const [fn, over] = positionalArguments(call);
  return fn === lambda && over !== undefined ? over : null;
}

/**
 * What a for loop inside the step ranges over when that is batch data: `for k, v in batch.items()` (its
 * values: `pair`), `for v in batch.values()`, `for t in batch` (the elements of a list/tuple batch), `for j,
 * db in enumerate(batch)` (a batch of micro-batches, FastSpeech's expanded batches: the pair's second
 * element). A dict batch moved entry by entry (`batch[k] = v.cuda()`) copies the same pinned tensors as a
 * comprehension over it.
 */
function batchElements(file: SourceFile, iterable: SyntaxNode, names: ReadonlyMap<string, Loader>): { loader: Loader; pair: boolean } | null {
  let base = iterable;
  let pair = false;
  if (iterable.type === 'call' && calleeName(file, iterable) === 'enumerate') {
    // `enumerate(batch)` (a `start=` aside): its pairs' second elements are the batch's elements. Not over
    // `.items()`, whose nested `(k, v)` pattern the caller does not unpack.
    const [inner, ...rest] = positionalArguments(iterable);
    if (inner === undefined || rest.length > 1 || inner.type === 'call' || hasSplat(iterable)) return null;
    const root = batchRoot(file, inner, names);
    return root === null || root.name === null ? null : { loader: root.loader, pair: true };
  }
  // `for part in images.split(16)` / `torch.chunk(x, n)`: micro-batches, views of the batch's storage.
  const pieces = iterable.type === 'call' && (SPLITTING_CALL.test(calleeName(file, iterable) ?? '') || SPLITTING_CALL.test(calleeMethod(file, iterable) ?? '')) ? viewBase(file, iterable) : null;
  if (pieces !== null) {
    const root = batchRoot(file, pieces, names);
    return root === null || root.name === null ? null : { loader: root.loader, pair: false };
  }
  if (iterable.type === 'call') {
    const m = calleeMethod(file, iterable);
    const fn = childByField(iterable, 'function');
    const obj = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
    if ((m !== 'items' && m !== 'values') || obj === null || positionalArguments(iterable).length > 0) return null;
    base = obj;
    pair = m === 'items';
  }
  const root = batchRoot(file, base, names);
  // Only a name holding batch data: a `next(it)` in a header belongs to that inner loop's own walk.
  return root === null || root.name === null ? null : { loader: root.loader, pair };
}

/** Calls that cut a tensor into views along a dimension, as a method or as torch's function. */
const SPLITTING_CALL = /^(torch\.)?(split|chunk|unbind|tensor_split)$/;

/** The last element of `k, v` / `(k, v)` (the value of an `.items()` pair), or null for another target. */
function lastOfPattern(left: SyntaxNode): SyntaxNode | null {
  if (!PATTERNS.has(left.type)) return null;
  const parts = left.children.filter((c) => c.named);
  return parts.length === 2 ? parts[1] : null;
}

interface Transfer {
  readonly call: SyntaxNode;
  /** The whole loop variable (maybe not a tensor: BatchEncoding, PyG Batch): no autofix. */
  readonly wholeBatch: boolean;
  readonly cuda: boolean | null;
  /** The loader the copied batch comes from. */
  readonly loader: Loader;
  /** Given `non_blocking=` (or `async=`): not a case 1 copy, still a case 2 one. */
  readonly nonBlocking: boolean;
  /** `utils.py:17`: the copy is made there, by the imported helper `call` runs (the finding is on the call, without a fix). */
  readonly copiedIn?: string;
}

/** Literal device of a `.to()` target: 'cuda', 'cpu', 'mps'..., or null when not a literal. */
export function literalDevice(file: SourceFile, arg: SyntaxNode): string | null {
  let n = arg;
  if (n.type === 'call' && calleeName(file, n) === 'torch.device') {
    const first = positionalArguments(n)[0];
    if (first === undefined) return null;
    n = first;
  }
  if (n.type !== 'string') return null;
  const m = /^[rRbBuUfF]*(['"])([a-z]+)/.exec(file.textOf(n));
  return m === null ? null : m[2];
}

/**
 * True when the target is visibly CUDA: a 'cuda' literal, `torch.device("cuda" if ... else "cpu")` (CUDA
 * whenever there is one), or a name / `CFG["device"]` whose values say so.
 */
export function isCudaDevice(file: SourceFile, arg: SyntaxNode, depth = 0): boolean {
  if (depth > MAX_DEPTH) return false;
  const literal = literalDevice(file, arg);
  if (literal !== null) return literal === 'cuda';
  if (arg.type === 'string') return false;
  if (isDeviceIndex(file, arg)) return true;
  if (/['"]cuda/.test(file.textOf(arg))) return true;
  if (arg.type === 'call' && calleeName(file, arg) === 'torch.device') {
    const first = positionalArguments(arg)[0];
    return first !== undefined && isCudaDevice(file, first, depth + 1);
  }
  // `args.device if torch.cuda.is_available() else "cpu"`: as the literal `"cuda" if ... else "cpu"` above.
  const branch = eitherBranch(arg, (b) => isCudaDevice(file, b, depth + 1));
  if (branch !== null) return branch;
  const values = arg.type === 'subscript' ? subscriptValues(file, arg) : arg.type === 'identifier' || arg.type === 'attribute' ? valuesOf(file, arg) : null;
  if (values !== null && values.some((v) => isCudaDevice(file, v, depth + 1))) return true;
  if (arg.type === 'identifier' && (passedCuda(file, arg, depth) || keptCudaDefault(file, arg, depth))) return true;
  // `config.DEVICE` / `from config import DEVICE`: a module-level value of another module of the project.
  const imported = values === null && (arg.type === 'identifier' || arg.type === 'attribute') ? importedValue(file, arg) : null;
  if (imported !== null && isCudaDevice(imported.module.file, imported.node!, depth + 1)) return true;
  return arg.type === 'attribute' && (argparseCudaDevice(file, arg) || constructedCuda(file, arg, depth));
}

/**
 * `self.device` kept by `__init__` from its `device` parameter, in a class that a module importing it constructs
 * with a CUDA device (`BYOLTrainer(..., device=device)` in main.py with `device = 'cuda' if ... else 'cpu'`):
 * as passedCuda for a function's parameter, some construction passing CUDA is enough. The constructions in this
 * file and in its importers (importer-constructions.ts); none readable leaves it unknown.
 */
function constructedCuda(file: SourceFile, attr: SyntaxNode, depth: number): boolean {
  const sites = constructionArguments(file, attr);
  return sites !== null && sites.some((site) => isCudaDevice(site.file, site.value, depth + 1));
}

/** The module-level value of another module of the project a name of this file refers to, or null. */
function importedValue(file: SourceFile, name: SyntaxNode): ResolvedName | null {
  const text = file.textOf(name).replace(/\s+/g, '');
  if (!/^[A-Za-z_][\w.]*$/.test(text)) return null;
  const resolved = resolveImport(file, text);
  return resolved !== null && resolved.kind === 'value' && resolved.node !== null ? resolved : null;
}

/**
 * A parameter that some call of its function passes a CUDA device: `def main(..., device): device =
 * torch.device(device)` called as `main(..., args.device)` with `--device` defaulting to 'cuda:0'. Read from
 * the call sites' own arguments, since the rebinding hides the parameter from valuesOf and an argparse
 * attribute has no assignment to resolve.
 */
function passedCuda(file: SourceFile, name: SyntaxNode, depth: number): boolean {
  const fn = enclosingFunction(name);
  const fnName = fn === null ? null : childByField(fn, 'name');
  if (fn === null || fnName === null) return false;
  if (!parameterNames(file, fn).includes(file.textOf(name))) return false;
  const index = positionalParameters(file, fn).indexOf(file.textOf(name));
  // A method is called as `self.name(...)` from its own class (another object's same-named method is not it).
  const isMethod = /^(self|cls)$/.test(parameterNames(file, fn)[0] ?? '');
  const cls = isMethod ? classOf(fn) : null;
  if (cls === null && isMethod) return false;
  return callsNamed(file, file.textOf(fnName)).some((call) => {
    const callee = childByField(call, 'function');
    if (cls === null ? callee?.type !== 'identifier' : callee?.type !== 'attribute' || localCallee(file, call) !== fn) return false;
    const passed = keywordArgument(file, call, file.textOf(name)) ?? positionalArguments(call)[index - (cls === null ? 0 : 1)] ?? null;
    return passed !== null && isCudaDevice(file, passed, depth + 1);
  });
}

/**
 * A device parameter with a CUDA default that some path through its function keeps: `def fit(self, ...,
 * device="cuda"): if device == "tpu": device = xm.xla_device()`. Its rebinding hides the default from
 * valuesOf, yet the function copies to CUDA unless told otherwise. Not when a statement of the function
 * body itself rebinds it to something else on every path (`device = "cpu"`).
 */
function keptCudaDefault(file: SourceFile, name: SyntaxNode, depth: number): boolean {
  const fn = enclosingFunction(name);
  const text = file.textOf(name);
  if (fn === null || !parameterNames(file, fn).includes(text)) return false;
  const dflt = (childByField(fn, 'parameters')?.children ?? [])
    .filter((p) => p.type === 'default_parameter' || p.type === 'typed_default_parameter')
    .find((p) => file.textOf(childByField(p, 'name') ?? p) === text);
  const value = dflt === undefined ? null : childByField(dflt, 'value');
  if (value === null || !isCudaDevice(file, value, depth + 1)) return false;
  const body = childByField(fn, 'body');
  // The statements of the body that are `text = ...`: from the assignment targets by name (an index read,
  // so a per-loop memo sees which statements it read), not a walk of the body's statements.
  return !assignedNames(file, text).some(({ assign, index, left }) => {
    const stmt = assign.parent;
    if (index !== null || left.type !== 'identifier' || stmt?.type !== 'expression_statement' || stmt.parent !== body || firstNamedChild(stmt) !== assign) return false;
    const right = childByField(assign, 'right');
    return right !== null && !new RegExp(`\\b${text}\\b`).test(file.textOf(right));
  });
}

/**
 * A CUDA device given as an ordinal: `.to(0)`, `.to(rank)` / `.cuda(local_rank)` / `.to(args.gpu)` under
 * DistributedDataParallel (an int is always a CUDA device to `.to()`), `x.get_device()`,
 * `torch.cuda.current_device()`.
 */
const DEVICE_INDEX_NAME = /^(\w+\.)*(local_rank|rank|gpu|gpu_id|local_gpu|device_id|device_ids\[0\])$/;

function isDeviceIndex(file: SourceFile, arg: SyntaxNode): boolean {
  if (arg.type === 'integer') return true;
  if (arg.type === 'call') {
    const name = calleeName(file, arg);
    return calleeMethod(file, arg) === 'get_device' || name === 'torch.cuda.current_device';
  }
  if (arg.type !== 'identifier' && arg.type !== 'attribute' && arg.type !== 'subscript') return false;
  return DEVICE_INDEX_NAME.test(file.textOf(arg).replace(/\s+/g, '')) && !isNeverCuda(file, arg);
}

/** A name whose every value is a non-CUDA device literal (`device = "cpu"`, `torch.device("mps")`). */
export function isNeverCuda(file: SourceFile, target: SyntaxNode): boolean {
  if (target.type !== 'identifier' && target.type !== 'attribute') return false;
  const values = valuesOf(file, target);
  if (values === null || values.length === 0) return false;
  return values.every((v) => {
    const d = literalDevice(file, v);
    return d !== null && d !== 'cuda';
  });
}

/**
 * `args.device` with `parser.add_argument("--device", default="cuda")` (or `args.gpu` with `type=int`) in the
 * file, or in the module of the project whose function built `args` (`args = get_arguments()` imported from
 * args.py).
 */
function argparseCudaDevice(file: SourceFile, attr: SyntaxNode): boolean {
  const name = childByField(attr, 'attribute');
  if (name === null) return false;
  if (argparseDeclaresCuda(file, file.textOf(name))) return true;
  const obj = childByField(attr, 'object');
  const built = obj?.type === 'identifier' ? (valuesOf(file, obj) ?? []) : [];
  return built.some((v) => {
    const parser = v.type === 'call' ? importedFunction(file, v) : null;
    return parser !== null && argparseDeclaresCuda(parser.module.file, file.textOf(name));
  });
}

/**
 * Whether `--<flag>` (or its dashed spelling) is first declared in `file` as a CUDA device: a CUDA default
 * (`default="cuda:0"`), or an integer (`type=int`), which where a device goes is a GPU index
 * (`torch.device(args.device_index if use_cuda else "cpu")`, as `torch.device(0)` is cuda:0).
 */
function argparseDeclaresCuda(file: SourceFile, flag: string): boolean {
  const declared = argparseFlags(file);
  // The first add_argument (in document order) declaring either spelling decides.
  const found = [declared.get(`--${flag}`), declared.get(`--${flag.replace(/_/g, '-')}`)].filter((d) => d !== undefined);
  if (found.length === 0) return false;
  const first = found.reduce((a, b) => (b.order < a.order ? b : a));
  return first.defaultIsCuda || first.integer;
}

interface ArgparseFlag {
  /** Position among the file's add_argument calls. */
  readonly order: number;
  readonly defaultIsCuda: boolean;
  /** Declared `type=int`. */
  readonly integer: boolean;
}

const argparseFlagMemo = new VersionMemo<ReadonlyMap<string, ArgparseFlag>>('MH009.argparseFlags');

/** Each flag's first `add_argument` in the file: one pass per version. */
function argparseFlags(file: SourceFile): ReadonlyMap<string, ArgparseFlag> {
  return argparseFlagMemo.get(file, (f) => {
    const flags = new Map<string, ArgparseFlag>();
    callsNamed(f, 'add_argument').forEach((call, order) => {
      const first = positionalArguments(call)[0];
      if (first === undefined || first.type !== 'string') return;
      const flag = f.textOf(first).slice(1, -1);
      if (flags.has(flag)) return;
      const dflt = keywordArgument(f, call, 'default');
      const type = keywordArgument(f, call, 'type');
      flags.set(flag, { order, defaultIsCuda: dflt !== null && /^['"]cuda/.test(f.textOf(dflt)), integer: type !== null && f.textOf(type) === 'int' });
    });
    return flags;
  });
}

/** The nearest loop around `node` within its function (for/while bodies only), or null. */
function nearestLoop(node: SyntaxNode): SyntaxNode | null {
  return enclosingLoops(node)[0] ?? null;
}

/** `x.cuda()`, `x.to(device)`, `Variable(x.cuda())`: an expression whose value is a copy made by `.to()`/`.cuda()`. */
function isTransferOf(file: SourceFile, expr: SyntaxNode): boolean {
  let n: SyntaxNode | null = expr;
  for (let i = 0; i < 16 && n !== null; i++) {
    if (n.type === 'call') {
      const m = calleeMethod(file, n);
      if ((m === 'to' || m === 'cuda') && childByField(n, 'function')?.type === 'attribute') return !DTYPE.test(file.textOf(positionalArguments(n)[0] ?? n));
      if (m === 'type' && childByField(n, 'function')?.type === 'attribute') return isCudaTensorType(file, positionalArguments(n)[0] ?? n);
    }
    n = viewBase(file, n);
  }
  return false;
}

/** `async=True`: the name `non_blocking` had before Python 3.7 made `async` a keyword. */
function hasAsyncFlag(file: SourceFile, call: SyntaxNode): boolean {
  const args = childByField(call, 'arguments');
  return args !== null && /\basync\s*=/.test(file.textOf(args));
}

/**
 * Host-to-device copies of batch data in a loop body lacking `non_blocking`, in document order. Batch
 * data is what the loop header binds from `header` (a for loop over a loader), and what `next(it)` over
 * a loader's iterator fetches in this loop's own body (`images, targets = next(batch_iterator)`).
 */
function transfersIn(file: SourceFile, loop: SyntaxNode, header: LoopLoader | null): Transfer[] {
  const body = childByField(loop, 'body');
  if (body === null) return [];
  const names = new Map<string, Loader>();
  const whole = new Set<string>();
  if (header !== null) {
    const bound = batchNames(file, loop, header);
    for (const [n, loader] of bound.names) names.set(n, loader ?? header.loader);
    for (const n of bound.whole) whole.add(n);
  }
  const out: Transfer[] = [];
  walkTransfers(file, body, loop, names, whole, out, 0);
  return out;
}

/** How many calls deep batches are followed into the file's own helpers (`self._run_batch(batch)` → `_move(batch)`). */
const HELPER_DEPTH = 2;

/**
 * The copies of batch data in `body`. `names` maps the names holding batch data to their loader, `whole`
 * the names holding a whole batch; `loop` is the loop whose `next(it)` fetches count (null in a helper:
 * its statements outside any loop of its own). Batches passed to a helper of this file are followed into it.
 */
function walkTransfers(file: SourceFile, body: SyntaxNode, loop: SyntaxNode | null, names: Map<string, Loader>, whole: Set<string>, out: Transfer[], depth: number): void {
  const bind = (left: SyntaxNode, loader: Loader): void => {
    const bound = new Set<string>();
    patternNames(file, left, bound);
    for (const n of bound) names.set(n, loader);
  };
  // Post-order walk in document order, so `x, y = batch` binds before the next statement's `x.to(device)`.
  const visit = (n: SyntaxNode): void => {
    if (n.parent?.type === 'for_statement' && childByField(n.parent, 'right') === n) {
      // The header's iterable is visited before the loop's body: bind its variables first.
      const over = batchElements(file, n, names);
      const left = childByField(n.parent, 'left');
      const target = over === null || left === null ? null : over.pair ? lastOfPattern(left) : left;
      if (over !== null && target !== null) bind(target, over.loader);
      return;
    }
    if (n.type === 'assignment') {
      const left = childByField(n, 'left');
      const right = childByField(n, 'right');
      if (left === null || right === null) return;
      if (right.type === 'call' && nearestLoop(n) === loop) {
        const fetched = fetchedLoader(file, right, 0);
        if (fetched !== null) {
          // `_, batch = loader_iter.__next__()` over enumerate(loader): the pair's second element.
          const parts = left.children.filter((c) => c.named);
          const target = fetched.enumerated ? (PATTERNS.has(left.type) && parts.length === 2 ? parts[1] : null) : left;
          if (target === null) return;
          if (target.type === 'identifier') whole.add(file.textOf(target));
          bind(target, sideFetch(file, n, body, target, names, fetched.loader) ? { ...fetched.loader, side: true } : fetched.loader);
          return;
        }
      }
      const parts = right.type === 'expression_list' || right.type === 'tuple' ? right.children.filter((c) => c.named) : [right];
      // `target = target.cuda()`: the name now holds a device tensor; copying it again is not a host copy.
      // `targets = torch.tensor(targets)`, `images = batch_transforms(images)`, `points = points.numpy()`:
      // a new tensor (or no tensor) in pageable memory, no longer the loader's pinned batch. Not when the
      // rebinding is conditional (`if args.multi_crop: inputs = multi_crop(inputs)`): the other path keeps it.
      const targets = PATTERNS.has(left.type) ? left.children.filter((c) => c.named) : [left];
      if (targets.length === parts.length) {
        const always = !conditionalWithin(n, body);
        targets.forEach((t, i) => {
          if (t.type !== 'identifier') return;
          if (isTransferOf(file, parts[i]) || (always && batchRoot(file, parts[i], names) === null)) {
            names.delete(file.textOf(t));
            whole.delete(file.textOf(t));
          }
        });
      }
      for (const p of parts) {
        const root = batchRoot(file, p, names);
        if (root !== null && (root.name !== null || nearestLoop(n) === loop)) {
          bind(left, root.loader);
          break;
        }
      }
      return;
    }
    if (n.type !== 'call') return;
    const method = calleeMethod(file, n);
    if (method !== 'to' && method !== 'cuda' && method !== 'type') {
      if (depth < HELPER_DEPTH) followHelper(file, n, names, whole, out, depth);
      return;
    }
    const fn = childByField(n, 'function');
    const receiver = fn === null || fn.type !== 'attribute' ? null : childByField(fn, 'object');
    if (receiver === null) return;
    const root = batchRoot(file, receiver, names);
    // `next(it).to(device)` counts in the loop that runs the next() only (not in every loop around it).
    if (root !== null && root.name === null && nearestLoop(n) !== loop) return;
    const viaComprehension = root === null && receiver.type === 'identifier' ? comprehensionOverBatch(file, receiver, names, body) : null;
    const loader = root?.loader ?? viaComprehension;
    if (loader === null || loader === undefined) return;
    const args = argumentNodes(n);
    if (args === null || hasSplat(n)) return;
    // `non_blocking=` (any value; `async=True` before Python 3.7) settles case 1, not case 2: from pageable
    // memory the copy is staged synchronously all the same.
    const nonBlocking = keywordArgument(file, n, 'non_blocking') !== null || hasAsyncFlag(file, n);
    const positional = positionalArguments(n);
    let cuda: boolean | null;
    if (method === 'type') {
      // `x.type(torch.cuda.FloatTensor)`: a copy to the current CUDA device (`Tensor.type` takes `non_blocking` too).
      if (positional.length !== 1 || !isCudaTensorType(file, positional[0])) return;
      cuda = true;
    } else if (method === 'cuda') {
      if (positional.length > 1) return;
      cuda = true;
    } else {
      if (positional.length > 2) return;
      const target = positional[0] ?? keywordArgument(file, n, 'device');
      if (target === null || target === undefined) return;
      if (DTYPE.test(file.textOf(target))) return;
      const literal = literalDevice(file, target);
      if (literal !== null && literal !== 'cuda') return; // 'cpu', 'mps': not a host-to-CUDA copy
      if (literal === null && isNeverCuda(file, target)) return; // `device = torch.device("cpu")`
      cuda = isCudaDevice(file, target);
    }
    // The whole batch (a name bound to it, or `next(it)` itself) may be a dict or BatchEncoding: no autofix.
    const wholeBatch = root === null ? false : root.name === null ? receiver.type === 'call' : receiver.type === 'identifier' && whole.has(root.name);
    out.push({ call: n, wholeBatch, cuda, loader, nonBlocking });
  };
  // `map(lambda t: t.to(device), batch)` runs its lambda here, over the batch's elements.
  postOrder(body, visit, (scope) => scope.type === 'lambda' && mappedLambda(file, scope) !== null);
}

/**
 * `if i % 10 == 0: j, data = next(enumerate(test_loader))` in a training loop: a batch fetched in a branch
 * that does not backpropagate, into names that were unbound or held another loader's batch. It is a periodic
 * side batch (a test batch every N steps), not what the loop trains on; the loop's own loader refetched in
 * a branch (`if batch is None: batch = next(iter(loader))`) keeps its role.
 */
function sideFetch(file: SourceFile, at: SyntaxNode, body: SyntaxNode, target: SyntaxNode, names: ReadonlyMap<string, Loader>, loader: Loader): boolean {
  let branch: SyntaxNode | null = null;
  for (let p = at.parent; p !== null && p !== body; p = p.parent) if (p.type === 'if_statement') branch = p;
  if (branch === null || /\.backward\s*\(|\.step\s*\(/.test(file.textOf(branch))) return false;
  const bound = new Set<string>();
  patternNames(file, target, bound);
  return [...bound].every((n) => names.get(n) === undefined || names.get(n)!.calls[0] !== loader.calls[0]);
}

const BRANCHES = new Set(['if_statement', 'elif_clause', 'else_clause', 'try_statement', 'except_clause', 'while_statement', 'for_statement', 'match_statement']);

/** Whether `node` runs only on some paths through `body`: under a branch, a handler or an inner loop of it. */
function conditionalWithin(node: SyntaxNode, body: SyntaxNode): boolean {
  for (let p = node.parent; p !== null && p !== body; p = p.parent) if (BRANCHES.has(p.type)) return true;
  return false;
}

/**
 * `self._step(batch)` / `train_step(x, y)` with batch data as arguments: the helper of this file (a
 * module-level function, or a method of the caller's class) walked with its parameters bound to the
 * batch, so the copies it makes are found where they are written.
 */
function followHelper(file: SourceFile, call: SyntaxNode, names: ReadonlyMap<string, Loader>, whole: ReadonlySet<string>, out: Transfer[], depth: number): void {
  const local = localCallee(file, call);
  // A helper imported from another module of the project (`to_var(x)` of utils.py): walked in its own file.
  const imported = local === null ? importedFunction(file, call) : null;
  const def = local ?? imported?.node ?? null;
  const body = def === null ? null : childByField(def, 'body');
  if (def === null || body === null) return;
  const defFile = imported?.module.file ?? file;
  const params = positionalParameters(defFile, def);
  // `self.m(batch)` skips `self`; `utils.to_var(x)` (a module's function) does not.
  const offset = local !== null && childByField(call, 'function')?.type === 'attribute' ? 1 : 0;
  const inner = new Map<string, Loader>();
  const innerWhole = new Set<string>();
  const pass = (param: string | undefined, arg: SyntaxNode): void => {
    if (param === undefined) return;
    const root = batchRoot(file, arg, names);
    if (root === null) return;
    inner.set(param, root.loader);
    if (root.name === null ? arg.type === 'call' : arg.type === 'identifier' && whole.has(root.name)) innerWhole.add(param);
  };
  for (const arg of argumentNodes(call) ?? []) {
    if (arg.type === 'list_splat' || arg.type === 'dictionary_splat') return;
    if (arg.type === 'keyword_argument') {
      const k = childByField(arg, 'name');
      const value = childByField(arg, 'value');
      if (k !== null && value !== null) pass(file.textOf(k), value);
    }
  }
  positionalArguments(call).forEach((arg, i) => pass(params[i + offset], arg));
  if (inner.size === 0) return;
  if (imported === null || imported === undefined) {
    walkTransfers(file, body, null, inner, innerWhole, out, depth + 1);
    return;
  }
  // The copies are nodes of the other file: each is reported on this call, saying where it is made.
  const foreign: Transfer[] = [];
  walkTransfers(defFile, body, null, inner, innerWhole, foreign, depth + 1);
  for (const t of foreign) {
    out.push({ call, wholeBatch: true, cuda: t.cuda, loader: t.loader, nonBlocking: t.nonBlocking, copiedIn: `${imported.module.display}:${defFile.lineOf(t.call.start) + 1}` });
  }
}

/** The function of another module of the project a call runs (`to_var(x)`, `utils.to_var(x)`), or null. */
function importedFunction(file: SourceFile, call: SyntaxNode): ResolvedName | null {
  const resolved = importedCallee(file, call);
  return resolved !== null && resolved.kind === 'function' ? resolved : null;
}

/** The function of this file a call runs: a unique module-level `def`, or `self.m(...)`'s method in the caller's class. */
function localCallee(file: SourceFile, call: SyntaxNode): SyntaxNode | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  if (fn.type === 'identifier') {
    const defs = functionsNamed(file, file.textOf(fn)).filter((d) => classOf(d) === null);
    return defs.length === 1 ? defs[0] : null;
  }
  if (fn.type !== 'attribute') return null;
  const obj = childByField(fn, 'object');
  const attr = childByField(fn, 'attribute');
  if (obj === null || attr === null || file.textOf(obj) !== 'self') return null;
  const caller = enclosingFunction(call);
  const cls = caller === null ? null : classOf(caller);
  if (cls === null) return null;
  const defs = functionsNamed(file, file.textOf(attr)).filter((d) => classOf(d) === cls);
  return defs.length === 1 ? defs[0] : null;
}

/** The class a `def` is a method of (directly in its body, decorators allowed), or null. */
function classOf(def: SyntaxNode): SyntaxNode | null {
  let p = def.parent;
  if (p !== null && p.type === 'decorated_definition') p = p.parent;
  return p !== null && p.type === 'block' && p.parent?.type === 'class_definition' ? p.parent : null;
}

/** Iterative post-order traversal in document order (deeply nested code must not overflow the stack). */
function postOrder(root: SyntaxNode, visit: (n: SyntaxNode) => void, enter?: (scope: SyntaxNode) => boolean): void {
  const stack: { node: SyntaxNode; next: number }[] = [{ node: root, next: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    if (top.next < top.node.children.length) {
      const child = top.node.children[top.next++];
      if (!SCOPES.has(child.type) || (enter?.(child) ?? false)) stack.push({ node: child, next: 0 });
      continue;
    }
    stack.pop();
    visit(top.node);
  }
}

const COPY_NEEDLES = ['.to(', '.cuda(', '.type('];

/** Whether `.to(` / `.cuda(` starts in the body's text wholly inside it (kept with the loop: its text does not change). */
function copyInside(file: SourceFile, body: SyntaxNode): boolean {
  const text = file.text.slice(body.start, body.end);
  return COPY_NEEDLES.some((n) => text.includes(n));
}

/** Whether one starts in the body but runs past its end (only broken code ends a body with `.`). */
function copyAcrossEnd(file: SourceFile, body: SyntaxNode): boolean {
  const from = Math.max(body.start, body.end - 5);
  const text = file.text.slice(from, body.end + 5);
  return COPY_NEEDLES.some((n) => {
    const i = text.indexOf(n);
    return i >= 0 && from + i < body.end;
  });
}

const helperCopies = new NodeMemo<boolean>('MH009.callsCopyingHelper');

const defHelperFacts = new NodeMemo<string>('MH009.defHelperFacts');

/**
 * What callsCopyingHelper reads of one def from its own subtree: its name, whether its body copies, and
 * the helpers its calls with arguments can name (`f(...)` and `self.f(...)`; nested scopes aside, as there).
 */
function helperFactsOf(file: SourceFile, def: SyntaxNode): string {
  return defHelperFacts.get(file, def, '', () => {
    const name = childByField(def, 'name');
    const body = childByField(def, 'body');
    if (name === null || body === null) return `${name === null ? '' : file.textOf(name)}:-`;
    const callees = new Set<string>();
    const stack = [body];
    while (stack.length > 0) {
      const n = stack.pop()!;
      for (const c of n.children) if (!SCOPES.has(c.type)) stack.push(c);
      if (n.type !== 'call' || positionalArguments(n).length + (argumentNodes(n)?.length ?? 0) === 0) continue;
      const fn = childByField(n, 'function');
      if (fn?.type === 'identifier') callees.add(`f.${file.textOf(fn)}`);
      else if (fn?.type === 'attribute') {
        const obj = childByField(fn, 'object');
        const attr = childByField(fn, 'attribute');
        if (obj !== null && attr !== null && file.textOf(obj) === 'self') callees.add(`s.${file.textOf(attr)}`);
      }
    }
    return `${file.textOf(name)}:${copyInside(file, body) ? 1 : 0}:${[...callees].sort().join(',')}`;
  });
}

interface HelperGraph {
  /** Every def's helper facts with its class (by position among the classes holding defs). */
  readonly signature: string;
  readonly classIds: ReadonlyMap<SyntaxNode, number>;
}

const helperGraphs = new VersionMemo<HelperGraph>('MH009.helperGraph');

/**
 * Everything callsCopyingHelper reads outside the loop body it is asked about (localCallee resolves by
 * name and class among the file's defs; each def's copy text and calls are in its facts), so its result
 * for a reused body holds while this signature and the body's class are unchanged. Per-def facts are
 * kept on the def nodes, so an edit inside one method of a giant class recomputes that method's only.
 */
function helperGraph(file: SourceFile): HelperGraph {
  return helperGraphs.get(file, () => {
    const classIds = new Map<SyntaxNode, number>();
    const parts: string[] = [];
    for (const def of file.nodesOfType('function_definition')) {
      const cls = classOf(def);
      let id = -1;
      if (cls !== null) {
        id = classIds.get(cls) ?? classIds.size;
        classIds.set(cls, id);
      }
      parts.push(`${id}/${helperFactsOf(file, def)}`);
    }
    return { signature: intern(file, parts.join('|')), classIds };
  });
}

/** The deps of callsCopyingHelper(body): the helper graph and the class whose `self.f(...)` the body's calls name. */
function helperCopiesDeps(file: SourceFile, body: SyntaxNode, signature: string): string {
  const graph = helperGraph(file);
  const caller = enclosingFunction(body);
  const cls = caller === null ? null : classOf(caller);
  return `${signature}|${cls === null ? -1 : (graph.classIds.get(cls) ?? -2)}|${graph.signature}`;
}

/** Whether `body` calls a helper of this file (up to HELPER_DEPTH calls deep) whose text copies something. */
function callsCopyingHelper(file: SourceFile, body: SyntaxNode, depth: number): boolean {
  const stack = [body];
  while (stack.length > 0) {
    const n = stack.pop()!;
    for (const c of n.children) if (!SCOPES.has(c.type)) stack.push(c);
    if (n.type !== 'call' || positionalArguments(n).length + (argumentNodes(n)?.length ?? 0) === 0) continue;
    const def = localCallee(file, n);
    if (def === null) {
      // A helper of another module of the project (followed one call deep, like followHelper's walk there).
      const imported = importedFunction(file, n);
      const inner = imported?.node === undefined || imported.node === null ? null : childByField(imported.node, 'body');
      if (imported !== null && inner !== null && copyInside(imported.module.file, inner)) return true;
      continue;
    }
    const inner = childByField(def, 'body');
    if (inner === null || inner === body) continue;
    if (copyInside(file, inner) || (depth + 1 < HELPER_DEPTH && callsCopyingHelper(file, inner, depth + 1))) return true;
  }
  return false;
}

/** What MH009 finds in one for-loop that copies, apart from whether it trains (asked afresh: steps.ts is order-sensitive). */
interface LoopResult {
  readonly found: LoopLoader | null;
  readonly transfers: readonly Transfer[];
}

const NO_RESULT: LoopResult = { found: null, transfers: [] };
const copies = new NodeMemo<boolean>('MH009.copyInside');

/**
 * Per for-loop results, kept while the loop is reused, its deps are equal (the imports; the statement of
 * the outermost function's body around it and that function's header), every index key it read (values
 * of names, functions, calls by name) keeps its list and every other statement of that body those lists
 * reached is unchanged: NodeMemo.getTrackedWithin. So nothing here may read a function's body outside
 * the indexes (keptCudaDefault reads the body's rebindings from the assignment targets, not its block).
 */
const loopCache = new NodeMemo<LoopResult>('MH009.loop');

function loopResult(file: SourceFile, loop: SyntaxNode, body: SyntaxNode, signature: string): LoopResult {
  // Cheap text test before any name resolution: the body must copy something (its text is the node's).
  const inside = copies.get(file, body, '', () => copyInside(file, body));
  if (!inside && !copyAcrossEnd(file, body) && !helperCopies.get(file, body, helperCopiesDeps(file, body, signature), () => callsCopyingHelper(file, body, 0))) return NO_RESULT;
  // Anchored on the statement of the outermost function's body that holds the loop, with that function's
  // header: an edit elsewhere in a giant `def main():` keeps the entry unless it touches a statement the
  // loop's index reads reached (NodeMemo.getTrackedWithin).
  const piece = enclosingPiece(file, loop);
  return loopCache.getTrackedWithin(file, loop, `${signature}|${piece.token}`, piece.body, (): LoopResult => {
    const found = loaderOfLoop(file, loop);
    // Without a loader in the header, only `next(it)` in the body can fetch batches.
    if (found === null && !file.text.slice(body.start, body.end).includes('next')) return NO_RESULT;
    // A zip of loaders pinned differently still tells each batch's loader apart.
    const header = found === null || (found.loader.pinned === 'unknown' && (found.zipped === null || found.zipped.every((l) => l.pinned === 'unknown'))) ? null : found;
    return { found, transfers: transfersIn(file, loop, header).filter((t) => t.loader.pinned !== 'unknown') };
  });
}

const unitLoaders = new NodeMemo<boolean>('MH009.constructsLoader');

/** The statement constructs a DataLoader (under the import signature: aliases and names resolve through imports). */
function constructsLoader(file: SourceFile, unit: SyntaxNode, signature: string, aliases: ReadonlySet<string>): boolean {
  return unitLoaders.get(file, unit, signature, () => {
    for (const [method, calls] of unitCallGroups(file, unit)) if ((method.endsWith('Loader') || aliases.has(method)) && calls.some((c) => isDataLoader(file, c))) return true;
    return false;
  });
}

const ENGINE = /^ignite\.engine(\.engine)?\.Engine$/;

/**
 * PyTorch Ignite's loop: `trainer = Engine(step)` then `trainer.run(train_loader, max_epochs=n)` calls
 * `step(engine, batch)` on every batch of the loader, so `step`'s second parameter is batch data. The
 * step trains when it calls `backward()` or an optimizer's `step()`.
 */
function engineSteps(file: SourceFile): { transfers: Transfer[]; trains: boolean }[] {
  const out: { transfers: Transfer[]; trains: boolean }[] = [];
  for (const run of callsNamed(file, 'run')) {
    const fn = childByField(run, 'function');
    const engine = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
    const source = positionalArguments(run)[0];
    if (engine === null || source === undefined || (engine.type !== 'identifier' && engine.type !== 'attribute')) continue;
    const built = (valuesOf(file, engine) ?? []).filter((v) => v.type === 'call' && ENGINE.test(calleeName(file, v) ?? ''));
    if (built.length !== 1) continue;
    const stepName = positionalArguments(built[0])[0];
    const defs = stepName?.type === 'identifier' ? functionsNamed(file, file.textOf(stepName)) : [];
    const body = defs.length === 1 ? childByField(defs[0], 'body') : null;
    const batch = defs.length === 1 ? positionalParameters(file, defs[0])[1] : undefined;
    if (body === null || batch === undefined) continue;
    const loader = loaderOf(file, source, 0);
    if (loader === null || loader.pinned === 'unknown') continue;
    const transfers: Transfer[] = [];
    walkTransfers(file, body, null, new Map([[batch, loader]]), new Set([batch]), transfers, 0);
    out.push({ transfers, trains: /\.backward\s*\(|\.step\s*\(/.test(file.textOf(body)) });
  }
  out.push(...torchnetSteps(file));
  return out;
}

const TORCHNET_ENGINE = /^torchnet\.engine(\.engine)?\.Engine$/;

/**
 * torchnet's loop: `engine = Engine()` then `engine.train(h, train_loader, maxepoch, optimizer)` calls
 * `h(sample)` on every batch of the loader and backpropagates the loss `h` returns (so it trains even though
 * `h` has no `backward()`); `engine.test(h, test_loader)` only runs `h`. `h`'s first parameter is batch data.
 */
function torchnetSteps(file: SourceFile): { transfers: Transfer[]; trains: boolean }[] {
  const out: { transfers: Transfer[]; trains: boolean }[] = [];
  for (const method of ['train', 'test']) {
    for (const call of callsNamed(file, method)) {
      const fn = childByField(call, 'function');
      const engine = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
      const [stepName, source] = positionalArguments(call);
      if (engine === null || stepName?.type !== 'identifier' || source === undefined || (engine.type !== 'identifier' && engine.type !== 'attribute')) continue;
      const built = valuesOf(file, engine) ?? [];
      if (built.length !== 1 || built[0].type !== 'call' || !TORCHNET_ENGINE.test(calleeName(file, built[0]) ?? '')) continue;
      const defs = functionsNamed(file, file.textOf(stepName));
      const body = defs.length === 1 ? childByField(defs[0], 'body') : null;
      const batch = defs.length === 1 ? parameterNames(file, defs[0])[0] : undefined;
      if (body === null || batch === undefined || batch === '') continue;
      const loader = loaderOf(file, source, 0);
      if (loader === null || loader.pinned === 'unknown') continue;
      const transfers: Transfer[] = [];
      walkTransfers(file, body, null, new Map([[batch, loader]]), new Set([batch]), transfers, 0);
      out.push({ transfers, trains: method === 'train' });
    }
  }
  return out;
}

/** The device argument of a `.to(d)` / `.cuda(d)` copy, or null (`.cuda()` has none). */
function copyTarget(file: SourceFile, call: SyntaxNode): SyntaxNode | null {
  return positionalArguments(call)[0] ?? keywordArgument(file, call, 'device');
}

/**
 * Case 2 across files: an unpinned DataLoader of this file handed to a function or class of another module
 * of the project whose training loop copies its batches to CUDA (`engine.train_fn(train_loader, model,
 * optimizer, device)`; `Train(model, train_loader, ..., device).run_epoch()`). Where the callee copies to a
 * device it was given (`.to(device)`, `.to(self.device)`), the caller's argument decides whether it is CUDA.
 * The finding is on the construction here; `where` names the loop that copies. With `builtElsewhere`, the
 * loaders handed are those this file got from another module (exportedLoaders reads an importer this way).
 */
function handedLoaders(file: SourceFile, builtElsewhere = false): { loader: Loader; where: string }[] {
  const out: { loader: Loader; where: string }[] = [];
  if (file.session.project === null || (!builtElsewhere && !file.text.includes('Loader'))) return out;
  for (const call of file.nodesOfType('call')) {
    if ((argumentNodes(call) ?? []).length === 0) continue;
    const callee = handedCallee(file, call);
    if (callee === null) continue;
    const foreign = callee.module.file;
    for (const [param, arg] of callee.arguments) {
      if (arg.type !== 'identifier' && arg.type !== 'attribute' && arg.type !== 'call') continue;
      const loader = loaderOf(file, arg, 0);
      if (loader === null || loader.pinned !== 'no' || (builtElsewhere ? (loader.built ?? []).length === 0 : loader.calls.length === 0)) continue;
      for (const loop of callee.loopsOver(param)) {
        const found = loopIterable(foreign, loop);
        const header: LoopLoader = { loader, enumerated: found?.enumerated ?? false, zipped: null };
        const cuda = transfersIn(foreign, loop, header).some((t) => {
          if (t.loader !== loader) return false;
          if (t.cuda === true) return true;
          const target = copyTarget(foreign, t.call);
          const given = target === null ? null : callee.argumentFor(target);
          return given !== null && isCudaDevice(file, given);
        });
        if (cuda && isTrainingLoop(foreign, loop)) {
          out.push({ loader, where: `${callee.module.display}:${foreign.lineOf(loop.start) + 1}` });
          break;
        }
      }
    }
  }
  return out;
}

/**
 * Case 2 across files, the other way round: an unpinned DataLoader of this file that another module of the
 * project imports (a module-level `train_loader`, or what a function of this file returns, `get_loaders()`)
 * and whose training loop there copies its batches to CUDA. The importer's loop is read as when that module
 * is linted; its loaders keep the spans of their constructions here (`built`). The importer may also hand
 * the loader on to a function or class of a third module whose training loop copies it (handedLoaders). The
 * finding is on the construction; `where` names the loop.
 */
function exportedLoaders(file: SourceFile): { call: SyntaxNode; where: string }[] {
  const project = file.session.project;
  if (project === null || !file.text.includes('Loader')) return [];
  const unpinned = file.nodesOfType('call').filter((c) => isDataLoader(file, c) && pinnedOf(file, c) === 'no');
  if (unpinned.length === 0) return [];
  const holds = (l: Loader | null): boolean => l !== null && l.calls.some((c) => unpinned.includes(c));
  // The names an importer reaches them by: functions that build one, module-level names bound to one.
  const names = new Set<string>();
  for (const unit of file.root.children) {
    const def = unit.type === 'decorated_definition' ? childByField(unit, 'definition') : unit;
    const defName = def?.type === 'function_definition' ? childByField(def, 'name') : null;
    if (def !== null && defName !== null) {
      if (unpinned.some((c) => c.start >= def.start && c.end <= def.end)) names.add(file.textOf(defName));
      continue;
    }
    const assign = unit.type === 'expression_statement' ? unit.children[0] : null;
    const left = assign?.type === 'assignment' ? childByField(assign, 'left') : null;
    if (left === null) continue;
    const targets = left.type === 'identifier' ? [left] : left.type === 'pattern_list' || left.type === 'tuple_pattern' ? left.children.filter((c) => c.type === 'identifier') : [];
    for (const t of targets) if (holds(loaderOf(file, t, 0))) names.add(file.textOf(t));
  }
  const out: { call: SyntaxNode; where: string }[] = [];
  const read = new Set<string>([project.path]);
  for (const name of names) {
    for (const importer of project.lookup.importersOf(project.path, name)) {
      if (read.has(importer.path)) continue;
      read.add(importer.path);
      const other = importer.file;
      // A module that mentions the name without importing it from here (a folder of unrelated scripts) is not read further.
      if (!importsFromHere(other, name, project.path)) continue;
      const signature = `${importSignature(other)}|${project.lookup.stamp}`;
      for (const loop of [...other.nodesOfType('for_statement'), ...other.nodesOfType('while_statement')]) {
        const body = childByField(loop, 'body');
        if (body === null) continue;
        const cuda = loopResult(other, loop, body, signature).transfers.filter((t) => t.loader.pinned === 'no' && t.cuda === true && t.loader.side !== true);
        if (cuda.length === 0 || !isTrainingLoop(other, loop)) continue;
        for (const b of cuda.flatMap((t) => t.loader.built ?? [])) {
          const call = b.path === project.path ? unpinned.find((c) => c.start === b.start && c.end === b.end) : undefined;
          if (call !== undefined) out.push({ call, where: `${importer.display}:${other.lineOf(loop.start) + 1}` });
        }
      }
      // Handed on by the importer to a third module's training loop: `a_loader, b_loader = get_loader(...)` in
      // main.py, then `Trainer(config, a_loader, b_loader)` of trainer.py, whose loop copies to CUDA.
      for (const handed of handedLoaders(other, true)) {
        for (const b of handed.loader.built ?? []) {
          const call = b.path === project.path ? unpinned.find((c) => c.start === b.start && c.end === b.end) : undefined;
          if (call !== undefined) out.push({ call, where: `${handed.where}, handed on by ${importer.display}` });
        }
      }
    }
  }
  return out;
}

/** `other` imports `name` from the module at `path`: `from data import name`, or `data.name` with `data` that module. */
function importsFromHere(other: SourceFile, name: string, path: string): boolean {
  if (resolveImport(other, name)?.module.path === path) return true;
  return other.nodesOfType('attribute').some((a) => {
    const attr = childByField(a, 'attribute');
    const obj = childByField(a, 'object');
    if (attr === null || obj === null || other.textOf(attr) !== name) return false;
    const resolved = resolveImport(other, other.textOf(obj).replace(/\s+/g, ''));
    return resolved?.kind === 'module' && resolved.module.path === path;
  });
}

/** A name or call that builds token-id data: `tokenizer`, `tokenized_datasets`, `tokenize_fn`, `DataCollatorWithPadding`. */
const TOKEN_SOURCE = /\btokeni[sz]\w*|\bDataCollator\w*/i;
/** Words of sizeable per-sample data: an image-text or audio-text dataset is not a token-id one. */
const DENSE_DATA = /image|img|pixel|transform|ToTensor|\bPIL\b|cv2|audio|wav|\bmel|spectrogram|video|frame|feature/i;

/**
 * Case 2 only: the loader's batches are token ids, because its dataset or its `collate_fn` is built with a
 * tokenizer (`PreprocessedIterableDataset(data, tokenizer, ...)`, `tokenized["train"]`,
 * `collate_fn=DataCollatorWithPadding(tokenizer)`), or is an instance (or a method of an instance) of a class
 * of this file that tokenizes (`SentimentDataset` holding `self.tokenizer`), directly or through the names
 * they are assigned from (two hops, every assignment), and nothing there names images, audio, video or
 * features. A step's copy is then batch x sequence integers (32 x 512 int64 is 128 KB), against the megabytes
 * of an image or feature batch: staging it through pageable memory costs microseconds beside a language
 * model's step, and pinning buys next to nothing (the labelled corpus judges such loaders not worth a
 * finding). Case 1 is unchanged: a loader that already pins should also not block.
 */
function yieldsTokenIds(file: SourceFile, call: SyntaxNode): boolean {
  const sources = [keywordArgument(file, call, 'dataset') ?? positionalArguments(call)[0], keywordArgument(file, call, 'collate_fn')];
  return sources.some((s) => s !== null && s !== undefined && buildsTokens(file, s, 0));
}

function buildsTokens(file: SourceFile, expr: SyntaxNode, depth: number): boolean {
  const text = file.textOf(expr);
  if (DENSE_DATA.test(text)) return false;
  if (TOKEN_SOURCE.test(text)) return true;
  if (depth >= 2) return false;
  if (expr.type === 'call') {
    const fn = childByField(expr, 'function');
    return fn?.type === 'identifier' && classTokenizes(file, file.textOf(fn));
  }
  // `collate_fn=train_dataset.collate_fn`: a method of a tokenizing dataset.
  if (expr.type === 'attribute') {
    const object = childByField(expr, 'object');
    if (object !== null && buildsTokens(file, object, depth + 1)) return true;
  }
  if (expr.type !== 'identifier' && expr.type !== 'attribute') return false;
  const values = valuesOf(file, expr);
  return values !== null && values.length > 0 && values.every((v) => buildsTokens(file, v, depth + 1));
}

/** Words of dense per-sample data in a step's own code (not `transform`, which `transformers` contains). */
const DENSE_BATCH = /image|img|pixel|\baudio|wav|\bmel\b|spectrogram|video|frame|feature|point_?cloud|voxel/i;

/**
 * The step feeds its batch to the model as token ids: the loop body, or a helper outside it that makes one of
 * the copies, names `input_ids` (`inputs = {'input_ids': batch[0], 'attention_mask': batch[1]}`, JointBERT;
 * `batch['input_ids'].cuda()`), and none of them names dense data (`pixel_values`, `input_features` of a
 * speech model). What the loader's dataset is may be out of sight (built in another file and handed to a
 * trainer); how its batches are used says they are token ids all the same.
 */
function feedsTokenIds(file: SourceFile, loop: SyntaxNode | null, transfers: readonly Transfer[]): boolean {
  const body = loop === null ? null : childByField(loop, 'body');
  if (body === null) return false;
  const texts = [file.textOf(body)];
  for (const t of transfers) {
    const fn = enclosingFunction(t.call);
    if (fn !== null && (t.call.start < body.start || t.call.end > body.end)) texts.push(file.textOf(fn));
  }
  return texts.some((x) => /\binput_ids\b/.test(x)) && !texts.some((x) => DENSE_BATCH.test(x));
}

/** The `pin_memory=` setting of the loader's constructions in this file, for the message. */
function pinOptionText(file: SourceFile, loader: Loader): string {
  const pin = loader.calls.map((c) => keywordArgument(file, c, 'pin_memory')).find((p) => p !== null);
  return pin === undefined || pin === null ? '`pin_memory=`' : `\`pin_memory=${file.textOf(pin)}\``;
}

/** A class of this file named `name` whose body uses a tokenizer and names no dense data (images, audio, features). */
function classTokenizes(file: SourceFile, name: string): boolean {
  return file.nodesOfType('class_definition').some((cls) => {
    const id = childByField(cls, 'name');
    if (id === null || file.textOf(id) !== name) return false;
    const body = file.textOf(cls);
    return TOKEN_SOURCE.test(body) && !DENSE_DATA.test(body);
  });
}

export const blockingTransfer: Rule = {
  code: 'MH009',
  name: 'blocking-transfer',
  severity: 'info',
  summary: 'Batch copies to the GPU that block: no `non_blocking=True` from a pinned loader, or a CUDA training loader without `pin_memory=True`.',
  check(file) {
    const findings: RuleFinding[] = [];
    // With a project, the loader may be built in a module the file imports: no construction here is needed.
    const project = file.session.project;
    if (project === null && !file.text.includes('Loader')) return findings;
    const aliases = new Set<string>();
    for (const b of importBindings(file).values()) if (b.qualified.endsWith('Loader')) aliases.add(b.local);
    const signature = importSignature(file);
    if (project === null && !unitsOf(file).some((unit) => constructsLoader(file, unit, signature, aliases))) return findings;
    const unpinnedReported = new Set<SyntaxNode>();
    /** One finding per unpinned loader construction, whichever loop (here or in another module) found it first. */
    const reportUnpinned = (call: SyntaxNode, message: string): void => {
      if (unpinnedReported.has(call)) return;
      unpinnedReported.add(call);
      const fn = childByField(call, 'function');
      findings.push({ start: fn?.start ?? call.start, end: call.end, message: message + dropInNote(file, call) });
    };
    // A helper's copy is found from every loop that passes it a batch: reported once.
    const copiesReported = new Set<SyntaxNode>();
    const steps: { transfers: readonly Transfer[]; trains: () => boolean; loop: SyntaxNode | null }[] = [];
    for (const loop of [...file.nodesOfType('for_statement'), ...file.nodesOfType('while_statement')].sort((x, y) => x.start - y.start)) {
      const body = childByField(loop, 'body');
      if (body === null) continue;
      const { transfers } = loopResult(file, loop, body, project === null ? signature : `${signature}|${project.lookup.stamp}`);
      if (transfers.length > 0) steps.push({ transfers, trains: () => isTrainingLoop(file, loop), loop });
    }
    for (const step of engineSteps(file)) steps.push({ transfers: step.transfers, trains: () => step.trains, loop: null });
    for (const { transfers, trains, loop } of steps) {
      for (const t of transfers) {
        if ((t.loader.pinned !== 'yes' && t.loader.pinned !== 'option') || t.nonBlocking || copiesReported.has(t.call)) continue;
        // Pinned only when the run's setting says so, token-id batches are not worth a finding (as in case 2).
        if (t.loader.pinned === 'option' && (t.loader.calls.some((c) => yieldsTokenIds(file, c)) || feedsTokenIds(file, loop, [t]))) continue;
        copiesReported.add(t.call);
        const edit = t.wholeBatch ? null : appendArgument(t.call, 'non_blocking=True');
        // A loader of another module: say where, since the verdict depends on that file.
        const where = t.loader.origin === undefined ? '' : ` (loader built in ${t.loader.origin})`;
        const pinnedBy = t.loader.pinned === 'yes' ? 'with `pin_memory=True`' : `pinned by a setting (${pinOptionText(file, t.loader)})`;
        const whenOn = t.loader.pinned === 'yes' ? '' : ' whenever that setting is on';
        findings.push({
          start: t.call.start,
          end: t.call.end,
          message:
            t.copiedIn !== undefined
              ? `This batch comes from a DataLoader ${pinnedBy}${where}, but the helper called here copies it to the GPU ` +
                `without \`non_blocking=True\` (in ${t.copiedIn}), so the host waits for every transfer${whenOn} instead of overlapping it with ` +
                'compute. Pass `non_blocking=True` there.'
              : `This batch comes from a DataLoader ${pinnedBy}${where}, but the copy to the GPU has no \`non_blocking=True\`, ` +
                `so the host waits for every transfer${whenOn} instead of overlapping it with compute. Pass \`non_blocking=True\`.`,
          fix: edit === null ? null : { title: 'Add `non_blocking=True`', edits: [edit] },
        });
      }
      // Unpinned loader: report its construction once, when a training loop moves its batches to CUDA.
      const unpinned = transfers.filter((t) => t.loader.pinned === 'no' && t.cuda === true && t.loader.side !== true);
      if (unpinned.length === 0 || !trains() || feedsTokenIds(file, loop, unpinned)) continue;
      const worthPinning = (c: SyntaxNode): boolean => !yieldsTokenIds(file, c) && !loaderDatasetOnDevice(file, c);
      for (const call of unpinned.flatMap((t) => t.loader.calls).filter(worthPinning)) {
        reportUnpinned(
          call,
          'A training loop copies batches from this DataLoader to CUDA, but it does not pin memory: each copy is staged ' +
            'through pageable host memory and blocks. Pass `pin_memory=True` (and `non_blocking=True` on the `.to()` calls).',
        );
      }
    }
    for (const { loader, where } of handedLoaders(file)) {
      for (const call of loader.calls) {
        reportUnpinned(
          call,
          `The training loop this DataLoader is handed to (in ${where}) copies its batches to CUDA, but it does not pin memory: ` +
            'each copy is staged through pageable host memory and blocks. Pass `pin_memory=True` (and `non_blocking=True` on the ' +
            'copies there).',
        );
      }
    }
    for (const { call, where } of exportedLoaders(file)) {
      reportUnpinned(
        call,
        `A training loop of a module that imports this DataLoader (in ${where}) copies its batches to CUDA, but it does not pin ` +
          'memory: each copy is staged through pageable host memory and blocks. Pass `pin_memory=True` (and `non_blocking=True` ' +
          'on the copies there).',
      );
    }
    return findings;
  },
};

export const rule = blockingTransfer;
