// Map-style datasets and the DataLoaders they reach (MH013, MH014): which classes of the file are torch
// Datasets, their `__getitem__` / `__init__`, which DataLoader constructions take an instance of them, and
// whether such a loader runs worker processes. Everything is resolved within the file; anything unseen
// (a dataset built in another module, `num_workers=cfg.workers`) stays unknown, and callers stay silent.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeName, importBindings, qualifiedName } from './imports';
import { callsMatching, callsNamed } from './calls';
import { classMethods, enclosingFunction, keywordArgument, positionalArguments } from './context';
import { valuesOf } from './values';
import { VersionMemo } from '../session';
import { isDataLoader } from '../rules/mh009-blocking-transfer';

/** torch's own dataset bases (and the re-exports users import them from). */
const TORCH_DATASET = /^torch\.utils\.data(\.dataset)?\.(Dataset|IterableDataset|TensorDataset|ConcatDataset)$/;
/** Wrappers that hand their first argument's items through (`Subset(ds, idx)`). */
const PASS_THROUGH = /^torch\.utils\.data(\.dataset)?\.Subset$/;
/** Splits whose parts hand the dataset's items through. */
const SPLITS = /^torch\.utils\.data(\.dataset)?\.random_split$/;
const MAX_DEPTH = 6;

export interface DatasetClass {
  readonly node: SyntaxNode;
  readonly name: string;
  /** Methods defined directly in the class body, by name. */
  readonly methods: ReadonlyMap<string, SyntaxNode>;
}

export interface LoaderUse {
  readonly loader: SyntaxNode;
  /** `yes`: some configuration this file shows runs worker processes; `no`: none does; `unknown`. */
  readonly workers: 'yes' | 'no' | 'unknown';
  /** The expression that says so (`num_workers=4`, or the argparse default), for messages. */
  readonly workersText: string | null;
  /**
   * The largest worker count that configuration shows when `workers` is `yes` (Infinity for `cpu_count()`,
   * one worker per core), else 0. MH014 weighs the copies by it.
   */
  readonly workersCount: number;
}

interface DatasetFacts {
  readonly classes: ReadonlyMap<string, DatasetClass>;
  /** DataLoader constructions by the dataset class their dataset argument instantiates. */
  readonly loaders: ReadonlyMap<string, readonly LoaderUse[]>;
}

function methodsOf(file: SourceFile, cls: SyntaxNode): Map<string, SyntaxNode> {
  const methods = new Map<string, SyntaxNode>();
  for (const def of classMethods(cls)) {
    const name = childByField(def, 'name');
    if (name !== null) methods.set(file.textOf(name), def);
  }
  return methods;
}

function baseNodes(cls: SyntaxNode): SyntaxNode[] {
  const sup = childByField(cls, 'superclasses');
  return sup === null ? [] : namedChildren(sup).filter((b) => b.type === 'identifier' || b.type === 'attribute');
}

const factsMemo = new VersionMemo<DatasetFacts>('datasets.facts');

export function datasetFacts(file: SourceFile): DatasetFacts {
  return factsMemo.get(file, computeFacts);
}

function computeFacts(file: SourceFile): DatasetFacts {
  // Every class of the file by name (the last definition wins, as at run time).
  const all = new Map<string, SyntaxNode>();
  for (const cls of file.nodesOfType('class_definition')) {
    const name = childByField(cls, 'name');
    if (name !== null) all.set(file.textOf(name), cls);
  }
  const verdicts = new Map<string, boolean>();
  const isDataset = (name: string, depth: number): boolean => {
    const known = verdicts.get(name);
    if (known !== undefined) return known;
    const cls = all.get(name);
    if (cls === undefined || depth > MAX_DEPTH) return false;
    verdicts.set(name, false); // cycles (`class A(B)`, `class B(A)`) are not datasets
    const yes = baseNodes(cls).some((b) => {
      const q = qualifiedName(file, b);
      if (q !== null && TORCH_DATASET.test(q)) return true;
      return b.type === 'identifier' && isDataset(file.textOf(b), depth + 1);
    });
    verdicts.set(name, yes);
    return yes;
  };
  const loaders = new Map<string, LoaderUse[]>();
  const classes = new Map<string, DatasetClass>();
  if (all.size === 0) return { classes, loaders };
  const aliases = new Set<string>();
  for (const b of importBindings(file).values()) if (b.qualified.endsWith('Loader')) aliases.add(b.local);
  for (const call of callsMatching(file, (m) => m.endsWith('Loader') || aliases.has(m))) {
    if (!isDataLoader(file, call)) continue;
    const arg = keywordArgument(file, call, 'dataset') ?? positionalArguments(call)[0] ?? null;
    if (arg === null) continue;
    const use: LoaderUse = { loader: call, ...workersOf(file, call) };
    for (const name of instantiatedClasses(file, arg, all, 0)) {
      const list = loaders.get(name);
      if (list === undefined) loaders.set(name, [use]);
      else list.push(use);
    }
  }
  for (const [name, cls] of all) {
    const methods = methodsOf(file, cls);
    // A class is a dataset when it derives from one, or when it defines `__getitem__` and a DataLoader
    // of this file takes an instance of it (duck-typed datasets work the same way in the loader).
    if (isDataset(name, 0) || (methods.has('__getitem__') && loaders.has(name))) classes.set(name, { node: cls, name, methods });
  }
  return { classes, loaders };
}

