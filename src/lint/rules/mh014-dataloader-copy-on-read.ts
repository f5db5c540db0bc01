// MH014 dataloader-copy-on-read: a Dataset keeps one Python object per sample in a list or dict attribute
// (built from a directory listing, a glob, a file's lines, json, pandas rows) and reaches a DataLoader with
// worker processes. Each worker is a fork of the parent; merely reading an element writes its refcount, so
// the pages holding those objects are copied into every worker as the epoch goes on: RAM grows towards
// (workers + 1) x the dataset's Python objects (pytorch/pytorch#13246). numpy arrays, tensors and Arrow
// columns are single objects with flat buffers and are not copied.
//
// This pattern is everywhere and harmless when the list is small, so the evidence must be in the file: the
// attribute is indexed per sample in `__getitem__` (by its index parameter) or sized by `__len__`, its value
// is built per sample from a listing/file/json/DataFrame, and it is never turned into an array. The workers
// are weighed by what a sample costs (docs/rules/MH014.md): records (json dicts, rows, tuples) with any
// worker, with a worker count set elsewhere or with the loader in another module (a dataset module); flat
// lists (a path, a line, an id per sample: a few MB per worker for typical datasets) from 8 visible workers.
import { childByField, firstNamedChild, firstStartingAtOrAfter, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod, calleeName } from '../analysis/imports';
import { enclosingFunction, positionalArguments, withAliasCalls } from '../analysis/context';
import { datasetFacts, loadersOf, type DatasetClass } from '../analysis/datasets';
import { positionalParameters } from '../analysis/parameters';
import { functionsNamed, returnsOf, valuesOf } from '../analysis/values';
import { callsNamed } from '../analysis/calls';
import { importerLoaders, type ImporterLoader } from '../analysis/importer-loaders';
import type { Rule, RuleFinding } from '../types';

const MAX_DEPTH = 5;
const WRAPPERS = /^(sorted|list|tuple|enumerate|zip|tqdm|tqdm\.tqdm|reversed|filter|map)$/;
const LISTINGS = /^(os\.listdir|os\.scandir|os\.walk|glob\.glob|glob\.iglob|glob\.glob\.glob|natsort\.natsorted)$/;
const LISTING_METHODS = new Set(['glob', 'rglob', 'iterdir', 'listdir']);
const LINE_METHODS = new Set(['readlines', 'splitlines']);
const ROW_METHODS = new Set(['iterrows', 'itertuples', 'to_dict', 'tolist', 'to_list', 'reader', 'DictReader']);
const SERIALIZED = /^(json\.load|json\.loads|ujson\.load|orjson\.loads|pickle\.load|jsonlines\.open|yaml\.safe_load|yaml\.load)$/;
const ARRAY = /^(numpy|torch|pyarrow|h5py)\./;

/**
 * Why a value is a per-sample collection of Python objects, or null when it is not known to be one.
 * `records`: each sample is itself a container of Python objects (a json/pickle document's dicts, DataFrame
 * or CSV rows, `(path, label)` tuples, split lines), several objects and hundreds of bytes per sample; else
 * one flat object per sample (a path, a line, an id), some 50-100 bytes.
 */
type Evidence = { readonly why: string; readonly records: boolean } | null;

const flat = (why: string): Evidence => ({ why, records: false });
const records = (why: string): Evidence => ({ why, records: true });

interface Ctx {
  readonly file: SourceFile;
  readonly cls: DatasetClass;
  depth: number;
}

function strip(n: SyntaxNode): SyntaxNode {
  let v = n;
  while (v.type === 'parenthesized_expression') v = firstNamedChild(v) ?? v;
  return v;
}

/** What an iterable or a collection is built from. */
function evidenceOf(ctx: Ctx, expr: SyntaxNode): Evidence {
  if (ctx.depth > MAX_DEPTH) return null;
  ctx.depth++;
  try {
    return evidenceOfInner(ctx, strip(expr));
  } finally {
    ctx.depth--;
  }
}

