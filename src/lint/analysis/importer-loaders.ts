// The DataLoaders other modules of the project build over a dataset class of this file: a dataset module
// (`datasets.py`) whose loaders are built by the training script. Within the file the worker count is
// unknown (MH014 guesses "workers, nearly always" for records); with the project, the importers' own
// `DataLoader(CaptionDataset(...), num_workers=workers)` say how many workers actually read the dataset.
import { resolveImport } from '../project/resolve';
import type { ProjectModule } from '../project/types';
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { callsMatching } from './calls';
import { keywordArgument, positionalArguments } from './context';
import { workersOf, type DatasetClass, type LoaderUse } from './datasets';
import { valuesOf } from './values';
import { isDataLoader } from '../rules/mh009-blocking-transfer';

export interface ImporterLoader extends LoaderUse {
  readonly module: ProjectModule;
}

/**
 * The DataLoaders of importing modules whose dataset argument is an instance of `cls` (built there by a
 * call that resolves to this very class, directly or through a name), or null without the project.
 */
export function importerLoaders(file: SourceFile, cls: DatasetClass): ImporterLoader[] | null {
  const ctx = file.session.project;
  if (ctx === null) return null;
  const out: ImporterLoader[] = [];
  for (const module of ctx.lookup.importersOf(ctx.path, cls.name)) {
    const other = module.file;
    for (const call of callsMatching(other, (m) => m.endsWith('Loader'))) {
      if (!isDataLoader(other, call)) continue;
      const arg = keywordArgument(other, call, 'dataset') ?? positionalArguments(call)[0] ?? null;
      if (arg === null || !instanceOf(other, arg, ctx.path, cls.name)) continue;
      out.push({ module, loader: call, ...workersOf(other, call) });
    }
  }
  return out;
}

/** `expr` of `other` evaluates to an instance of class `name` of the module at `path`. */
function instanceOf(other: SourceFile, expr: SyntaxNode, path: string, name: string): boolean {
  const values = expr.type === 'identifier' || expr.type === 'attribute' ? (valuesOf(other, expr) ?? []) : [expr];
  return values.some((v) => {
    const fn = v.type === 'call' ? childByField(v, 'function') : null;
    if (fn === null || (fn.type !== 'identifier' && fn.type !== 'attribute')) return false;
    const resolved = resolveImport(other, other.textOf(fn).replace(/\s+/g, ''));
    if (resolved === null || resolved.kind !== 'class' || resolved.node === null || resolved.module.path !== path) return false;
    return resolved.module.file.textOf(childByField(resolved.node, 'name') ?? resolved.node) === name;
  });
}