/** Names of the file's classes whose instances an expression may evaluate to (through names and Subset). */
function instantiatedClasses(file: SourceFile, expr: SyntaxNode, all: ReadonlyMap<string, SyntaxNode>, depth: number): string[] {
  if (depth > MAX_DEPTH) return [];
  if (expr.type === 'call') {
    const fn = childByField(expr, 'function');
    if (fn !== null && fn.type === 'identifier' && all.has(file.textOf(fn))) return [file.textOf(fn)];
    const name = calleeName(file, expr);
    const first = positionalArguments(expr)[0];
    if (name !== null && PASS_THROUGH.test(name) && first !== undefined) return instantiatedClasses(file, first, all, depth + 1);
    return [];
  }
  if (expr.type !== 'identifier' && expr.type !== 'attribute') return [];
  const values = valuesOf(file, expr);
  if (values === null) return expr.type === 'identifier' ? splitFrom(file, expr, all, depth) : [];
  return values.flatMap((v) => instantiatedClasses(file, v, all, depth + 1));
}

/** `train_set, val_set = random_split(dataset, [...])` in the name's function: the classes of `dataset`. */
function splitFrom(file: SourceFile, ident: SyntaxNode, all: ReadonlyMap<string, SyntaxNode>, depth: number): string[] {
  const source = splitSources(file).get(enclosingFunction(ident))?.get(file.textOf(ident));
  return source === undefined ? [] : instantiatedClasses(file, source, all, depth + 1);
}

type SplitSources = Map<SyntaxNode | null, Map<string, SyntaxNode>>;

const splitsMemo = new VersionMemo<SplitSources>('datasets.splits');

/**
 * Per function (null: module level), each name bound by a `a, b = random_split(x, ...)` to `x`, the first
 * such statement in the file winning. Built once per version: looking the statements up per DataLoader
 * rescanned every assignment of the file for each one (quadratic on large files).
 */
function splitSources(file: SourceFile): SplitSources {
  return splitsMemo.get(file, () => {
    const out: SplitSources = new Map();
    for (const assign of file.nodesOfType('assignment')) {
      const left = childByField(assign, 'left');
      const right = childByField(assign, 'right');
      if (left === null || right === null || right.type !== 'call') continue;
      if (left.type !== 'pattern_list' && left.type !== 'tuple_pattern') continue;
      const first = positionalArguments(right)[0];
      if (first === undefined || !SPLITS.test(calleeName(file, right) ?? '')) continue;
      const scope = enclosingFunction(assign);
      let names = out.get(scope);
      if (names === undefined) out.set(scope, (names = new Map<string, SyntaxNode>()));
      for (const p of namedChildren(left)) if (p.type === 'identifier' && !names.has(file.textOf(p))) names.set(file.textOf(p), first);
    }
    return out;
  });
}

/** DataLoader's `num_workers` is its sixth positional parameter. */
const NUM_WORKERS_POSITION = 5;

export function workersOf(file: SourceFile, call: SyntaxNode): { workers: LoaderUse['workers']; workersText: string | null; workersCount: number } {
  const args = childByField(call, 'arguments');
  const splat = args !== null && args.children.some((c) => c.type === 'dictionary_splat' || c.type === 'list_splat');
  const value = keywordArgument(file, call, 'num_workers') ?? positionalArguments(call)[NUM_WORKERS_POSITION] ?? null;
  if (value === null) return { workers: splat ? 'unknown' : 'no', workersText: null, workersCount: 0 };
  const verdict = positiveCount(file, value, 0);
  return { workers: verdict.value, workersText: verdict.evidence, workersCount: verdict.value === 'yes' ? verdict.count : 0 };
}

interface Verdict {
  readonly value: LoaderUse['workers'];
  readonly evidence: string | null;
  /** The count when `yes` (Infinity for `cpu_count()`), else 0. */
  readonly count: number;
}

const UNKNOWN: Verdict = { value: 'unknown', evidence: null, count: 0 };
const NONE: Verdict = { value: 'no', evidence: null, count: 0 };