function evidenceOfInner(ctx: Ctx, v: SyntaxNode): Evidence {
  const { file } = ctx;
  if (v.type === 'call') {
    const name = calleeName(file, v) ?? '';
    const method = calleeMethod(file, v) ?? '';
    if (LISTINGS.test(name) || name === 'glob' || LISTING_METHODS.has(method)) return flat(`a directory listing (\`${method}\`)`);
    if (SERIALIZED.test(name)) return records(`\`${name}\``);
    if (LINE_METHODS.has(method)) return flat(`a file's lines (\`${method}\`)`);
    if (name === 'open' || name === 'io.open' || name === 'codecs.open') return flat("a file's lines");
    if (method === 'split' && /\.read\s*\(\s*\)\s*\.split$/.test(file.textOf(childByField(v, 'function') ?? v))) return flat("a file's lines");
    if (ROW_METHODS.has(method)) {
      if (method === 'to_dict' && !/records/.test(file.textOf(v))) return null;
      if (method === 'reader' || method === 'DictReader') return records('CSV rows');
      // A column as a list is one value per sample; rows are a tuple or dict each.
      return method === 'tolist' || method === 'to_list' ? flat(`a DataFrame column (\`${method}\`)`) : records(`DataFrame rows (\`${method}\`)`);
    }
    if (/(^|\.)COCO$/.test(name)) return records('COCO annotations (json)');
    // `list(self.coco.anns.keys())`: the keys of a per-sample mapping (one id each); its values are its records.
    if (method === 'keys' || method === 'values' || method === 'items') {
      const fn = childByField(v, 'function');
      const receiver = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
      const e = receiver === null ? null : evidenceOf(ctx, receiver);
      return e === null || method !== 'keys' ? e : flat(`the keys of ${e.why}`);
    }
    if (WRAPPERS.test(name)) {
      const first = positionalArguments(v)[0];
      return first === undefined ? null : evidenceOf(ctx, first);
    }
    // `self.samples = make_dataset(root)`: what a function of this file returns.
    const fn = childByField(v, 'function');
    let defs: readonly SyntaxNode[] = [];
    if (fn?.type === 'identifier') defs = functionsNamed(file, file.textOf(fn));
    else if (fn?.type === 'attribute' && /^self\./.test(file.textOf(fn))) {
      const m = ctx.cls.methods.get(method);
      defs = m === undefined ? [] : [m];
    }
    if (defs.length !== 1) return null;
    for (const ret of returnsOf(defs[0])) {
      const value = firstNamedChild(ret);
      const parts = value === null ? [] : value.type === 'expression_list' || value.type === 'tuple' ? namedChildren(value) : [value];
      for (const p of parts) {
        const e = evidenceOf(ctx, p);
        if (e !== null) return e;
      }
    }
    return null;
  }
  if (v.type === 'list_comprehension' || v.type === 'dictionary_comprehension' || v.type === 'generator_expression') {
    // `[np.load(p) for p in files]`: whole arrays, each a few objects around its own buffer (see isLoadedArray).
    const body = childByField(v, 'body');
    const element = body?.type === 'pair' ? childByField(body, 'value') : body;
    if (element !== null && (isLoadedArray(file, element) || isArrayRecord(file, element))) return null;
    for (const clause of v.children) {
      if (clause.type !== 'for_in_clause') continue;
      const right = childByField(clause, 'right');
      const e = right === null ? null : evidenceOf(ctx, right);
      if (e !== null) return element === null ? e : { why: e.why, records: elementIsRecord(file, element, childByField(clause, 'left'), e) };
    }
    return null;
  }
  // `data_json['data']`: a field of a parsed document is still parsed data; `lines[2:]`: a slice of a collection.
  if (v.type === 'subscript') {
    const sub = childByField(v, 'subscript');
    const value = childByField(v, 'value');
    if ((sub?.type === 'string' || sub?.type === 'slice') && value !== null) return evidenceOf(ctx, value);
    return null;
  }
  if (v.type === 'list' && namedChildren(v).length === 0) return null; // filled elsewhere: see appendsEvidence
  if (v.type === 'identifier' || v.type === 'attribute') {
    const values = valuesOf(file, v);
    if (values !== null) {
      for (const x of values) {
        const e = x.type === 'list' && namedChildren(x).length === 0 && v.type === 'identifier' ? appendsEvidence(ctx, file.textOf(v), enclosingFunction(x)) : evidenceOf(ctx, x);
        if (e !== null) return e;
      }
    }
    // `self.coco.anns`: a field of an object built from such a source (`self.coco = COCO(annotation_file)`).
    if (values === null && v.type === 'attribute') {
      const obj = childByField(v, 'object');
      if (obj !== null && (obj.type === 'attribute' || obj.type === 'identifier')) {
        const inner = valuesOf(file, obj);
        if (inner !== null) for (const x of inner) if (x.type === 'call' && /(^|\.)COCO$/.test(calleeName(file, x) ?? '')) return records('COCO annotations (json)');
      }
    }
    // A file object: `with open(p) as f:` then `[line.strip() for line in f]`.
    if (v.type === 'identifier' && fileObjectNamed(file, v)) return flat("a file's lines");
  }
  return null;
}

/**
 * Whether one element built from a source is a record: a tuple/list/dict/set display (`(path, label)`,
 * `{"path": p, "label": y}`), a split line (`line.split()`), or the source's own item (the loop variable)
 * when the source yields records. Anything else (`os.path.join(root, f)`, `row["path"]`) is one object.
 */
function elementIsRecord(file: SourceFile, element: SyntaxNode, loopVar: SyntaxNode | null, source: NonNullable<Evidence>): boolean {
  const e = strip(element);
  if (e.type === 'tuple' || e.type === 'list' || e.type === 'dictionary' || e.type === 'set') return namedChildren(e).length > 1;
  if (e.type === 'call' && calleeMethod(file, e) === 'split') return true;
  if (loopVar !== null && e.type === 'identifier') {
    // `for item in json_list: samples.append(item)`, `for i, item in enumerate(rows)`: the item itself.
    const names = loopVar.type === 'identifier' ? [loopVar] : namedChildren(loopVar);
    return source.records && names.some((n) => n.type === 'identifier' && file.textOf(n) === file.textOf(e));
  }
  return false;
}

/** `with open(...) as f` binding this identifier in its function. */
function fileObjectNamed(file: SourceFile, ident: SyntaxNode): boolean {
  return withAliasCalls(file, ident).some((expr) => /^(open|io\.open|codecs\.open|gzip\.open)$/.test(calleeName(file, expr) ?? ''));
}

/**
 * `xs = []` then `xs.append(...)` (or `+=`, `extend`) inside a loop over per-sample evidence (a listing,
 * lines, rows) within `scope` (a method): the collection grows by one Python object per sample.
 */
function appendsEvidence(ctx: Ctx, key: string, scope: SyntaxNode | null): Evidence {
  if (scope === null) return null;
  const { file } = ctx;
  for (const method of ['append', 'extend', 'add']) {
    for (const call of callsNamed(file, method)) {
      if (call.start < scope.start || call.end > scope.end) continue;
      const fn = childByField(call, 'function');
      const obj = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
      if (obj === null || file.textOf(obj).replace(/\s+/g, '') !== key) continue;
      const appended = positionalArguments(call)[0];
      if (appended !== undefined && (isLoadedArray(file, appended) || isArrayRecord(file, appended))) continue;
      for (let p = call.parent; p !== null && p !== scope; p = p.parent) {
        if (p.type !== 'for_statement') continue;
        const right = childByField(p, 'right');
        const e = right === null ? null : evidenceOf(ctx, right);
        if (e !== null) return appended === undefined || method === 'extend' ? e : { why: e.why, records: elementIsRecord(file, appended, childByField(p, 'left'), e) };
      }
    }
  }
  return null;
}