/** Whether an integer expression is > 0 in some configuration this file shows (literals, names, argparse defaults, cpu_count). */
function positiveCount(file: SourceFile, expr: SyntaxNode, depth: number): Verdict {
  if (depth > MAX_DEPTH) return UNKNOWN;
  const text = file.textOf(expr);
  if (expr.type === 'integer') return Number(text) > 0 ? { value: 'yes', evidence: text, count: Number(text) } : NONE;
  if (expr.type === 'call' && /\bcpu_count\s*\(/.test(text)) return { value: 'yes', evidence: text, count: Infinity };
  if (expr.type === 'parenthesized_expression') {
    const inner = namedChildren(expr)[0];
    return inner === undefined ? UNKNOWN : positiveCount(file, inner, depth + 1);
  }
  if (expr.type === 'conditional_expression') {
    const parts = namedChildren(expr);
    if (parts.length !== 3) return UNKNOWN;
    return anyPositive([positiveCount(file, parts[0], depth + 1), positiveCount(file, parts[2], depth + 1)]);
  }
  if (expr.type !== 'identifier' && expr.type !== 'attribute') return UNKNOWN;
  const values = valuesOf(file, expr);
  if (values !== null && values.length > 0) {
    const verdict = anyPositive(values.map((v) => positiveCount(file, v, depth + 1)));
    if (verdict.value !== 'yes' || verdict.evidence === null) return verdict;
    return { value: 'yes', evidence: `${text} = ${verdict.evidence}`, count: verdict.count };
  }
  if (expr.type === 'attribute') return argparseDefault(file, expr);
  return UNKNOWN;
}

/** The largest positive verdict (its count), else `no` when every one is `no`, else unknown. */
function anyPositive(verdicts: readonly Verdict[]): Verdict {
  let yes: Verdict | undefined;
  for (const v of verdicts) if (v.value === 'yes' && (yes === undefined || v.count > yes.count)) yes = v;
  if (yes !== undefined) return yes;
  if (verdicts.length > 0 && verdicts.every((v) => v.value === 'no')) return NONE;
  return UNKNOWN;
}

/** `args.workers` with `parser.add_argument("--workers", default=4)` (or `-j`, `--workers`) in the file. */
function argparseDefault(file: SourceFile, attr: SyntaxNode): Verdict {
  const name = childByField(attr, 'attribute');
  const obj = childByField(attr, 'object');
  if (name === null || obj === null || !isParsedArguments(file, obj)) return UNKNOWN;
  const attrName = file.textOf(name);
  for (const call of callsNamed(file, 'add_argument')) {
    const flags = positionalArguments(call)
      .filter((a) => a.type === 'string')
      .map((a) => file.textOf(a).replace(/^['"]+|['"]+$/g, ''));
    const dest = keywordArgument(file, call, 'dest');
    const names = new Set(flags.filter((f) => f.startsWith('--')).map((f) => f.slice(2).replace(/-/g, '_')));
    if (dest !== null) names.add(file.textOf(dest).replace(/^['"]+|['"]+$/g, ''));
    if (!names.has(attrName)) continue;
    const dflt = keywordArgument(file, call, 'default');
    if (dflt === null || dflt.type !== 'integer') return UNKNOWN;
    const n = Number(file.textOf(dflt));
    return n > 0 ? { value: 'yes', evidence: `${file.textOf(attr)} (default ${file.textOf(dflt)})`, count: n } : NONE;
  }
  return UNKNOWN;
}

/** Names conventionally holding parsed arguments, trusted when the file does not show where they come from. */
const ARGS_NAMES = /^(args|opt|opts)$/;

/** `args` from `parser.parse_args()` (or `parse_known_args()[0]`), followed through names and parameters. */
function isParsedArguments(file: SourceFile, obj: SyntaxNode): boolean {
  if (obj.type !== 'identifier') return false;
  const values = valuesOf(file, obj);
  if (values === null) return ARGS_NAMES.test(file.textOf(obj));
  return values.some((v) => /\.parse_(known_)?args\s*\(/.test(file.textOf(v)) || (v.type === 'identifier' && ARGS_NAMES.test(file.textOf(v))));
}

/** The DataLoaders of this file that take an instance of `cls` (directly, through a name, or a Subset). */
export function loadersOf(file: SourceFile, cls: DatasetClass): readonly LoaderUse[] {
  return datasetFacts(file).loaders.get(cls.name) ?? [];
}

/** Arguments the file's constructions `Cls(...)` pass for `__init__`'s parameter `param` (and its default). */
export function constructorArguments(file: SourceFile, cls: DatasetClass, param: string): SyntaxNode[] {
  const init = cls.methods.get('__init__');
  if (init === undefined) return [];
  const params = childByField(init, 'parameters');
  const names: string[] = [];
  let fallback: SyntaxNode | null = null;
  for (const p of params?.children ?? []) {
    if (!p.named || p.type === 'comment') continue;
    const nameNode = p.type === 'identifier' ? p : childByField(p, 'name') ?? p.children.find((c) => c.type === 'identifier') ?? null;
    const name = nameNode === null ? '' : file.textOf(nameNode);
    names.push(name);
    if (name === param && (p.type === 'default_parameter' || p.type === 'typed_default_parameter')) fallback = childByField(p, 'value');
  }
  const index = names.indexOf(param) - 1; // `self` is not passed
  if (index < 0) return [];
  const out: SyntaxNode[] = [];
  for (const call of callsNamed(file, cls.name)) {
    const fn = childByField(call, 'function');
    if (fn === null || fn.type !== 'identifier') continue;
    const arg = keywordArgument(file, call, param) ?? positionalArguments(call)[index] ?? null;
    if (arg !== null) out.push(arg);
    else if (fallback !== null) out.push(fallback);
  }
  return out;
}