/** `self.X` attributes `__getitem__` indexes with its index parameter, or that `__len__` sizes. */
function perSampleAttributes(file: SourceFile, cls: DatasetClass): Set<string> {
  const out = new Set<string>();
  const getitem = cls.methods.get('__getitem__');
  if (getitem === undefined) return out;
  const index = positionalParameters(file, getitem)[1];
  const subscripted = new Set<string>();
  const stack = [getitem];
  while (stack.length > 0) {
    const n = stack.pop()!;
    for (const c of n.children) stack.push(c);
    if (n.type !== 'subscript') continue;
    const value = childByField(n, 'value');
    const sub = childByField(n, 'subscript');
    if (value === null || sub === null || value.type !== 'attribute') continue;
    const key = file.textOf(value).replace(/\s+/g, '');
    if (!/^self\.\w+$/.test(key)) continue;
    subscripted.add(key);
    // `self.files[index % len(self.files)]` is per sample; `self.classes[self.labels[i]]` is not.
    const subText = file.textOf(sub).replace(/\blen\s*\(\s*self\.\w+\s*\)/g, 'n');
    if (index !== undefined && index !== '' && new RegExp(`\\b${index}\\b`).test(subText) && !subText.includes('self.') && !subText.includes('[')) out.add(key);
  }
  const len = cls.methods.get('__len__');
  if (len !== undefined) {
    const m = /\blen\s*\(\s*(self\.\w+)\s*\)/.exec(file.textOf(len));
    if (m !== null && subscripted.has(m[1])) out.add(m[1]);
  }
  return out;
}

/** Assignments of `self.X` (`self.X = ...`) inside the class, in document order. */
function assignmentsIn(file: SourceFile, cls: DatasetClass, key: string): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  // The file's assignments are in document order: scan the class's range only (a scan of the whole
  // file per class and attribute made a long file quadratic).
  const assigns = file.nodesOfType('assignment');
  for (let i = firstStartingAtOrAfter(assigns, cls.node.start); i < assigns.length && assigns[i].start < cls.node.end; i++) {
    const assign = assigns[i];
    if (assign.end > cls.node.end) continue;
    const left = childByField(assign, 'left');
    if (left !== null && left.type === 'attribute' && file.textOf(left).replace(/\s+/g, '') === key) out.push(assign);
  }
  return out;
}

/** A numpy array, tensor or Arrow/HDF5 object: one object with a flat buffer, not one per sample. */
function isArray(file: SourceFile, value: SyntaxNode): boolean {
  const v = strip(value);
  if (v.type === 'attribute') return /\.values$/.test(file.textOf(v));
  if (v.type !== 'call') return false;
  if (ARRAY.test(calleeName(file, v) ?? '')) return true;
  const method = calleeMethod(file, v);
  return method === 'to_numpy' || method === 'numpy';
}

const IMAGE_READS = /^(cv2\.imread|imageio\.imread|imageio\.v2\.imread|imageio\.v3\.imread|skimage\.io\.imread|tifffile\.imread)$/;

/**
 * A whole array or tensor loaded or built per element (`np.load(p)`, `torch.load(p)`, `cv2.imread(p)`,
 * `torch.from_numpy(x)`): its data lives in its own buffer, which refcount writes never touch, so a list
 * of them costs workers only the small headers, not the data (not what this rule is about).
 */
function isLoadedArray(file: SourceFile, value: SyntaxNode): boolean {
  const v = strip(value);
  if (v.type !== 'call') return false;
  const name = calleeName(file, v) ?? '';
  return IMAGE_READS.test(name) || isArray(file, v);
}

const NUMBER_CALLS = /^(int|float|bool|len)$/;

/** A number: a literal, `int(...)`/`float(...)`, or the index of an enumerating loop (`for label, d in enumerate(dirs)`). */
function isNumber(file: SourceFile, value: SyntaxNode): boolean {
  const v = strip(value);
  if (v.type === 'integer' || v.type === 'float' || v.type === 'true' || v.type === 'false') return true;
  if (v.type === 'call') return NUMBER_CALLS.test(calleeName(file, v) ?? '');
  if (v.type !== 'identifier') return false;
  const name = file.textOf(v);
  for (let p = v.parent; p !== null && p.type !== 'function_definition'; p = p.parent) {
    if (p.type !== 'for_statement' && p.type !== 'for_in_clause') continue;
    const left = childByField(p, 'left');
    const right = childByField(p, 'right');
    const first = left === null ? undefined : left.type === 'identifier' ? undefined : namedChildren(left)[0];
    if (first !== undefined && file.textOf(first) === name && right?.type === 'call' && calleeName(file, right) === 'enumerate') return true;
  }
  const values = valuesOf(file, v);
  return values !== null && values.length > 0 && values.every((x) => strip(x).type !== 'identifier' && isNumber(file, x));
}

/**
 * `(np.load(p), label)`: a small tuple of whole arrays and numbers. Like a list of arrays (isLoadedArray),
 * what refcount writes touch is the tuple and the array headers, some 200 bytes per sample (a flat list's
 * cost), while the data sits in the arrays' own buffers; not a record of Python objects. A path or a parsed
 * field beside the array (`(img, path)`) keeps it a record.
 */
function isArrayRecord(file: SourceFile, value: SyntaxNode): boolean {
  const v = strip(value);
  if (v.type !== 'tuple' && v.type !== 'list') return false;
  const parts = namedChildren(v).filter((c) => c.type !== 'comment');
  const isArrayPart = (p: SyntaxNode): boolean => {
    if (isLoadedArray(file, p)) return true;
    if (strip(p).type !== 'identifier') return false;
    const values = valuesOf(file, strip(p));
    return values !== null && values.length > 0 && values.every((x) => isLoadedArray(file, x));
  };
  return parts.some(isArrayPart) && parts.every((p) => isArrayPart(p) || isNumber(file, p));
}

/**
 * Worker counts from which one flat object per sample (a path, a line, an id) is worth a warning. Each
 * worker ends up copying the pages of every object it reads: for a flat list that is some 50-100 bytes per
 * sample, so 2-4 workers over the tens of thousands of paths of a typical dataset cost a few MB, while the
 * setups of pytorch/pytorch#13246 (ImageNet-sized lists, 8-32 workers) cost GBs. Records (dicts, tuples,
 * split lines) are several objects per sample and warrant it with any worker.
 */
const FLAT_MIN_WORKERS = 8;

/** How the dataset reaches worker processes, for the message; null when the rule stays silent for it. */
function workerReach(file: SourceFile, cls: DatasetClass, evidence: NonNullable<Evidence>): string | null {
  const own = loadersOf(file, cls);
  // A dataset module: the loaders the importing modules build over this class decide (`num_workers=0`
  // there reads the list in the main process only). Without the project, or when they show none, guess below.
  const imported = own.length === 0 ? (importerLoaders(file, cls) ?? []) : [];
  if (imported.length > 0) return importerReach(imported, evidence);
  const loaders = own;
  const withWorkers = loaders.filter((l) => l.workers === 'yes').sort((x, y) => y.workersCount - x.workersCount)[0];
  if (withWorkers !== undefined && (evidence.records || withWorkers.workersCount >= FLAT_MIN_WORKERS)) {
    const workers = withWorkers.workersText === null ? '' : ` (\`num_workers\`: \`${withWorkers.workersText}\`)`;
    return `is loaded by a DataLoader with worker processes${workers}`;
  }
  // Flat lists need a visible worker count; records also a count set elsewhere (`num_workers=cfg.workers`)
  // or a loader in another module: a training dataset is loaded with workers nearly always.
  if (!evidence.records || withWorkers !== undefined) return null;
  if (loaders.some((l) => l.workers === 'unknown')) return 'is loaded by a DataLoader whose worker count is set elsewhere (typically > 0)';
  if (loaders.length === 0 && !builtForTrainerWithoutWorkers(file)) return "is defined for DataLoaders built in another module (training loaders run worker processes nearly always)";
  return null;
}

/** `workerReach` for the loaders that importing modules build: the same weighing, their module named. */
function importerReach(loaders: readonly ImporterLoader[], evidence: NonNullable<Evidence>): string | null {
  const withWorkers = loaders.filter((l) => l.workers === 'yes').sort((x, y) => y.workersCount - x.workersCount)[0];
  if (withWorkers !== undefined && (evidence.records || withWorkers.workersCount >= FLAT_MIN_WORKERS)) {
    const workers = withWorkers.workersText === null ? '' : ` (\`num_workers\`: \`${withWorkers.workersText}\`)`;
    return `is loaded by a DataLoader with worker processes in ${withWorkers.module.display}${workers}`;
  }
  if (!evidence.records || withWorkers !== undefined) return null;
  if (loaders.some((l) => l.workers === 'unknown')) return `is loaded by a DataLoader of ${loaders[0].module.display} whose worker count is set elsewhere (typically > 0)`;
  return null;
}

/**
 * A file that hands its datasets to a Hugging Face `Trainer` (`Trainer(..., train_dataset=...)`): its
 * DataLoaders run in the main process unless `dataloader_num_workers` is set.
 */
function builtForTrainerWithoutWorkers(file: SourceFile): boolean {
  return /\b(Seq2Seq)?Trainer\s*\(/.test(file.text) && !/dataloader_num_workers\s*=\s*[1-9]/.test(file.text);
}

export const dataloaderCopyOnRead: Rule = {
  code: 'MH014',
  name: 'dataloader-copy-on-read',
  severity: 'info',
  summary: 'A Dataset holding one Python object per sample in a list/dict, used with `num_workers > 0`: every worker ends up with its own copy (copy-on-read).',
  check(file) {
    const findings: RuleFinding[] = [];
    if (!file.text.includes('__getitem__')) return findings;
    for (const cls of datasetFacts(file).classes.values()) {
      if (loadersOf(file, cls).length > 0 && loadersOf(file, cls).every((l) => l.workers === 'no')) continue;
      for (const key of perSampleAttributes(file, cls)) {
        const assigns = assignmentsIn(file, cls, key);
        if (assigns.length === 0 || assigns.some((a) => isArray(file, childByField(a, 'right') ?? a))) continue;
        for (const assign of assigns) {
          const right = childByField(assign, 'right');
          if (right === null) continue;
          const ctx: Ctx = { file, cls, depth: 0 };
          const emptyList = strip(right).type === 'list' && namedChildren(strip(right)).length === 0;
          const evidence = emptyList ? appendsEvidence(ctx, key, enclosingFunction(assign)) : evidenceOf(ctx, right);
          if (evidence === null) continue;
          const reach = workerReach(file, cls, evidence);
          if (reach === null) continue;
          const what = evidence.records ? 'one Python record (a dict, list or tuple of objects) per sample' : 'one Python object per sample';
          findings.push({
            start: assign.start,
            end: assign.end,
            message:
              `\`${key}\` holds ${what} (built from ${evidence.why}, indexed per item in \`__getitem__\`), and ` +
              `dataset \`${cls.name}\` ${reach}. Reading an element writes its ` +
              'refcount, so every forked worker gradually copies the pages holding these objects: host RAM grows to ' +
              '(workers + 1) x their size over an epoch (pytorch/pytorch#13246). Store it as a numpy array (e.g. ' +
              '`np.array(paths)` of fixed-width strings, integer labels in an int array), tensors, or an Arrow/pandas column.',
          });
          break;
        }
      }
    }
    return findings;
  },
};

export const rule = dataloaderCopyOnRead;
